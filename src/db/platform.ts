import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { eventColumns } from "./event-columns";

/**
 * One row per domain event, written in the same batch as the change it records (the outbox). The queue carries only
 * the id, so an event of any size leaves; `nextAttemptAt` is when the cron pass sends it (again) if it is still
 * unsent, pushed back after each failed send, and cleared once the event is sent or dead-lettered.
 */
export const outboxEvents = sqliteTable(
  "outbox_events",
  {
    ...eventColumns(),
    sentAt: text(),
    sendAttempts: integer().notNull().default(0),
    nextAttemptAt: text(),
    lastError: text(),
    /** Set after the last failed send: the row stays for an operator (docs/operations.md), the cron leaves it alone. */
    deadAt: text(),
  },
  (t) => [
    index("outbox_events_due_idx").on(t.nextAttemptAt),
    // The event log (GET /v1/events, webhooks/event-log.ts): an organization's events newest first, of one type or all.
    index("outbox_events_org_occurred_idx").on(t.organizationId, t.occurredAt, t.id),
    index("outbox_events_org_type_occurred_idx").on(t.organizationId, t.type, t.occurredAt, t.id),
  ],
);

/**
 * Idempotency-Key records (platform/idempotency.ts): the first response to a key, replayed for 24 hours to a retry
 * of the same request. `fingerprint` is the SHA-256 of method, path, query and body.
 */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    organizationId: text().notNull(),
    key: text().notNull(),
    fingerprint: text().notNull(),
    state: text().$type<"in_flight" | "done">().notNull(),
    responseStatus: integer(),
    responseHeaders: text({ mode: "json" }).$type<Record<string, string>>(),
    responseBody: text(),
    createdAt: text().notNull(),
    expiresAt: text().notNull(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.key] }), index("idempotency_keys_expires_idx").on(t.expiresAt)],
);

/**
 * Which consumer has claimed or handled which event: consumers are idempotent on the event id. A claim whose
 * `processedAt` is still null after a while belongs to a consumer that died, and may be taken over.
 */
export const processedEvents = sqliteTable(
  "processed_events",
  {
    consumer: text().notNull(),
    eventId: text().notNull(),
    claimedAt: text().notNull(),
    processedAt: text(),
  },
  (t) => [uniqueIndex("processed_events_pk").on(t.consumer, t.eventId)],
);

/** The organization's activity log, fed by the audit consumer of the event bus. */
export const auditLog = sqliteTable(
  "audit_log",
  {
    eventId: text().primaryKey(),
    organizationId: text().notNull(),
    type: text().notNull(),
    actorUserId: text(),
    occurredAt: text().notNull(),
    recordedAt: text().notNull(),
  },
  (t) => [index("audit_log_org_idx").on(t.organizationId, t.occurredAt)],
);

/**
 * Per-organization counts of a listed resource (contacts, properties …): `total` answers an unfiltered list total
 * without a scan; `version` moves with every write of the resource and invalidates the cached totals of filtered
 * lists (listTotals). Both move in the write's own batch (crm/list-totals.ts).
 */
export const resourceCounters = sqliteTable(
  "resource_counters",
  {
    organizationId: text().notNull(),
    resource: text().notNull(),
    total: integer().notNull().default(0),
    version: integer().notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.resource] })],
);

/**
 * A filtered list's total, counted once per resource version and cached (crm/list-totals.ts); `exact` is false when
 * it is a lower bound (a broad search counts only the list's first rows, crm/search.ts `searchCount`).
 */
export const listTotals = sqliteTable(
  "list_totals",
  {
    organizationId: text().notNull(),
    resource: text().notNull(),
    filterKey: text().notNull(),
    version: integer().notNull(),
    total: integer().notNull(),
    exact: integer({ mode: "boolean" }).notNull().default(true),
    /**
     * A total of a query with one relative date bound (`-P30D`): the instant the bound stood at when counted. At a later
     * now, the same version's total is this one plus the rows the bound's move crossed (crm/list-totals.ts `driftingTotal`).
     */
    asOf: text(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.resource, t.filterKey] })],
);
