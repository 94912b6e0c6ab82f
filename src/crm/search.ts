import { z } from "@hono/zod-openapi";
import { MAX_QUERY_CHARS, MAX_QUERY_WORDS, searchWords } from "../lib/search-terms";
import type { Where } from "./keyset";

/**
 * `q` on the CRM lists (issue 33): records with, for every word of `q`, a term starting with it (search_terms,
 * migration 0012, kept by triggers on the listed tables), combined with the list's filters, in the list's sort, with
 * its keyset cursor and an exact total.
 */
export type SearchKind = "contact" | "deal" | "property";

export interface Search {
  kind: SearchKind;
  /** Each word as the prefixes one of which a term must start with. */
  words: string[][];
}

/** `q` of a list: bounded in length and words; anything else in it (quotes, `*`, `-`, `:`, NEAR) is plain text. */
export const searchParam = (phones: boolean, fields: string) =>
  z
    .string()
    .max(MAX_QUERY_CHARS)
    .superRefine((q, ctx) => {
      const words = searchWords(q, phones).length;
      if (words === 0) ctx.addIssue({ code: "custom", message: "q has no letter or digit to search for", params: { code: "no_words" } });
      if (words > MAX_QUERY_WORDS) ctx.addIssue({ code: "custom", message: `q has ${words} words; at most ${MAX_QUERY_WORDS} are searched together`, params: { code: "too_many_words" } });
    })
    .optional()
    .openapi({
      example: "pat elm",
      description: `Words to find (${fields}), each as the start of a word, in any case and with or without accents; every word must match. At most ${MAX_QUERY_CHARS} characters and ${MAX_QUERY_WORDS} words. Combines with every other filter, the sort and the cursor.`,
    });

export const searchOf = (kind: SearchKind, q: string | undefined): Search | null => (q === undefined ? null : { kind, words: searchWords(q, kind === "contact") });

/** The words as a total's cache key: "Patel" and "patel" count once. */
export const searchKey = (search: Search | null) => (search ? JSON.stringify(search.words.map((w) => w.join("|")).sort()) : undefined);

/** The last character there is: every term starting with `p` sorts between `p` and `p` followed by it. */
const UPPER = "char(1114111)";

/**
 * Records of `alias` (which must not be qw, qp or qt) that have, for every word, a term starting with one of its prefixes: the words bound as one
 * JSON parameter (D1 binds at most 100 per statement), each tested on the record's own terms (search_terms_record_idx).
 */
function matchesAll(alias: string, search: Search, words: string[][]): Where {
  if (words.length === 0) return { sql: [], params: [] };
  return {
    sql: [
      `NOT EXISTS (SELECT 1 FROM json_each(?) qw WHERE NOT EXISTS (SELECT 1 FROM json_each(qw.value) qp CROSS JOIN search_terms qt ON qt.record_id = ${alias}.id AND qt.kind = '${search.kind}' AND qt.term >= qp.value AND qt.term < qp.value || ${UPPER}))`,
    ],
    params: [JSON.stringify(words)],
  };
}

/**
 * The ids with a term starting with one of `prefixes`: one range of the primary key per prefix, this organization's
 * and kind's only (CROSS JOIN keeps the prefixes outside, so each is a seek, not a scan of the organization's terms).
 */
const hitsSql = (organizationId: string, search: Search, prefixes: string[], limit?: number): { sql: string; params: unknown[] } => ({
  sql: `SELECT DISTINCT qt.record_id AS id FROM json_each(?) qp CROSS JOIN search_terms qt ON qt.organization_id = ? AND qt.kind = '${search.kind}' AND qt.term >= qp.value AND qt.term < qp.value || ${UPPER}${limit === undefined ? "" : ` LIMIT ${limit}`}`,
  params: [JSON.stringify(prefixes), organizationId],
});

