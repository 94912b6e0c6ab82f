import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Imports of a book (src/imports/): one row per import, moved by each chunk in the same D1 batch as the
 * chunk's records, so a crash resumes at exactly the chunk this row names (`nextChunk`, at byte `offset` of the
 * source). It holds no personal data: counts, the header's column names and the mapping.
 */
export const imports = sqliteTable(
  "imports",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    /** contacts | properties */
    kind: text().notNull(),
    /** queued | running | completed | failed | cancelled */
    status: text().notNull(),
    /** The source in R2 (a CSV, or the JSON rows written as CSV); deleted once the import ends. */
    sourceKey: text().notNull(),
    sizeBytes: integer().notNull(),
    /** skip | update | merge */
    onDuplicate: text().notNull(),
    /** The caller's mapping (CSV column → field), overriding the detected one. */
    mapping: text({ mode: "json" }).$type<Record<string, string>>(),
    /** The header's columns once chunk 0 read them, and the mapping in force (detected, then the caller's). */
    columns: text({ mode: "json" }).$type<string[]>(),
    resolvedMapping: text({ mode: "json" }).$type<Record<string, string>>(),
    /** Which export the header looked like: followupboss | kvcore | native | custom. */
    detectedFormat: text(),
    nextChunk: integer().notNull().default(0),
    /** Byte offset of the source where the next chunk starts. */
    byteOffset: integer().notNull().default(0),
    /** The file row number (header = 1) of the next record. */
    nextRow: integer().notNull().default(2),
    processed: integer().notNull().default(0),
    created: integer().notNull().default(0),
    updated: integer().notNull().default(0),
    skipped: integer().notNull().default(0),
    failed: integer().notNull().default(0),
    failureReason: text(),
    createdBy: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    /** When a chunk last committed (or the import was created): the cron re-sends a stalled import's message, and gives up after a day. */
    progressAt: text().notNull(),
    finishedAt: text(),
  },
  (t) => [
    index("imports_org_status_idx").on(t.organizationId, t.status, t.updatedAt),
    index("imports_status_progress_idx").on(t.status, t.progressAt),
  ],
);

/**
 * The rows an import could not take (or took with a warning), by file row number, column and reason: never the row's
 * data, so an erasure has nothing to look for here. Written in the batch of the chunk that met them.
 */
export const importErrors = sqliteTable(
  "import_errors",
  {
    importId: text().notNull(),
    organizationId: text().notNull(),
    rowNumber: integer().notNull(),
    /** The index of the problem within its row (a row may have several). */
    seq: integer().notNull(),
    column: text().notNull(),
    reason: text().notNull(),
  },
  (t) => [primaryKey({ columns: [t.importId, t.rowNumber, t.seq] }), index("import_errors_org_idx").on(t.organizationId, t.importId)],
);
