import { z } from "@hono/zod-openapi";
import { Pagination as PaginationSchema } from "../crm/body";
import { CATALOGUE } from "./catalogue";
import { DEFAULT_OVERLAP_SECONDS, EVENT_RETENTION_DAYS, MAX_OVERLAP_SECONDS, RECOVER_BATCH, retentionStart } from "./limits";
import { WebhookFiltersSchema } from "./filters";

const EventName = z.enum(CATALOGUE).openapi({ example: "contact.created" });
const Events = z
  .array(EventName)
  .min(1)
  .max(CATALOGUE.length)
  .refine((e) => new Set(e).size === e.length, { message: "Each event once", params: { code: "duplicate_event" } });
const Url = z.string().max(2048).openapi({ example: "https://hooks.example.com/brokerage", description: "HTTPS to a public address" });
const Secret = z.string().min(16).max(256).openapi({ description: "Signing secret; generated when left out. Shown only in this answer." });
const Description = z.string().max(500);

/** POST /v1/webhooks (spec: Webhooks): url, events, secret, enabled, description, optional filters. */
export const CreateWebhook = z
  .object({
    url: Url,
    events: Events,
    secret: Secret.optional(),
    enabled: z.boolean().default(true),
    description: Description.default(""),
    filters: WebhookFiltersSchema.default({}),
  })
  .strict()
  .openapi("CreateWebhook");
export type CreateWebhook = z.infer<typeof CreateWebhook>;

/** PATCH /v1/webhooks/{id}: any field; `rotateSecret: true` (or a new `secret`) issues a new signing secret. */
export const UpdateWebhook = z
  .object({
    url: Url.optional(),
    events: Events.optional(),
    filters: WebhookFiltersSchema.optional(),
    enabled: z.boolean().optional(),
    description: Description.optional(),
    secret: Secret.optional(),
    rotateSecret: z.literal(true).optional().openapi({
      description:
        "Generate a new secret; the old one stops signing at once (POST /v1/webhooks/{id}/rotate-secret keeps it signing for an overlap)",
    }),
  })
  .strict()
  .refine((u) => Object.keys(u).length > 0, { message: "Nothing to update", params: { code: "empty_update" } })
  .refine((u) => !(u.secret !== undefined && u.rotateSecret), {
    message: "Give a secret or rotateSecret, not both",
    path: ["rotateSecret"],
    params: { code: "conflicting_fields" },
  })
  .openapi("UpdateWebhook");
export type UpdateWebhook = z.infer<typeof UpdateWebhook>;

export const Webhook = z
  .object({
    id: z.uuid(),
    url: z.string(),
    events: z.array(z.string()),
    filters: WebhookFiltersSchema,
    enabled: z.boolean(),
    description: z.string(),
    disabledReason: z.string().nullable().openapi({
      description: "Set when the service turned the subscription off: the receiver answered 410, or every delivery failed for 5 days",
    }),
    disabledAt: z
      .string()
      .nullable()
      .openapi({ description: "When the service turned it off; null when it is on, or when you turned it off" }),
    failingSince: z.string().nullable().openapi({
      description:
        "When the current run of failed attempts began; null once one succeeds. Five days of it and the service turns the endpoint off",
    }),
    previousSecretExpiresAt: z.string().nullable().openapi({
      description:
        "After a rotation with an overlap: when the replaced secret stops (or stopped) signing beside the current one. null when the last change of secret switched at once",
    }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Webhook");
export type Webhook = z.infer<typeof Webhook>;

export const WebhookWithSecret = Webhook.extend({
  secret: z.string().optional().openapi({
    description:
      "Shown once; store it now. Absent from an idempotent replay of this answer (Idempotent-Replayed: true): secrets are not kept.",
  }),
}).openapi("WebhookWithSecret");
export const WebhookList = z.object({ success: z.literal(true), data: z.array(Webhook), pagination: PaginationSchema });

export const DeliveryAttempt = z
  .object({
    attempt: z.int(),
    statusCode: z.int().nullable(),
    durationMs: z.int(),
    error: z.string().nullable(),
    nextAttemptAt: z.string().nullable(),
    attemptedAt: z.string(),
  })
  .openapi("WebhookDeliveryAttempt");

export const Delivery = z
  .object({
    id: z.uuid(),
    subscriptionId: z.uuid(),
    eventId: z.string(),
    event: z.string(),
    status: z.enum(["pending", "retrying", "delivered", "failed", "dead"]),
    attemptCount: z.int(),
    lastStatusCode: z.int().nullable(),
    lastError: z.string().nullable(),
    nextAttemptAt: z.string().nullable(),
    deliveredAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    attempts: z.array(DeliveryAttempt).openapi({ description: "The 25 most recent attempts, oldest first; attemptCount counts them all" }),
  })
  .openapi("WebhookDelivery");
export type Delivery = z.infer<typeof Delivery>;
export const DeliveryList = z.object({ success: z.literal(true), data: z.array(Delivery), pagination: PaginationSchema });

const pathId = (name: string) =>
  z.uuid({ message: `${name} must be a UUID` }).openapi({ param: { name, in: "path" }, example: "6f1c2f34-3a39-4c55-9a43-2b8f1e8f9d0e" });
export const WebhookIdParam = z.object({ id: pathId("id") });
export const DeliveryParams = z.object({ id: pathId("id"), deliveryId: pathId("deliveryId") });
export const EventParams = z.object({
  id: pathId("id"),
  eventId: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "eventId", in: "path" } }),
});
export const DeliveryListQuery = z.object({
  status: Delivery.shape.status.optional().openapi({ param: { name: "status", in: "query" } }),
});

