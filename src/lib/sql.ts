import { type SQL, type SQLWrapper, sql } from "drizzle-orm";
import type { Needles } from "./mentions";

/**
 * `column IN (…)` with the whole list bound as one JSON parameter. D1 allows at most 100 bound parameters per
 * statement, so a list of ids or tags must never become one parameter per item.
 */
export const inJsonList = (column: SQLWrapper, values: readonly (string | number)[]): SQL =>
  sql`${column} IN (SELECT value FROM json_each(${JSON.stringify(values)}))`;

/**
 * An organization's rows by their ids: `+organization_id = ? AND id IN (…)`. The `+` keeps the organization's term off
 * the indexes: offered one of the many indexes led by organization_id, SQLite (without statistics, as D1 runs it)
 * walks every row of the organization through it instead of looking each id up by primary key (10,000 contacts: a
 * write's read of one contact took ~100 ms, not ~1). Every lookup of an organization's rows by id goes through here.
 */
export const idsOf = (table: { organizationId: SQLWrapper; id: SQLWrapper }, organizationId: string | SQL, ids: readonly string[]): SQL =>
  sql`+${table.organizationId} = ${organizationId} AND ${inJsonList(table.id, ids)}`;

/** Consecutive groups of JSON texts, each at most `maxChars` long in all (one longer text makes a group alone). */
export function chunkBySize(items: string[], maxChars: number): string[][] {
  const chunks: string[][] = [];
  let current: string[] = [];
  let size = 0;
  for (const item of items) {
    if (current.length > 0 && size + item.length > maxChars) {
      chunks.push(current);
      current = [];
      size = 0;
    }
    current.push(item);
    size += item.length;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/** Replaces each of `from` (SQL literals) in `text` by `to`, one nested `replace()` each (SQLite has no regular expressions). */
const replaceAll = (text: SQLWrapper, from: string[], to: string): SQL =>
  from.reduce<SQL>((inner, f) => sql`replace(${inner}, ${sql.raw(f)}, ${sql.raw(`'${to}'`)})`, sql`${text}`);

/**
 * The text with whitespace, and the escapes of line breaks and tabs JSON writes (once or twice), made one space: the
 * SQL twin of lib/mentions.ts `spacedText` (runs of up to 16 spaces collapse; the JS test after it is the precise one).
 */
const spacedSql = (text: SQLWrapper): SQL =>
  replaceAll(
    replaceAll(text, ["'\\\\n'", "'\\\\r'", "'\\\\t'", "'\\n'", "'\\r'", "'\\t'", "char(9)", "char(10)", "char(13)", "char(160)"], " "),
    ["'  '", "'  '", "'  '", "'  '"],
    " ",
  );

/** The text without a phone number's separators, so "416-555-0142" and "(416) 555 0142" both hold "4165550142". */
export const digitsOnly = (text: SQLWrapper): SQL =>
  replaceAll(text, ["' '", "'-'", "'.'", "'('", "')'", "'+'", "'/'", "char(9)", "char(10)", "char(13)", "char(160)"], "");

/**
 * Whether `column`'s text may mention any of `needles` (lib/mentions.ts): a cheap filter that may over-match, each
 * list bound as one JSON parameter. SQLite's `lower()` folds ASCII only; the needles come folded the same way, in
 * each form the mention may be written.
 */
export const mentionsAny = (column: SQLWrapper, needles: Needles): SQL => {
  const v = sql.raw("t.v");
  const any = (list: string[], text: SQL) =>
    list.length ? [sql`EXISTS (SELECT 1 FROM json_each(${JSON.stringify(list)}) n WHERE instr(${text}, n.value) > 0)`] : [];
  const tests = [
    ...any(needles.plain, sql`lower(${v})`),
    ...any(needles.spaced, spacedSql(sql`lower(${v})`)),
    ...any(needles.digits, digitsOnly(v)),
  ];
  if (tests.length === 0) return sql`0`;
  // The column is read once, as t.v, whatever the number of tests and needles.
  return sql`EXISTS (SELECT 1 FROM (SELECT ${column} AS v) t WHERE ${sql.join(tests, sql` OR `)})`;
};
