import { and, asc, eq, getTableColumns, gt, isNotNull, ne, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import {
  contactActivities,
  contacts,
  dealActivities,
  deals,
  dealTasks,
  idempotencyKeys,
  outboxEvents,
  properties,
  referrals,
  surveyResponses,
  testimonials,
  trashEntries,
  trashRows,
  webhookDeliveries,
  webhookSubscriptions,
} from "../db/schema";
import type { Statement } from "../db/write";
import { removeFiles } from "../files/storage";
import { chunkBySize, mentionsAny } from "../lib/sql";
import type { ServiceContext } from "../platform/context";
import { reportsPrefix } from "../properties/files";
import { type Person, redactJson } from "./redact";

/** Adds the rows the statement before it changed to the erasure's count of `kind` (contacts/erase.ts). */
export type Counted = (kind: string) => Statement;

/**
 * Text that may carry copies of the person, rewritten in place: event payloads, webhook bodies and filters, replayed
 * answers (JSON, redacted structurally), and the notes and texts the system, a form or an agent wrote about them
 * elsewhere (other contacts' notes and activities, deals, their tasks and activities, listings' marketing texts, the
 * labels of other records in the trash). `key` and `column` name the table's properties. Not here: uploaded files
 * (a deal's documents, a listing's photos), whose names and bytes stay together in R2.
 */
const COPIES: { kind: string; table: SQLiteTable; key: string; column: string; versioned?: boolean; files?: (organizationId: string, key: string) => string }[] = [
  { kind: "events", table: outboxEvents, key: "id", column: "data" },
  { kind: "webhook_deliveries", table: webhookDeliveries, key: "id", column: "body" },
  { kind: "idempotency_records", table: idempotencyKeys, key: "key", column: "responseBody" },
  { kind: "webhook_subscriptions", table: webhookSubscriptions, key: "id", column: "filters", versioned: true },
  { kind: "webhook_subscriptions", table: webhookSubscriptions, key: "id", column: "description", versioned: true },
  { kind: "contact_notes", table: contacts, key: "id", column: "notes", versioned: true },
  { kind: "activity_texts", table: contactActivities, key: "id", column: "description" },
  { kind: "activity_texts", table: contactActivities, key: "id", column: "metadata" },
  { kind: "deal_texts", table: deals, key: "id", column: "title", versioned: true },
  { kind: "deal_texts", table: deals, key: "id", column: "description", versioned: true },
  { kind: "deal_texts", table: deals, key: "id", column: "notes", versioned: true },
  { kind: "deal_texts", table: dealTasks, key: "id", column: "title" },
  { kind: "deal_texts", table: dealTasks, key: "id", column: "description" },
  { kind: "activity_texts", table: dealActivities, key: "id", column: "description" },
  { kind: "activity_texts", table: dealActivities, key: "id", column: "metadata" },
  // A listing sheet prints the marketing texts: the listing's reports go before its text is rewritten.
  { kind: "property_texts", table: properties, key: "id", column: "marketing", versioned: true, files: reportsPrefix },
  { kind: "referral_notes", table: referrals, key: "id", column: "notes", versioned: true },
  { kind: "testimonial_texts", table: testimonials, key: "id", column: "headline", versioned: true },
  { kind: "testimonial_texts", table: testimonials, key: "id", column: "body", versioned: true },
  { kind: "survey_answers", table: surveyResponses, key: "surveyId", column: "answers" },
  { kind: "trash_labels", table: trashEntries, key: "recordId", column: "label" },
];

const PAGE = 200;
/** One rewrite statement carries at most this much text (D1 binds a value of up to 2 MB; old and new are both in it). */
const MAX_REWRITE_CHARS = 512 * 1024;

/** The rows a rewrite names, as one JSON parameter its statement joins (json_each) by position. */
const rewriteList = (chunk: string[]) => sql`json_each(${`[${chunk.join(",")}]`}) AS j`;
const item = (i: number) => sql.raw(`json_extract(j.value, '$[${i}]')`);

/**
 * Rewrites the organization's rows that mention the person (their id, e-mail, full name or phone), page by page.
 * Each rewrite is a compare-and-set on the text it was computed from (an agent's edit in between is theirs to keep)
 * and goes in one batch with its count. Idempotent: a second run finds nothing left to change and counts nothing.
 */
export async function scrubCopies(ctx: ServiceContext, person: Person, counted: Counted): Promise<void> {
  const needles = [person.id, ...person.words];
  for (const p of COPIES) {
    const columns = getTableColumns(p.table) as Record<string, SQLiteColumn>;
    const key = columns[p.key]!;
    const column = columns[p.column]!;
    const organizationId = columns.organizationId!;
    for (let after = ""; ; ) {
      const results: { k: string; t: string }[] = await ctx.db
        .select({ k: sql<string>`${key}`, t: sql<string>`${column}` })
        .from(p.table)
        .where(and(eq(organizationId, ctx.organizationId), gt(key, after), ne(key, person.id), isNotNull(column), mentionsAny(column, needles)))
        .orderBy(asc(key))
        .limit(PAGE);
      const changed = results.flatMap((r) => {
        const next = redactJson(r.t, person);
        return next === r.t ? [] : [{ ...r, next }];
      });
      // Files made from the text go first: a failure leaves the text, and so the row, for the next run to find.
      if (p.files) for (const r of changed) await removeFiles(ctx.env, [], p.files(ctx.organizationId, r.k));
      const rewrites = changed.map((r) => JSON.stringify([r.k, r.t, r.next]));
      for (const chunk of chunkBySize(rewrites, MAX_REWRITE_CHARS)) {
        const set: Record<string, SQL> = { [p.column]: item(2), ...(p.versioned ? { version: sql`${columns.version} + 1` } : {}) };
        await ctx.db.batch([
          ctx.db
            .update(p.table)
            .set(set)
            .from(rewriteList(chunk))
            .where(and(eq(organizationId, ctx.organizationId), eq(key, item(0)), eq(column, item(1)))),
          counted(p.kind),
        ]);
      }
      if (results.length < PAGE) break;
      after = results[results.length - 1]!.k;
    }
  }
}

/**
 * The kept rows of other records in the trash (each the JSON of a row, trash/moves.ts) that name the person,
 * redacted structurally like the copies above: a restore writes back what is kept, so it brings back no name. Walked
 * in key order on the organization's index (`trash_rows_org_idx`).
 */
export async function scrubTrash(ctx: ServiceContext, person: Person, counted: Counted): Promise<void> {
  for (let after: [string, number] | null = null; ; ) {
    const rows: { recordId: string; seq: number; row: string }[] = await ctx.db
      .select({ recordId: trashRows.recordId, seq: trashRows.seq, row: trashRows.row })
      .from(trashRows)
      .where(
        and(
          eq(trashRows.organizationId, ctx.organizationId),
          ne(trashRows.recordId, person.id),
          after ? sql`(${trashRows.recordId}, ${trashRows.seq}) > (${after[0]}, ${after[1]})` : undefined,
          mentionsAny(trashRows.row, person.words),
        ),
      )
      .orderBy(asc(trashRows.recordId), asc(trashRows.seq))
      .limit(PAGE);
    const rewrites = rows.flatMap((r) => {
      const next = redactJson(r.row, person);
      return next === r.row ? [] : [JSON.stringify([r.recordId, r.seq, r.row, next])];
    });
    for (const chunk of chunkBySize(rewrites, MAX_REWRITE_CHARS)) {
      await ctx.db.batch([
        ctx.db
          .update(trashRows)
          .set({ row: item(3) })
          .from(rewriteList(chunk))
          .where(and(eq(trashRows.recordId, item(0)), eq(trashRows.seq, item(1)), eq(trashRows.row, item(2)))),
        counted("trash_rows"),
      ]);
    }
    if (rows.length < PAGE) break;
    const last = rows[rows.length - 1]!;
    after = [last.recordId, last.seq];
  }
}
