import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export const organizations = sqliteTable(
  "organizations",
  {
    id: text().primaryKey(),
    // Unique so that the token command maps one organization name to one organization (DESIGN.md contract 2).
    name: text().notNull(),
    createdAt: text().notNull(),
  },
  (t) => [uniqueIndex("organizations_name_unique").on(t.name)],
);

export const users = sqliteTable(
  "users",
  {
    id: text().primaryKey(),
    organizationId: text()
      .notNull()
      .references(() => organizations.id),
    email: text().notNull(),
    name: text(),
    createdAt: text().notNull(),
  },
  (t) => [uniqueIndex("users_organization_email_unique").on(t.organizationId, t.email)],
);

/** Bearer sessions. Only the SHA-256 of the token is stored; the raw token exists once, in the minting answer. */
export const sessions = sqliteTable(
  "sessions",
  {
    id: text().primaryKey(),
    tokenHash: text().notNull(),
    userId: text()
      .notNull()
      .references(() => users.id),
    organizationId: text()
      .notNull()
      .references(() => organizations.id),
    createdAt: text().notNull(),
    expiresAt: text().notNull(),
    revokedAt: text(),
  },
  (t) => [uniqueIndex("sessions_token_hash_unique").on(t.tokenHash), index("sessions_user_idx").on(t.userId)],
);

/** One row per domain event, written in the same batch as the change it records (the outbox). */
export const outboxEvents = sqliteTable(
  "outbox_events",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    type: text().notNull(),
    actor: text({ mode: "json" }).$type<{ userId: string | null; type: "user" | "system" | "public" }>().notNull(),
    occurredAt: text().notNull(),
    data: text({ mode: "json" }).$type<Record<string, unknown>>().notNull(),
    sentAt: text(),
    sendAttempts: integer().notNull().default(0),
  },
  (t) => [index("outbox_events_unsent_idx").on(t.sentAt, t.occurredAt)],
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
