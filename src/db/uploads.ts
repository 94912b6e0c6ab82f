import { index, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * R2 objects of uploads whose row is not committed yet: written before the put, deleted by the batch that
 * commits the row naming the object (a deal document, a property's photo list). Whatever fails in between — the put,
 * the batch, the isolate — the entry outlives it, and the cron deletes the object and the entry once it is an hour
 * old (files/uploads.ts), so R2 never keeps an object without its row, and a row never names an object not stored.
 */
export const pendingUploads = sqliteTable(
  "pending_uploads",
  {
    key: text().primaryKey(),
    organizationId: text().notNull(),
    createdAt: text().notNull(),
  },
  (t) => [index("pending_uploads_created_idx").on(t.createdAt)],
);
