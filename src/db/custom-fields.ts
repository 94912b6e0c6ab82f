import { index, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * Custom field definitions (src/custom-fields): an organization's own fields on contacts, deals and
 * properties. The values live on the records themselves (their `custom_fields` JSON column, migration 0016), keyed by
 * `key`; a definition says what a value of that key must be. One key per object per organization (the unique index,
 * which also serves a write's read of an object's definitions).
 */
export const customFieldDefinitions = sqliteTable(
  "custom_field_definitions",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    /** contact, deal or property */
    object: text().notNull(),
    key: text().notNull(),
    label: text().notNull(),
    /** text, number, date, boolean or select */
    type: text().notNull(),
    /** The choices of a select field, null for the other types. */
    options: text({ mode: "json" }).$type<string[]>(),
    createdAt: text().notNull(),
    /**
     * Set when a delete starts: the definition then counts for nothing (writes, filters, the list) while its values
     * are swept off the records; the row goes when the sweep ends. A delete cut short is finished by the next delete
     * of it or creation of its key (custom-fields/service.ts).
     */
    deletedAt: text(),
  },
  (t) => [
    uniqueIndex("custom_field_definitions_org_object_key_unique").on(t.organizationId, t.object, t.key),
    // GET /v1/custom-fields, newest first.
    index("custom_field_definitions_org_created_idx").on(t.organizationId, t.createdAt, t.id),
  ],
);
