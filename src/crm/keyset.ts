import { decodeCursor, encodeCursor } from "../lib/cursor";
import { Validation } from "../lib/errors";
import { pattern } from "../lib/validation";
import { csv } from "./list-query";

/**
 * Keyset pages of the CRM lists that sort on several fields (contacts, properties): the `sort` parameter, the ORDER BY,
 * the condition "after the cursor's row" and the next cursor, for any table whose sort fields map to SQL expressions
 * served by an index led by organization_id and ending in id.
 */
export type Direction = "asc" | "desc";
export interface SortKey<F extends string = string> {
  field: F;
  direction: Direction;
}

/**
 * `sort=field:direction,…` over `fields`; a field may appear once. `custom` also admits `customFields.<key>`
 * (crm/custom-fields.ts checks the key against the organization's definitions when the list runs).
 */
export const sortParam = <F extends string, C extends string = never>(
  fields: readonly F[],
  example: string,
  custom?: { pattern: string; description: string },
) => {
  const names = custom ? [...fields, custom.pattern] : fields;
  const listed = custom ? [...fields, "customFields.<key>"] : fields;
  return csv(
    pattern(
      new RegExp(`^(${names.join("|")})(:(asc|desc))?$`),
      "invalid_sort",
      `Use field:direction pairs with fields ${listed.join(", ")} and direction asc or desc`,
    ),
  )
    .transform((pairs) =>
      pairs.map((p: string): SortKey<F | C> => ({ field: p.split(":")[0] as F | C, direction: (p.split(":")[1] ?? "asc") as Direction })),
    )
    .refine((keys) => new Set(keys.map((k) => k.field)).size === keys.length, {
      message: "A field appears twice in sort",
      params: { code: "invalid_sort" },
    })
    .optional()
    .openapi({
      type: "string",
      example,
      description: `Fields ${listed.join(", ")}, each :asc or :desc; the first is served by an index${custom ? `. ${custom.description}` : ""}`,
    });
};

export interface KeysetTable<F extends string, Row> {
  /** The id column, as SQL (`c.id`). */
  id: string;
  /** Each sort field as an SQL expression. */
  sql: Record<F, string>;
  /** Each sort field's value in a raw row, for the next cursor. */
  value: Record<F, (row: Row) => string | number>;
  rowId: (row: Row) => string;
}

export interface Where {
  sql: string[];
  params: unknown[];
}

/** Rows of the sort's index a filtered page looks at first (see `pageSql`). */
export const PROBE_WINDOW = 2000;

/**
 * The page query of a keyset list: `limit + 1` rows of `from` (one table and its alias) matching `scope` (the
 * organization and the cursor) and `filters`, in `order`.
 *
 * D1 keeps no table statistics, so SQLite cannot tell a selective filter from a loose one: left to itself it may seek
 * on a filter's index and sort every match (a price bound over 100,000 listings, a radius around a dense city), where
 * walking the sort's own index and stopping after `limit + 1` matches reads a few hundred rows; or the other way round
 * for a rare value. So a filtered page is one statement with two plans: the probe walks the first PROBE_WINDOW rows of
 * the sort's index (scope only) and filters them; when that finds `limit + 1` matches they are the page (they are the
 * first in order), otherwise the fallback runs on the filters' indexes (`order.fallback` is the order with its index
 * taken out of the choice, unless a filter bounds the first sort field, whose index then serves both), which then
 * has few matches to sort. The fallback's LIMIT
 * is 0 when the probe sufficed: SQLite skips a query with LIMIT 0 before opening any index, where a WHERE term with a
 * subquery would be tested row by row. Same answer either way, one round trip.
 *
 * The probe reads only the row id and the columns its filters name (SQLite reads every column of a `t.*` subquery),
 * so an index that holds the sort and those columns serves the probe alone, without a table row per step.
 * `order.direct` skips the probe: a filter that is selective by nature and has an index in the sort's order (one zip
 * code) serves the page alone.
 */
export function pageSql(
  from: string,
  alias: string,
  scope: Where,
  filters: Where,
  order: { probe: string; fallback: string; direct?: boolean },
  limit: number,
): { sql: string; params: unknown[] } {
  const take = limit + 1;
  const scopeSql = scope.sql.join(" AND ");
  if (filters.sql.length === 0)
    return { sql: `SELECT ${alias}.* FROM ${from} WHERE ${scopeSql} ORDER BY ${order.probe} LIMIT ${take}`, params: scope.params };
  const filterSql = filters.sql.join(" AND ");
  if (order.direct)
    return {
      sql: `SELECT ${alias}.* FROM ${from} WHERE ${scopeSql} AND ${filterSql} ORDER BY ${order.probe} LIMIT ${take}`,
      params: [...scope.params, ...filters.params],
    };
  const columns = [
    ...new Set(Array.from(filterSql.matchAll(new RegExp(`\\b${alias}\\.([a-z_][a-z0-9_]*)`, "g")), (m) => `${alias}.${m[1]}`)),
  ];
  return {
    sql: `WITH probe AS MATERIALIZED (
        SELECT probe_rowid FROM (SELECT ${alias}.rowid AS probe_rowid, ${columns.join(", ")} FROM ${from} WHERE ${scopeSql} ORDER BY ${order.probe} LIMIT ${PROBE_WINDOW}) ${alias}
        WHERE ${filterSql} LIMIT ${take})
      SELECT ${alias}.* FROM (
        SELECT ${alias}.* FROM ${from} WHERE ${alias}.rowid IN (SELECT probe_rowid FROM probe) AND (SELECT COUNT(*) FROM probe) = ${take}
        UNION ALL
        SELECT * FROM (SELECT ${alias}.* FROM ${from} WHERE ${scopeSql} AND ${filterSql} ORDER BY ${order.fallback}
          LIMIT (CASE WHEN (SELECT COUNT(*) FROM probe) < ${take} THEN ${take} ELSE 0 END))
      ) ${alias} ORDER BY ${order.probe}`,
    params: [...scope.params, ...filters.params, ...scope.params, ...filters.params],
  };
}