/** The word that leads: the longest (its prefix is likely the rarest); the others are tested on its records. */
function split(search: Search): { lead: string[]; rest: string[][] } {
  const length = (w: string[]) => Math.min(...w.map((p) => [...p].length));
  const lead = search.words.reduce((best, w) => (length(w) > length(best) ? w : best));
  return { lead, rest: search.words.filter((w) => w !== lead) };
}

/** Records the lead word may match before the page walks the sort's index instead. */
export const HITS_WINDOW = 2000;

const joined = (w: Where) => (w.sql.length ? w.sql.join(" AND ") : "1");
const allOf = (wheres: Where[]): Where => ({ sql: wheres.flatMap((w) => w.sql), params: wheres.flatMap((w) => w.params) });

/**
 * The page of a searched list: `limit + 1` rows of `table` (aliased `alias`) matching every `wheres` (organization,
 * filters, cursor) and the search, in `order` (`fallback`: the same order with its index out of the choice). One statement, two plans, as `pageSql` (keyset.ts) has:
 * - the lead word's records, when at most HITS_WINDOW: each looked up by id, tested on the other words and filters,
 *   sorted; the cost follows the matches, not the organization (50 of 100,000 cost what 50 of 1,000 do);
 * - more than that (a word of one letter): the sort's index walked with every word tested on each row, stopping after
 *   `limit + 1` matches, which are then dense.
 * The lead's records are counted up to HITS_WINDOW + 1 only; the arm not taken has LIMIT 0, which SQLite skips
 * before opening any index.
 */
export function searchPageSql(table: string, alias: string, organizationId: string, search: Search, wheres: Where[], order: { probe: string; fallback: string }, limit: number): { sql: string; params: unknown[] } {
  const take = limit + 1;
  const where = allOf(wheres);
  const { lead, rest } = split(search);
  const hits = hitsSql(organizationId, search, lead, HITS_WINDOW + 1);
  const others = matchesAll(alias, search, rest);
  const every = matchesAll(alias, search, search.words);
  const byHits = joined({ sql: [...where.sql, ...others.sql], params: [] });
  const byWalk = joined({ sql: [...where.sql, ...every.sql], params: [] });
  return {
    sql: `WITH hits AS MATERIALIZED (${hits.sql})
      SELECT ${alias}.* FROM (
        SELECT * FROM (SELECT ${alias}.* FROM hits h CROSS JOIN ${table} ${alias} ON ${alias}.id = h.id WHERE ${byHits} ORDER BY ${order.fallback}
          LIMIT (CASE WHEN (SELECT COUNT(*) FROM hits) <= ${HITS_WINDOW} THEN ${take} ELSE 0 END))
        UNION ALL
        SELECT * FROM (SELECT ${alias}.* FROM ${table} ${alias} WHERE ${byWalk} ORDER BY ${order.probe}
          LIMIT (CASE WHEN (SELECT COUNT(*) FROM hits) > ${HITS_WINDOW} THEN ${take} ELSE 0 END))
      ) ${alias} ORDER BY ${order.probe}`,
    params: [...hits.params, ...where.params, ...others.params, ...where.params, ...every.params],
  };
}

/**
 * What the total of a searched list counts (crm/list-totals.ts `resolveTotal`): every record of the lead word, looked
 * up by id and tested like the page's, so the count follows the matches too. `wheres` hold the organization.
 */
export function searchCount(table: string, alias: string, organizationId: string, search: Search, wheres: Where[]): { from: string; where: string; params: unknown[] } {
  const where = allOf(wheres);
  const { lead, rest } = split(search);
  const hits = hitsSql(organizationId, search, lead);
  const others = matchesAll(alias, search, rest);
  return {
    from: `(${hits.sql}) h CROSS JOIN ${table} ${alias} ON ${alias}.id = h.id`,
    where: joined({ sql: [...where.sql, ...others.sql], params: [] }),
    params: [...hits.params, ...where.params, ...others.params],
  };
}
