import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

type FilterScalar = string | number | boolean | null;
/**
 * A subscription's filters as stored (the `filters` column): a condition per dotted path. Declared here, below the
 * domain: the API's zod schema (webhooks/filters.ts `WebhookFiltersSchema`) `satisfies` it.
 */
export type StoredWebhookFilters = Record<
  string,
  {
    eq?: FilterScalar;
    ne?: FilterScalar;
    gt?: number | string;
    gte?: number | string;
    lt?: number | string;
    lte?: number | string;
    in?: FilterScalar[];
    nin?: FilterScalar[];
  }
>;

/**
 * Webhook subscriptions (spec: Webhook subscription). The signing secret must stay usable for signing, so it is kept
 * AES-GCM encrypted (webhooks/secret-box.ts), never as plain text and never returned after create or rotation.
 */
export const webhookSubscriptions = sqliteTable(
  "webhook_subscriptions",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    url: text().notNull(),
    events: text({ mode: "json" }).$type<string[]>().notNull(),
    filters: text({ mode: "json" }).$type<StoredWebhookFilters>().notNull(),
    enabled: integer({ mode: "boolean" }).notNull(),
    description: text().notNull(),
    secretCiphertext: text().notNull(),
    /** Why the service turned the subscription off (a 410, or 5 days of failures); null when the user did or never. */
    disabledReason: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    /** Compare-and-set key and ETag (db/write.ts). */
    version: integer().notNull().default(1),
    // Endpoints that heal (migrations/tenant/0010), in the table's column order.
    /** When the service turned it off; null when it is on or the user turned it off. */
    disabledAt: text(),
    /**
     * When the current run of failed attempts began; null once any attempt succeeds (webhooks/healing.ts). Written by
     * the delivery consumer without moving `version`: bookkeeping, not a change of the subscription.
     */
    failingSince: text(),
    /** When the owners' mail about an automatic disable is due (again); null once sent (webhooks/healing.ts). */
    ownersNoticeDueAt: text(),
    /** The secret a rotation replaced, still signing beside the new one until `previousSecretExpiresAt` (encrypted the same way). */
    previousSecretCiphertext: text(),
    previousSecretExpiresAt: text(),
  },
  (t) => [
    index("webhook_subscriptions_org_created_idx").on(t.organizationId, t.createdAt, t.id),
    // The cron's passes (webhooks/healing.ts): endpoints failing for too long, owners' notices due.
    index("webhook_subscriptions_failing_idx").on(t.failingSince),
    index("webhook_subscriptions_notice_idx").on(t.ownersNoticeDueAt),
  ],
);

export type DeliveryStatus = "pending" | "retrying" | "delivered" | "failed" | "dead";

/**
 * One event bound for one subscription. The body is stored once, so every attempt and every replay sends the same
 * bytes and the same event id; only the timestamp and signature are fresh (spec: Delivery).
 */
export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    subscriptionId: text().notNull(),
    eventId: text().notNull(),
    event: text().notNull(),
    body: text().notNull(),
    status: text().$type<DeliveryStatus>().notNull(),
    attemptCount: integer().notNull().default(0),
    lastStatusCode: integer(),
    lastError: text(),
    nextAttemptAt: text(),
    deliveredAt: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    /**
     * The delivery's current retry chain: a recover (webhooks/recover.ts) starts a new one, and a queue message of an
     * older chain is then dropped, so a delivery never has two chains sending at once.
     */
    chain: integer().notNull().default(0),
  },
  (t) => [
    // A redelivered event never makes a second delivery for the same subscription.
    uniqueIndex("webhook_deliveries_subscription_event_unique").on(t.subscriptionId, t.eventId),
    index("webhook_deliveries_subscription_created_idx").on(t.subscriptionId, t.createdAt, t.id),
    index("webhook_deliveries_event_idx").on(t.eventId),
    // The cron sweep for deliveries whose queue message was lost (webhooks/fanout.ts resendStalledDeliveries).
    index("webhook_deliveries_status_updated_idx").on(t.status, t.updatedAt),
  ],
);

/** Every attempt of a delivery, for the delivery log: status, duration, error, and when the next one is due. */
export const webhookDeliveryAttempts = sqliteTable(
  "webhook_delivery_attempts",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    deliveryId: text().notNull(),
    attempt: integer().notNull(),
    statusCode: integer(),
    durationMs: integer().notNull(),
    error: text(),
    nextAttemptAt: text(),
    attemptedAt: text().notNull(),
  },
  (t) => [index("webhook_delivery_attempts_delivery_idx").on(t.deliveryId, t.attemptedAt)],
);
