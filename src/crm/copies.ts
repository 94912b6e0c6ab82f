import { and, asc, eq, getTableColumns, gt, isNotNull, ne, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { removeFiles } from "../files/storage";
import { mentionedIn, parseStructure, replaceMentions } from "../lib/mentions";
import { chunkBySize, mentionsAny } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import { type Counted, ERASED, type Scrub } from "./erasure";
import { bumpResourceCounter, type ListResource } from "./list-totals";

// Copies of a person (crm/erasure.ts) in text another record holds, rewritten in place: how a text is redacted, and
// the rounds that rewrite a domain's columns. Each domain names its own columns (`Copy`) in its Erasable.

/** `text` with every mention of the person (as `scrub.redacted` finds them) replaced by ERASED. */
export const redactText = (text: string, scrub: Scrub): string => replaceMentions(text, scrub.redacted, ERASED);

/**
 * A JSON document with the person taken out: an object of a domain's that is theirs (`scrub.objects`: the contact
 * itself, a communication with them, a testimonial they wrote) loses its personal fields, and every string that names
 * them has that part replaced — JSON kept as a string inside it (a JSON column of a row in the trash) too, walked the
 * same way. Structure, ids, numbers, enum values and everything about other people stay. Text that names nobody comes
 * back as the very same string (not re-serialized), so a caller can tell "nothing to change" by identity. Plain text is
 * redacted as text.
 */
export function redactJson(text: string, scrub: Scrub): string {
  const walk = (value: unknown): unknown => {
    if (typeof value === "string") {
      const nested = parseStructure(value);
      if (nested === undefined) return redactText(value, scrub);
      const out = walk(nested);
      return out === nested ? value : JSON.stringify(out);
    }
    if (Array.isArray(value)) {
      const out = value.map(walk);
      return out.some((v, i) => v !== value[i]) ? out : value;
    }
    if (value && typeof value === "object") {
      const obj = value as Record<string, unknown>;
      // The first object the person's that empties its fields; every one that clears them.
      const personal = scrub.objects.find((o) => !o.clear && o.is(obj, scrub.person))?.fields ?? [];
      const cleared = scrub.objects.filter((o) => o.clear && o.is(obj, scrub.person)).flatMap((o) => o.fields);
      let changed = false;
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(obj)) {
        if (cleared.includes(k)) out[k] = null;
        else out[k] = personal.includes(k) && v !== null ? (typeof v === "string" ? ERASED : null) : walk(v);
        if (out[k] !== v) changed = true;
      }
      return changed ? out : value;
    }
    return value;
  };
  const parsed = parseStructure(text);
  if (parsed === undefined) return redactText(text, scrub);
  const out = walk(parsed);
  return out === parsed ? text : JSON.stringify(out);
}

/** Whether a tag (or any short text) names the person as this run redacts them. */
export const namesPerson = (text: string, scrub: Scrub) => mentionedIn(text, scrub.redacted);

/** Whether text the erasure leaves as it is still names the name (kept: another contact has it), for `name_mentions`. */
export const keepsName = (scrub: Scrub, text: string | null) => !scrub.recognizer.nameIsTheirs && scrub.recognizer.names(text);

/** Rows a round reads at most. */
export const COPY_PAGE = 200;
/** One rewrite statement carries at most this much text (D1 binds a value of up to 2 MB; old and new are both in it). */
export const MAX_REWRITE_CHARS = 512 * 1024;

/** The rows a rewrite names, as one JSON parameter its statement joins (json_each) by position. */
export const rewriteList = (chunk: string[]) => sql`json_each(${`[${chunk.join(",")}]`}) AS j`;
/** Item `i` of a row of `rewriteList`. */
export const rewriteItem = (i: number) => sql.raw(`json_extract(j.value, '$[${i}]')`);

/**
 * A column of a domain's table that may carry copies of the person. `key` and `column` name the table's properties;
 * `versioned`: the row's version moves with the rewrite; `clear`: the column is emptied (NULL) rather than rewritten
 * (a testimonial's display name: "[erased]" is no name to show); `files`: the R2 prefix of files made from the text,
 * deleted before it is rewritten; `after`: what to do once rows changed (their keys); `listed`: a rewrite moves the
 * list's version, as every write of a listed record does, so a total cached before it (crm/list-totals.ts) no longer
 * counts the text it takes out (a search of the name in another contact's notes).
 */
export interface Copy {
  kind: string;
  table: SQLiteTable;
  key: string;
  column: string;
  versioned?: boolean;
  clear?: boolean;
  files?: (organizationId: string, key: string) => string;
  after?: (ctx: ServiceContext, keys: string[]) => Promise<void>;
  listed?: ListResource;
}

/**
 * Rewrites the organization's rows of `copies` that mention the person (their e-mail, phone, and full name when it is
 * theirs alone; their id finds the contact objects of payloads), page by page. Each rewrite is a compare-and-set on the
 * text it was computed from (an agent's edit in between is theirs to keep) and goes in one batch with its count.
 * Idempotent: a second run finds nothing left to change and counts nothing. Answers how many rows still name the name
 * because another contact has it (each run counts them all anew).
 */
export async function rewriteCopies(ctx: ServiceContext, scrub: Scrub, counted: Counted, copies: readonly Copy[]): Promise<number> {
  let byName = 0;
  for (const p of copies) {
    const columns = getTableColumns(p.table) as Record<string, SQLiteColumn>;
    const key = columns[p.key]!;
    const column = columns[p.column]!;
    const organizationId = columns.organizationId!;
    for (let after = ""; ; ) {
      const results: { k: string; t: string }[] = await ctx.db
        .select({ k: sql<string>`${key}`, t: sql<string>`${column}` })
        .from(p.table)
        .where(
          and(
            eq(organizationId, ctx.organizationId),
            gt(key, after),
            ne(key, scrub.person.id),
            isNotNull(column),
            mentionsAny(column, scrub.recognizer.needles),
          ),
        )
        .orderBy(asc(key))
        .limit(COPY_PAGE);
      const changed = results.flatMap((r) => {
        const next = redactJson(r.t, scrub);
        if (next === r.t) return keepsName(scrub, r.t) ? (byName++, []) : [];
        if (keepsName(scrub, next) && !p.clear) byName++;
        return [{ ...r, next: p.clear ? null : next }];
      });
      // Files made from the text go first: a failure leaves the text, and so the row, for the next run to find.
      if (p.files) for (const r of changed) await removeFiles(ctx.files, [], p.files(ctx.organizationId, r.k));
      const rewrites = changed.map((r) => JSON.stringify([r.k, r.t, r.next]));
      for (const chunk of chunkBySize(rewrites, MAX_REWRITE_CHARS)) {
        const set: Record<string, SQL> = {
          [p.column]: rewriteItem(2),
          ...(p.versioned ? { version: sql`${columns.version} + 1` } : {}),
        };
        await ctx.db.batch([
          ctx.db
            .update(p.table)
            .set(set)
            .from(rewriteList(chunk))
            .where(and(eq(organizationId, ctx.organizationId), eq(key, rewriteItem(0)), eq(column, rewriteItem(1)))),
          counted(p.kind),
          ...(p.listed ? [bumpResourceCounter(ctx.db, ctx.organizationId, p.listed, 0)] : []),
        ]);
      }
      if (p.after && changed.length > 0)
        await p.after(
          ctx,
          changed.map((r) => r.k),
        );
      if (results.length < COPY_PAGE) break;
      after = results[results.length - 1]!.k;
    }
  }
  return byName;
}