/** POST /v1/webhooks/{id}/rotate-secret: how long the replaced secret keeps signing beside the new one. */
export const RotateSecret = z
  .object({
    overlapSeconds: z.int().min(0).max(MAX_OVERLAP_SECONDS).default(DEFAULT_OVERLAP_SECONDS).openapi({
      description: "Seconds the replaced secret keeps signing (0: switch at once). Default 86400 (24 h), at most 604800 (7 days)",
      example: 86_400,
    }),
  })
  .strict()
  .openapi("RotateWebhookSecret");
export type RotateSecret = z.input<typeof RotateSecret>;

/** POST /v1/webhooks/{id}/recover. */
export const RecoverWebhook = z
  .object({
    since: z.iso
      .datetime({ offset: true, message: "Must be an ISO 8601 timestamp" })
      .transform((v) => new Date(v).toISOString())
      .refine((v) => v <= new Date().toISOString(), { message: "since is in the future", params: { code: "in_future" } })
      .refine((v) => v >= retentionStart(), {
        message: `since is more than ${EVENT_RETENTION_DAYS} days ago: older events are out of reach`,
        params: { code: "beyond_retention" },
      })
      .openapi({
        type: "string",
        format: "date-time",
        description: `Re-send what failed from this moment on: within the last ${EVENT_RETENTION_DAYS} days, not in the future`,
        example: "2026-11-20T00:00:00Z",
      }),
  })
  .strict()
  .openapi("RecoverWebhook");

export const Recovery = z
  .object({
    since: z.string(),
    queued: z.int().openapi({ description: "Failed deliveries queued to be sent once more" }),
    hasMore: z.boolean().openapi({
      description: `More than ${RECOVER_BATCH} were due: call again with the same since for the rest (those queued now are skipped)`,
    }),
  })
  .openapi("WebhookRecovery");

/** An event of the log as its deliveries carry it (webhooks/payload.ts). */
export const EventPayload = z
  .object({
    id: z.string(),
    event: z.string().openapi({ description: "An event name of the catalogue", example: "contact.created" }),
    apiVersion: z.string(),
    createdAt: z.string(),
    data: z.object({ object: z.unknown(), previousAttributes: z.unknown(), changes: z.unknown() }).catchall(z.unknown()).openapi({
      description:
        'The resource, its previous attributes and the changed names; some events add one more key (priceChange, signer, documentSha256, tags, task, document, stageChange, signal, appointment, reason, step: README "Events (the catalogue)")',
    }),
    organization: z.object({ id: z.string(), name: z.string() }),
    user: z.object({ id: z.string(), name: z.string().nullable(), email: z.string() }).nullable(),
  })
  .openapi("WebhookEvent");
export const EventList = z.object({ success: z.literal(true), data: z.array(EventPayload), pagination: PaginationSchema });

export const EventListQuery = {
  type: EventName.optional().openapi({ param: { name: "type", in: "query" }, description: "One event name of the catalogue" }),
  deliverySuccess: z
    .enum(["true", "false"])
    .optional()
    .openapi({
      param: { name: "deliverySuccess", in: "query" },
      description:
        "false: events with at least one delivery that has not succeeded (retrying, failed or dead); true: events every delivery of which succeeded (at least one)",
    }),
};
