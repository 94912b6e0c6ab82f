import { z } from "@hono/zod-openapi";
import { MAX_QUERY_CHARS, MAX_QUERY_WORDS, searchWords } from "../lib/search-terms";
import { sortSignature, type SortKey, WINDOW_END, type Where } from "./keyset";

/**
 * `q` on the CRM lists (docs/decisions/0020-search-index-without-fts5.md): records with, for every word of `q`, a term
 * starting with it (search_terms, migration 0012, kept by triggers on the listed tables), combined with the list's
 * filters, in the list's sort, with its keyset cursor and a total: exact when the search is selective or the list
 * short, else a lower bound (WALK_BUDGET).
 */
export type SearchKind = "contact" | "deal" | "property";

export interface Search {
  kind: SearchKind;
  /** Each word as the prefixes one of which a term must start with. */
  words: string[][];
}

/** Records the lead word may match before the search counts as broad: its page walks the list's order instead. */
export const HITS_WINDOW = 2000;

/**
 * Rows of the list a broad search examines for one page, and for its total: no index intersects eight huge prefix
 * sets in bounded time, so a broad search's work is capped, as GitHub's `incomplete_results` and Elasticsearch's
 * `relation: gte` cap theirs. At this figure a broad search at 100,000 records costs what the same words cost at
 * 1,000, where they are selective (bench/contacts-search.bench.test.ts).
 */
export const WALK_BUDGET = 1000;

/** `q` of a list: bounded in length and words; anything else in it (quotes, `*`, `-`, `:`, NEAR) is plain text. */
export const searchParam = (phones: boolean, fields: string) =>
  z
    .string()
    .max(MAX_QUERY_CHARS)
    .superRefine((q, ctx) => {
      const words = searchWords(q, phones).length;
      if (words === 0) ctx.addIssue({ code: "custom", message: "q has no letter or digit to search for", params: { code: "no_words" } });
      if (words > MAX_QUERY_WORDS)
        ctx.addIssue({
          code: "custom",
          message: `q has ${words} words; at most ${MAX_QUERY_WORDS} are searched together`,
          params: { code: "too_many_words" },
        });
    })
    .optional()
    .openapi({
      example: "pat elm",
      description: `Words to find (${fields}), each as the start of a word, in any case and with or without accents; every word must match. At most ${MAX_QUERY_CHARS} characters and ${MAX_QUERY_WORDS} words (beyond: a 422 naming q). Combines with every other filter, the sort and the cursor. A broad search (its longest word starts words of more than ${HITS_WINDOW} records) examines at most ${WALK_BUDGET} rows of the list per page: a page may then hold fewer than \`limit\` items while \`hasMore\` is true (follow \`nextCursor\` for the rest), and \`pagination.total\` counts the matches among the list's first ${WALK_BUDGET + 1} rows in its sort, a lower bound when \`pagination.totalExact\` is false. An export holds every match.`,
    });

export const searchOf = (kind: SearchKind, q: string | undefined): Search | null =>
  q === undefined ? null : { kind, words: searchWords(q, kind === "contact") };

/**
 * The words and the sort as a total's cache key: "Patel" and "patel" count once; a broad search counts its matches
 * among the list's first rows in its order (`searchCount`), so each sort has its own.
 */
export const searchKey = (search: Search | null, sort: SortKey[]) =>
  search ? JSON.stringify([...search.words.map((w) => w.join("|")).sort(), sortSignature(sort)]) : undefined;

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

/** The condition that a record of `alias` has every word of `search` (a single record's test: a smart list's match). */
export const searchWhere = (alias: string, search: Search): Where => matchesAll(alias, search, search.words);

const joined = (w: Where) => (w.sql.length ? w.sql.join(" AND ") : "1");
const allOf = (wheres: Where[]): Where => ({ sql: wheres.flatMap((w) => w.sql), params: wheres.flatMap((w) => w.params) });

/**
 * The page of a searched list: `limit + 1` rows of `table` (aliased `alias`) matching every `wheres` (organization,
 * filters, cursor) and the search, in `order` (`fallback`: the same order with its index out of the choice). One
 * statement, two plans, as `pageSql` (keyset.ts) has:
 * - selective, the lead word's records at most HITS_WINDOW: each looked up by id, tested on the other words and
 *   filters, sorted; the cost follows the matches, not the organization (50 of 100,000 cost what 50 of 1,000 do);
 * - broad (a word of one letter): the list's first WALK_BUDGET rows from the cursor on, in order, each tested on
 *   every word, stopping after `limit + 1` matches (a co-routine under the LIMIT). When the budget runs out first,
 *   the window's last row and the one after it come too, marked `window_end` (keyset.ts `keysetPage`): the page then
 *   holds the matches found, and its cursor resumes after the last row examined, so following cursors still visits
 *   every match once, in order, a bounded step at a time.
 * The lead's records are counted up to HITS_WINDOW + 1 only; an arm not taken has LIMIT 0, which SQLite skips before
 * opening any index.
 */