/** The sort's signature, which a cursor carries so that one made for another sort is refused. */
export const sortSignature = (sort: SortKey[]): string => sort.map((s) => `${s.field}:${s.direction}`).join(",");

/**
 * ORDER BY of a sort, with the id last as the tie-breaker. `unindexed` puts a unary `+` before each term (same order),
 * so that SQLite does not pick the sort's index to avoid sorting: the fallback of `pageSql`.
 */
export const orderBy = <F extends string>(t: KeysetTable<F, never>, sort: SortKey<F>[], unindexed = false): string =>
  [
    ...sort.map((s) => `${unindexed ? "+" : ""}${t.sql[s.field]} ${s.direction.toUpperCase()}`),
    `${unindexed ? "+" : ""}${t.id} ${sort[0]!.direction.toUpperCase()}`,
  ].join(", ");

/**
 * Rows after the cursor. With one direction throughout this is a row-value comparison, which SQLite turns into an
 * index range; mixed directions fall back to the expanded OR form.
 */
export function afterCursor<F extends string>(t: KeysetTable<F, never>, sort: SortKey<F>[], cursor: string): Where {
  const { values, id } = decodeCursor(cursor, sortSignature(sort), sort.length);
  const keys = [...sort.map((s) => ({ expr: t.sql[s.field], dir: s.direction })), { expr: t.id, dir: sort[0]!.direction }];
  const vals = [...values, id];
  if (keys.every((k) => k.dir === keys[0]!.dir)) {
    const op = keys[0]!.dir === "asc" ? ">" : "<";
    return { sql: [`(${keys.map((k) => k.expr).join(", ")}) ${op} (${keys.map(() => "?").join(", ")})`], params: vals };
  }
  const ors: string[] = [];
  const params: unknown[] = [];
  keys.forEach((k, i) => {
    const eqs = keys.slice(0, i).map((p) => `${p.expr} = ?`);
    ors.push(`(${[...eqs, `${k.expr} ${k.dir === "asc" ? ">" : "<"} ?`].join(" AND ")})`);
    params.push(...vals.slice(0, i), vals[i]);
  });
  return { sql: [`(${ors.join(" OR ")})`], params };
}

/** D1 binds at most this many values in one statement (DESIGN.md). */
export const MAX_BOUND_VALUES = 100;

/**
 * A list's query must fit one D1 statement: its filters (tags, custom-field conditions), `q` and the cursor together.
 * Past the bound the request is a 422 saying so, not D1's "too many SQL variables" as a 500.
 */
export function fitsOneStatement<T extends { params: unknown[] }>(query: T): T {
  if (query.params.length > MAX_BOUND_VALUES) {
    const message = `These filters, q and the cursor together need ${query.params.length} values and one query takes at most ${MAX_BOUND_VALUES}: ask with fewer tags or custom-field conditions`;
    throw new Validation([{ field: "query", path: ["query"], code: "too_many_values", message }]);
  }
  return query;
}

/** A cursor of the sort's shape (any row's), to size a query before its first page: an export's later pages carry one. */
export const cursorShapedLike = (sort: SortKey[]): string =>
  encodeCursor({ sort: sortSignature(sort), values: sort.map(() => ""), id: "" });

/** The cursor of the row a page ends on. */
export const cursorAfter = <F extends string, Row>(t: KeysetTable<F, Row>, sort: SortKey<F>[], last: Row): string =>
  encodeCursor({ sort: sortSignature(sort), values: sort.map((s) => t.value[s.field](last)), id: t.rowId(last) });

/**
 * The column a page query that examines a bounded window of the list (crm/search.ts `searchPageSql`) adds: 0 on the
 * rows it found; 1 on the window's last row and the one after it, which come only when the window ran out before the
 * page filled.
 */
export const WINDOW_END = "window_end";

const isWindowEnd = (row: unknown) => (row as Record<string, unknown>)[WINDOW_END] === 1;
const unmarked = <Row>(row: Row): Row => {
  if (!(WINDOW_END in (row as object))) return row;
  const { [WINDOW_END]: _, ...rest } = row as Record<string, unknown>;
  return rest as Row;
};

/**
 * `limit + 1` rows fetched in sort order: the page, whether more follow, and the cursor to them. When a bounded
 * window ran out with rows after it (WINDOW_END), the page holds what it found and the cursor follows the window's last
 * row, found or not: a cursor encodes any row's sort key and id.
 */
export function keysetPage<F extends string, Row>(t: KeysetTable<F, Row>, sort: SortKey<F>[], rows: Row[], limit: number) {
  const found = rows.filter((r) => !isWindowEnd(r)).map(unmarked);
  const ends = rows.filter(isWindowEnd);
  const page = found.slice(0, limit);
  if (found.length <= limit && ends.length === 2) return { page, hasMore: true, nextCursor: cursorAfter(t, sort, ends[0]!) };
  const hasMore = found.length > limit;
  const last = page.at(-1);
  return { page, hasMore, nextCursor: hasMore && last ? cursorAfter(t, sort, last) : null };
}
