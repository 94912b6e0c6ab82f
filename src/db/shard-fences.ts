import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * On a tenant shard, the organizations whose writes the shard refuses: one that is moving away (its final
 * copy is running) or has left. Triggers on every organization-scoped table (migrations/tenant/0003) raise
 * `organization_moving` for a write to a fenced organization, whoever writes: a request that authenticated before the
 * fence, a queue consumer, the cron. The row stays after the move as a tombstone, so a writer that still holds the
 * old placement can never leave rows behind; a move back to this shard lifts it first (src/shards/move.ts).
 */
export const shardFences = sqliteTable("shard_fences", {
  organizationId: text().primaryKey(),
  fencedAt: text().notNull(),
  /**
   * 1 only inside the move's own cleanup batch (set, delete, reset in one D1 transaction): the deletes of the rows
   * left behind pass the fence and the append-only triggers, and no other writer ever sees it set.
   */
  clearing: integer().notNull().default(0),
});
