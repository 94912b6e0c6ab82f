import { z } from "@hono/zod-openapi";
import type { StoredWebhookFilters } from "../db/webhooks";
import { resourceOf, CATALOGUE_RESOURCES } from "./catalogue";

/**
 * Subscription filters (spec: Delivery 6): `{"contact.leadScore": {"gte": 80}, "contact.source": {"in": ["WEBSITE"]}}`.
 * A path starts with the resource and continues into the event's `data.object`; every condition must hold.
 * Conditions on another resource do not apply to an event (a `contact.*` filter leaves `deal.*` events alone).
 */
const Scalar = z.union([z.string().max(500), z.number(), z.boolean(), z.null()]);
type Scalar = z.infer<typeof Scalar>;

const Condition = z
  .object({
    eq: Scalar.optional(),
    ne: Scalar.optional(),
    gt: z.union([z.number(), z.string().max(500)]).optional(),
    gte: z.union([z.number(), z.string().max(500)]).optional(),
    lt: z.union([z.number(), z.string().max(500)]).optional(),
    lte: z.union([z.number(), z.string().max(500)]).optional(),
    in: z.array(Scalar).min(1).max(100).optional(),
    nin: z.array(Scalar).min(1).max(100).optional(),
  })
  .strict()
  .refine((c) => Object.keys(c).length > 0, { message: "A condition needs at least one operator", params: { code: "empty_condition" } });

const PATH = new RegExp(`^(${CATALOGUE_RESOURCES.join("|")})(\\.[A-Za-z0-9_]+)+$`);

export const WebhookFiltersSchema = z
  .record(
    z
      .string()
      .max(200)
      .regex(PATH, `A filter path is a resource (${CATALOGUE_RESOURCES.join(", ")}) and a dotted field, e.g. contact.leadScore`),
    Condition,
  )
  .refine((f) => Object.keys(f).length <= 20, { message: "At most 20 filter paths", params: { code: "too_big" } })
  .openapi("WebhookFilters", {
    description: "Conditions on the event's object, keyed by dotted path; operators eq, ne, gt, gte, lt, lte, in, nin. All must hold.",
    example: { "contact.leadScore": { gte: 80 }, "contact.source": { in: ["WEBSITE", "REFERRAL"] } },
  }) satisfies z.ZodType<StoredWebhookFilters>;
export type WebhookFilters = z.infer<typeof WebhookFiltersSchema>;
type Condition = z.infer<typeof Condition>;

function valueAt(object: unknown, path: string[]): unknown {
  let at = object;
  for (const key of path) {
    if (at === null || typeof at !== "object") return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/** Ordering only between values of one type (numbers, or strings such as ISO dates); anything else never matches. */
function compare(value: unknown, bound: number | string): number | null {
  if (typeof value !== typeof bound || (typeof value !== "number" && typeof value !== "string")) return null;
  return value < bound ? -1 : value > bound ? 1 : 0;
}

/** An array field (e.g. contact.tags) matches eq/in when any element does. */
const anyOf = (value: unknown, wanted: Scalar[]) =>
  Array.isArray(value) ? value.some((v) => wanted.includes(v as Scalar)) : wanted.includes(value as Scalar);

function holds(value: unknown, c: Condition): boolean {
  const ordered = (bound: number | string | undefined, ok: (n: number) => boolean) => {
    if (bound === undefined) return true;
    const n = compare(value, bound);
    return n !== null && ok(n);
  };
  if (value === undefined)
    return (
      c.eq === undefined && c.in === undefined && c.gt === undefined && c.gte === undefined && c.lt === undefined && c.lte === undefined
    );
  return (
    (c.eq === undefined || anyOf(value, [c.eq])) &&
    (c.ne === undefined || !anyOf(value, [c.ne])) &&
    (c.in === undefined || anyOf(value, c.in)) &&
    (c.nin === undefined || !anyOf(value, c.nin)) &&
    ordered(c.gt, (n) => n > 0) &&
    ordered(c.gte, (n) => n >= 0) &&
    ordered(c.lt, (n) => n < 0) &&
    ordered(c.lte, (n) => n <= 0)
  );
}

/** Whether an event of type `event` whose `data.object` is `object` passes the subscription's filters. */
export function matchesFilters(filters: WebhookFilters, event: string, object: unknown): boolean {
  const resource = resourceOf(event);
  for (const [path, condition] of Object.entries(filters)) {
    const [head, ...rest] = path.split(".");
    if (head !== resource) continue;
    if (!holds(valueAt(object, rest), condition)) return false;
  }
  return true;
}
