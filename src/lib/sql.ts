import { type SQL, type SQLWrapper, sql } from "drizzle-orm";

/**
 * `column IN (…)` with the whole list bound as one JSON parameter. D1 allows at most 100 bound parameters per
 * statement, so a list of ids or tags must never become one parameter per item.
 */
export const inJsonList = (column: SQLWrapper, values: readonly (string | number)[]): SQL =>
  sql`${column} IN (SELECT value FROM json_each(${JSON.stringify(values)}))`;

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

/**
 * SQLite's `lower()` folds ASCII letters only: a needle compared with `instr(lower(column), needle)` must be folded
 * the same way, or a name with a capital beyond ASCII ("Łukasz") is never found.
 */
export const foldAscii = (s: string): string => s.replace(/[A-Z]+/g, (m) => m.toLowerCase());

/** Whether `column`'s text contains any of `needles` (ASCII case ignored), the list bound as one JSON parameter. */
export const mentionsAny = (column: SQLWrapper, needles: readonly string[]): SQL =>
  sql`EXISTS (SELECT 1 FROM json_each(${JSON.stringify(needles.map(foldAscii))}) n WHERE instr(lower(${column}), n.value) > 0)`;
