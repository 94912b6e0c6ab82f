import { and, eq, sql } from "drizzle-orm";
import { chunkBySize, inJsonList } from "../lib/sql";
import type { Db } from "./client";
import { searchSuspended, searchTerms } from "./search";
import type { Statement } from "./write";

/** A statement of JSON text is kept well under D1's ~1 MB for a statement's parameters. */
const MAX_TERMS_JSON = 400_000;

/**
 * The statements of one batch that writes `records`' contacts itself (an import's chunk: folding text in
 * SQL cost two thirds of its time): `write` (the records' inserts and updates) runs with the triggers suspended, then
 * the terms of `updatedIds` are deleted and each record's `terms` written, exactly as the triggers' tokenizer would
 * write them (the caller computes them with src/lib/search-terms.ts, which test/search/search-terms.test.ts holds to the SQL).
 */
export function writeTermsInBatch(
  db: Db,
  organizationId: string,
  kind: "contact",
  write: Statement[],
  records: { id: string; terms: string[] }[],
  updatedIds: string[],
): Statement[] {
  if (records.length === 0) return write;
  const rows = records.map((r) => JSON.stringify([r.id, ...r.terms]));
  // The updated records' old terms, found by record (search_terms_record_idx): the unary + keeps SQLite off the
  // primary key's (organization, kind) range, which is every term of the organization.
  const old = updatedIds.length
    ? [
        db
          .delete(searchTerms)
          .where(
            and(
              inJsonList(searchTerms.recordId, updatedIds),
              sql`+${searchTerms.organizationId} = ${organizationId}`,
              sql`+${searchTerms.kind} = ${kind}`,
            ),
          ),
      ]
    : [];
  return [
    db.insert(searchSuspended).values({ organizationId }).onConflictDoNothing(),
    ...write,
    ...old,
    ...chunkBySize(rows, MAX_TERMS_JSON).map((group) =>
      db
        .insert(searchTerms)
        .select(
          sql`SELECT ${organizationId}, ${kind}, t.value, json_extract(r.value, '$[0]') FROM json_each(${`[${group.join(",")}]`}) r, json_each(r.value) t WHERE t.key > 0`,
        )
        .onConflictDoNothing(),
    ),
    db.delete(searchSuspended).where(eq(searchSuspended.organizationId, organizationId)),
  ];
}
