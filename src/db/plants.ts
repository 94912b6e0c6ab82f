import { integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Sample plant store. The client names the int64 id, so it is unique per organization, not globally. */
export const plants = sqliteTable(
  "plants",
  {
    organizationId: text().notNull(),
    id: integer().notNull(),
    name: text().notNull(),
    tag: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    /** Compare-and-set key (db/write.ts). */
    version: integer().notNull().default(1),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.id] })],
);
