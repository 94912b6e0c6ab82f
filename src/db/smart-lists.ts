import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Saved contact queries (issue 46): `query` is the contact list's parameters as an object. */
export const smartLists = sqliteTable(
  "smart_lists",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    name: text().notNull(),
    query: text({ mode: "json" }).$type<Record<string, string>>().notNull(),
    createdBy: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    version: integer().notNull().default(1),
  },
  (t) => [index("smart_lists_org_created_idx").on(t.organizationId, t.createdAt, t.id)],
);

/**
 * Who matched a smart list when it was last looked at through a write or the daily pass: the difference with what
 * matches now is `smart_list.entered` / `exited`, staged in the batch that moves these rows.
 */
export const smartListMembers = sqliteTable(
  "smart_list_members",
  {
    listId: text().notNull(),
    contactId: text().notNull(),
    organizationId: text().notNull(),
    enteredAt: text().notNull(),
  },
  (t) => [primaryKey({ columns: [t.listId, t.contactId] }), index("smart_list_members_org_contact_idx").on(t.organizationId, t.contactId)],
);
