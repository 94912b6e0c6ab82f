import { z } from "@hono/zod-openapi";
import { Pagination as PaginationSchema } from "../crm/envelope";
import { WEBHOOK_EVENTS } from "./events";
import { WebhookFiltersSchema } from "./filters";

const EventName = z.enum(WEBHOOK_EVENTS).openapi({ example: "contact.created" });
const Events = z
  .array(EventName)
  .min(1)
  .max(WEBHOOK_EVENTS.length)
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
    rotateSecret: z.literal(true).optional().openapi({ description: "Generate a new secret; the old one stops signing at once" }),
  })
  .strict()
  .refine((u) => Object.keys(u).length > 0, { message: "Nothing to update", params: { code: "empty_update" } })
  .refine((u) => !(u.secret !== undefined && u.rotateSecret), { message: "Give a secret or rotateSecret, not both", path: ["rotateSecret"], params: { code: "conflicting_fields" } })
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
    disabledReason: z.string().nullable().openapi({ description: "Set when the service turned the subscription off (the receiver answered 410)" }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Webhook");
export type Webhook = z.infer<typeof Webhook>;

export const WebhookWithSecret = Webhook.extend({
  secret: z.string().optional().openapi({ description: "Shown once; store it now. Absent from an idempotent replay of this answer (Idempotent-Replayed: true): secrets are not kept." }),
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

const pathId = (name: string) => z.uuid({ message: `${name} must be a UUID` }).openapi({ param: { name, in: "path" }, example: "6f1c2f34-3a39-4c55-9a43-2b8f1e8f9d0e" });
export const WebhookIdParam = z.object({ id: pathId("id") });
export const DeliveryParams = z.object({ id: pathId("id"), deliveryId: pathId("deliveryId") });
export const EventParams = z.object({ id: pathId("id"), eventId: z.string().min(1).max(100).openapi({ param: { name: "eventId", in: "path" } }) });
export const DeliveryListQuery = z.object({
  status: Delivery.shape.status.optional().openapi({ param: { name: "status", in: "query" } }),
});