export function searchPageSql(
  table: string,
  alias: string,
  organizationId: string,
  search: Search,
  wheres: Where[],
  order: { probe: string; fallback: string },
  limit: number,
): { sql: string; params: unknown[] } {
  const take = limit + 1;
  const where = allOf(wheres);
  const { lead, rest } = split(search);
  const hits = hitsSql(organizationId, search, lead, HITS_WINDOW + 1);
  const others = matchesAll(alias, search, rest);
  const every = matchesAll(alias, search, search.words);
  const byHits = joined({ sql: [...where.sql, ...others.sql], params: [] });
  const broad = `(SELECT COUNT(*) FROM hits) > ${HITS_WINDOW}`;
  // `list` is read twice (the walk, the window's end), each time as a co-routine, its parameters bound once: D1 binds
  // at most 100 values a statement, and the filters and cursor may hold dozens.
  return {
    sql: `WITH hits AS MATERIALIZED (${hits.sql}),
      list AS NOT MATERIALIZED (SELECT ${alias}.* FROM ${table} ${alias} WHERE ${joined(where)} ORDER BY ${order.probe} LIMIT ${WALK_BUDGET + 1}),
      walk AS MATERIALIZED (SELECT ${alias}.* FROM (SELECT * FROM list LIMIT ${WALK_BUDGET}) ${alias} WHERE ${joined(every)}
        LIMIT (CASE WHEN ${broad} THEN ${take} ELSE 0 END))
      SELECT ${alias}.* FROM (
        SELECT * FROM (SELECT ${alias}.*, 0 AS ${WINDOW_END} FROM hits h CROSS JOIN ${table} ${alias} ON ${alias}.id = h.id WHERE ${byHits} ORDER BY ${order.fallback}
          LIMIT (CASE WHEN ${broad} THEN 0 ELSE ${take} END))
        UNION ALL
        SELECT *, 0 FROM walk
        UNION ALL
        SELECT * FROM (SELECT *, 1 FROM list LIMIT (CASE WHEN ${broad} AND (SELECT COUNT(*) FROM walk) < ${take} THEN 2 ELSE 0 END) OFFSET ${WALK_BUDGET - 1})
      ) ${alias} ORDER BY ${order.probe}`,
    params: [...hits.params, ...where.params, ...every.params, ...where.params, ...others.params],
  };
}

/**
 * What the total of a searched list counts (crm/list-totals.ts `resolveTotal`), a row of `total` and `exact`:
 * selective, every record of the lead word, looked up by id and tested like the page's, exactly; broad, the matches
 * among the list's first WALK_BUDGET + 1 rows in `order` (those the first page examines, and one more), exact only
 * when that is the whole list, else a lower bound. Either way independent of the cursor, so counted once per version
 * of the list. `wheres` hold the organization and the filters.
 */
export function searchCount(
  table: string,
  alias: string,
  organizationId: string,
  search: Search,
  wheres: Where[],
  order: string,
): { sql: string; params: unknown[] } {
  const where = allOf(wheres);
  const { lead, rest } = split(search);
  const hits = hitsSql(organizationId, search, lead, HITS_WINDOW + 1);
  const others = matchesAll(alias, search, rest);
  const every = matchesAll(alias, search, search.words);
  const broad = `(SELECT COUNT(*) FROM hits) > ${HITS_WINDOW}`;
  return {
    sql: `WITH hits AS MATERIALIZED (${hits.sql}),
      sample AS MATERIALIZED (SELECT ${joined(every)} AS hit FROM (SELECT ${alias}.* FROM ${table} ${alias} WHERE ${joined(where)} ORDER BY ${order}
        LIMIT (CASE WHEN ${broad} THEN ${WALK_BUDGET + 1} ELSE 0 END)) ${alias})
      SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM hits h CROSS JOIN ${table} ${alias} ON ${alias}.id = h.id WHERE ${joined({ sql: [...where.sql, ...others.sql], params: [] })}
                LIMIT (CASE WHEN ${broad} THEN 0 ELSE -1 END)))
           + (SELECT ifnull(SUM(hit), 0) FROM sample) AS total,
        (SELECT COUNT(*) FROM sample) <= ${WALK_BUDGET} AS exact`,
    params: [...hits.params, ...every.params, ...where.params, ...where.params, ...others.params],
  };
}
