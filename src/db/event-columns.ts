import { text } from "drizzle-orm/sqlite-core";

/**
 * The columns of an event's row wherever it waits to be sent: the shard outbox (`outbox_events`), and the
 * directory's, for events of directory changes on their way to it (`directory_outbox`, events/directory-outbox.ts).
 */
export const eventColumns = () => ({
  id: text().primaryKey(),
  organizationId: text().notNull(),
  type: text().notNull(),
  actor: text({ mode: "json" }).$type<{ userId: string | null; type: "user" | "system" | "public" }>().notNull(),
  occurredAt: text().notNull(),
  data: text({ mode: "json" }).$type<Record<string, unknown>>().notNull(),
});
