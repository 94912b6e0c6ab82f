import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

export type TrashKind = "contact" | "deal" | "property" | "template";

/**
 * What `trash_entries.state` says about a record that left its table:
 * - `trashed`: in the trash, its rows kept in `trash_rows`; restorable until `restorableUntil`.
 * - `purging`: claimed by the purge (past its 30 days); no restore may start, its R2 objects are going.
 * - `purged` / `erased`: a tombstone — the id, the kind and when it was deleted, nothing else.
 */
export type TrashState = "trashed" | "purging" | "purged" | "erased";

/**
 * One row per contact, deal or property that was deleted. While `trashed` the record and its children
 * wait in `trash_rows`, out of every table the API reads, so reads answer 404 and lists and totals leave them out
 * without a filter anywhere. A purge or an erasure leaves the row as a tombstone, so a reference to the record
 * points at something that says "deleted" rather than at nothing. `label` (a name or a title, shown by the trash
 * list) is cleared with the rows.
 */
export const trashEntries = sqliteTable(
  "trash_entries",
  {
    recordId: text().primaryKey(),
    organizationId: text().notNull(),
    kind: text().$type<TrashKind>().notNull(),
    state: text().$type<TrashState>().notNull(),
    label: text(),
    deletedAt: text().notNull(),
    deletedBy: text(),
    restorableUntil: text().notNull(),
    /** Set once the state leaves `trashed` (purge claimed, purged or erased). */
    endedAt: text(),
    /** A contact merged into another (POST /v1/contacts/{id}/merge): that contact's id. It cannot be restored. */
    mergedInto: text(),
  },
  (t) => [
    // GET /v1/trash: newest first, optionally one kind.
    index("trash_entries_org_listed_idx").on(t.organizationId, t.state, t.deletedAt, t.recordId),
    index("trash_entries_org_kind_idx").on(t.organizationId, t.state, t.kind, t.deletedAt, t.recordId),
    // The purge pass: what has outlived its 30 days (or a purge that stopped half-way).
    index("trash_entries_due_idx").on(t.restorableUntil).where(sql`${t.state} IN ('trashed', 'purging')`),
    // An erasure of a contact finds the contacts merged into it.
    index("trash_entries_merged_idx").on(t.organizationId, t.mergedInto).where(sql`${t.mergedInto} IS NOT NULL`),
  ],
);

/**
 * The rows of a trashed record, each as the JSON object of its columns, keyed by the table it came from: restore
 * writes them back column for column, so the record returns exactly as it was. Keyed by the record's id and the
 * row's place among its rows (1, 2, …), unique across shards like the record's id: a per-database counter would give
 * two shards' rows the same key, and a shard move would take one for the other.
 */
export const trashRows = sqliteTable(
  "trash_rows",
  {
    /** Its own organization column, so a shard move finds every kept row even after its entry has gone. */
    organizationId: text().notNull(),
    recordId: text().notNull(),
    seq: integer().notNull(),
    tableName: text().notNull(),
    row: text().notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.recordId, t.seq] }),
    index("trash_rows_record_idx").on(t.recordId, t.tableName, t.seq),
    // A shard move walks an organization's rows in key order.
    index("trash_rows_org_idx").on(t.organizationId, t.recordId, t.seq),
  ],
);

/** What an erasure recognizes the person by while it runs: their id, e-mail key, full name and phones (`words`: longest first). */
export interface ErasureSubject {
  id: string;
  emailKey: string;
  fullName: string;
  phones: string[];
  words: string[];
}

/**
 * One row per erasure of a person (DELETE /v1/contacts/{id}?erase=true): who asked, when, and how many of which kind
 * of record were erased or cleaned, and which were kept and why, so the organization can show it honoured a request.
 * Written `pending` in the batch that removes the contact, with `subject` (the strings the copies are searched for,
 * the only personal data here) so that a retry or the cron can finish an erasure that stopped half-way; `done`
 * clears `subject`. `erased` counts move in the batch of each change they count.
 */
export const erasures = sqliteTable(
  "erasures",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    contactId: text().notNull(),
    actorUserId: text(),
    erased: text({ mode: "json" }).$type<Record<string, number>>().notNull(),
    /** The kinds of record kept as they are (they still name the person); `retainedCounts` says how many of each. */
    retained: text({ mode: "json" }).$type<string[]>().notNull(),
    at: text().notNull(),
    state: text().$type<"pending" | "done">().notNull().default("done"),
    subject: text({ mode: "json" }).$type<ErasureSubject>(),
    retainedCounts: text({ mode: "json" }).$type<Record<string, number>>(),
    /** When a run last started: the cron resumes a pending erasure no run has touched for a while. */
    touchedAt: text(),
  },
  (t) => [
    index("erasures_org_at_idx").on(t.organizationId, t.at, t.id),
    index("erasures_pending_idx").on(t.touchedAt).where(sql`${t.state} = 'pending'`),
  ],
);
