import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * Organization exports (src/exports/): one row per `POST /v1/organization/export`. The queue job
 * (exports/archive.ts) writes one zip to R2 at `object_key` and moves `status` queued → running → completed (or
 * failed); the download link's token is stored only as its SHA-256 (`token_hash`) and dies at `expires_at`, when
 * the cron's retention pass (exports/retention.ts) deletes the zip and makes the row `expired`. `lease_until` keeps a
 * second delivery of the job's message from running it beside the first. One job queued or running per organization.
 */
export const organizationExports = sqliteTable(
  "organization_exports",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    requestedBy: text(),
    /** queued | running | completed | failed | expired (its link ran out, its zip deleted) | deleted (an erasure removed its zip) */
    status: text().notNull(),
    tablesDone: integer().notNull().default(0),
    tablesTotal: integer().notNull().default(0),
    rows: integer().notNull().default(0),
    files: integer().notNull().default(0),
    bytes: integer().notNull().default(0),
    attempts: integer().notNull().default(0),
    objectKey: text(),
    tokenHash: text(),
    expiresAt: text(),
    leaseUntil: text(),
    error: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    completedAt: text(),
  },
  (t) => [
    index("organization_exports_org_idx").on(t.organizationId, t.createdAt),
    uniqueIndex("organization_exports_token_unique").on(t.tokenHash),
    // The retention pass's walk on every shard: completed jobs by expiry, stalled queued/running ones (migration 0020).
    index("organization_exports_due_idx").on(t.status, t.expiresAt),
  ],
);
