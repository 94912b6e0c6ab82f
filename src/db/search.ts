import { index, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * The search index of contacts, deals and properties (migration 0012_search.sql): one row per distinct
 * term of a record, written by triggers on those tables (they fold and split the text with `search_fold`), so it
 * changes in the statement of every write of a record, whoever makes it; an import's chunk writes its contacts'
 * terms itself instead (search-bulk.ts `writeTermsInBatch`). Both tables are WITHOUT ROWID in the
 * migration (drizzle does not say so): the primary key is the only copy of the row.
 */
export const searchTerms = sqliteTable(
  "search_terms",
  {
    organizationId: text().notNull(),
    /** contact, deal or property */
    kind: text().notNull(),
    term: text().notNull(),
    recordId: text().notNull(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.kind, t.term, t.recordId] }), index("search_terms_record_idx").on(t.recordId, t.term)],
);

/** Each character whose folded form is not itself: " " a separator, "" a mark (src/lib/search-terms.ts `foldMap`). */
export const searchFold = sqliteTable("search_fold", {
  ch: text().primaryKey(),
  folded: text().notNull(),
});

/**
 * Organizations whose contacts' insert and update triggers stand aside (migration 0019): only ever inside one batch
 * of `writeTermsInBatch`, which inserts the row first and deletes it last, so no other write sees a row here.
 */
export const searchSuspended = sqliteTable("search_suspended", {
  organizationId: text().primaryKey(),
});
