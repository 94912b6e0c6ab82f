import { z } from "@hono/zod-openapi";
import { Pagination } from "../crm/body";
import { listQuery } from "../crm/list-query";
import { oneLineText } from "../lib/validation";

/** Smart lists an organization keeps at most: each is re-evaluated against every contact write. */
export const MAX_SMART_LISTS = 100;

/** Parameters of the contact list that page or shape an answer, not which contacts match: not part of a saved query. */
export const NOT_SAVED = ["cursor", "limit", "include", "fields"] as const;

/**
 * A saved query: GET /v1/contacts's parameters by name, as strings (numbers and booleans are taken as their text).
 * Each value is checked by the contacts list's parser (service.ts `parseSavedQuery`), not here: a check of the body
 * that failed on one value (too long, an object) answered alone and hid every other problem of the query.
 */
const SavedQuery = z
  .record(z.string().max(100), z.unknown())
  .refine((q) => Object.keys(q).length <= 50, { message: "At most 50 parameters", params: { code: "too_big" } })
  .openapi({
    type: "object",
    additionalProperties: { type: ["string", "number", "boolean"] },
    example: { lastContactedAt: "never", assignedTo: "none", "createdAt[gte]": "-P7D" },
    description:
      "The parameters of `GET /v1/contacts` by name (filters, `q`, `customFields.<key>…`, `sort`), each checked as that list checks it (422 listing every problem, under `query.<name>`). Date bounds may be relative (`-P30D`): read at the time of each request. `cursor`, `limit`, `include` and `fields` are not saved.",
  });

export const SmartListCreate = z.strictObject({ name: oneLineText(100), query: SavedQuery }).openapi("SmartListCreate");
export type SmartListCreate = z.infer<typeof SmartListCreate>;
export const SmartListUpdate = z
  .strictObject({ name: oneLineText(100).optional(), query: SavedQuery.optional() })
  .openapi("SmartListUpdate");
export type SmartListUpdate = z.infer<typeof SmartListUpdate>;

export const SmartList = z
  .object({
    id: z.string(),
    name: z.string(),
    query: z.record(z.string(), z.string()),
    count: z.int().openapi({ description: "How many contacts match now (as `pagination.total` of its contacts list)" }),
    countExact: z
      .boolean()
      .openapi({ description: "false only for a broad `q` whose count is a lower bound (as `pagination.totalExact`)" }),
    createdBy: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("SmartList");
export type SmartList = z.infer<typeof SmartList>;

export const SmartListPage = z.object({ success: z.literal(true), data: z.array(SmartList), pagination: Pagination });
export const SmartListListQuery = listQuery({});
export type SmartListListQuery = z.infer<typeof SmartListListQuery>;

export const SmartListIdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "id", in: "path" } }),
});
