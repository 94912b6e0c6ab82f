import type { ExportPage } from "../crm/export";
import {
  afterCursor,
  cursorShapedLike,
  fitsOneStatement,
  type KeysetTable,
  keysetPage,
  orderBy,
  pageSql,
  type SortKey,
  type Where,
} from "../crm/keyset";
import { countOf, filterKey, resolveTotal, totalStatements } from "../crm/list-totals";
import { customFieldQuery, type CustomQuery, type CustomSortField } from "../crm/custom-fields";
import { searchCount, searchKey, searchOf, searchPageSql } from "../crm/search";
import type { Pagination } from "../crm/body";
import type { z } from "@hono/zod-openapi";
import type { ServiceContext } from "../service-context";
import { boundsBox, boxSql, radiusBox, radiusSql } from "./geo";
import { fromRow, today } from "./mapping";
import type { Property, PropertyExportQuery, PropertyListQuery, SortField } from "./schemas";
import { present } from "./present";

type Row = Record<string, unknown>;

/** Sort fields as SQL, each served by an index led by organization_id and ending in id (db/properties.ts). */
const KEYSET: KeysetTable<SortField, Row> = {
  id: "p.id",
  sql: { createdAt: "p.created_at", updatedAt: "p.updated_at", listPrice: "p.list_price", listDate: "p.list_date" },
  value: {
    createdAt: (r) => r.created_at as string,
    updatedAt: (r) => r.updated_at as string,
    listPrice: (r) => r.list_price as number,
    listDate: (r) => r.list_date as string,
  },
  rowId: (r) => r.id as string,
};
export const DEFAULT_SORT: SortKey<SortField | CustomSortField>[] = [{ field: "createdAt", direction: "desc" }];
const keysetOf = (custom: CustomQuery | null) =>
  custom ? custom.keyset(KEYSET) : (KEYSET as KeysetTable<SortField | CustomSortField, Row>);
const DAY_MS = 86_400_000;

/** The filters of the WHERE clause (beside the organization); the same for the page and for the total. */
function filters(q: PropertyListQuery, now: Date, custom: CustomQuery | null): Where {
  const w: Where = { sql: [], params: [] };
  const add = (clause: string, ...params: unknown[]) => {
    w.sql.push(clause);
    w.params.push(...params);
  };
  if (q.propertyType) add("p.property_type = ?", q.propertyType);
  if (q.status) add("p.status = ?", q.status);
  if (q.city) add("p.city = ? COLLATE NOCASE", q.city);
  if (q.state) add("p.state = ? COLLATE NOCASE", q.state);
  if (q.zipCode) add("p.zip_code = ?", q.zipCode);
  if (q["bedrooms[gte]"] !== undefined) add("p.bedrooms >= ?", q["bedrooms[gte]"]);
  if (q["bathrooms[gte]"] !== undefined) add("p.bathrooms >= ?", q["bathrooms[gte]"]);
  if (q["squareFootage[gte]"] !== undefined) add("p.square_footage >= ?", q["squareFootage[gte]"]);
  if (q["listPrice[gte]"] !== undefined) add("p.list_price >= ?", q["listPrice[gte]"]);
  if (q["listPrice[lte]"] !== undefined) add("p.list_price <= ?", q["listPrice[lte]"]);
  const dom = q["daysOnMarket[lte]"];
  // On the market the count runs from listDate, so "at most N days" is a listDate bound; off it the count is frozen.
  if (dom !== undefined)
    add("((p.off_market_days IS NULL AND p.list_date >= ?) OR p.off_market_days <= ?)", today(new Date(now.getTime() - dom * DAY_MS)), dom);
  for (const flag of ["waterfront", "pool", "garage"] as const) if (q[flag] !== undefined) add(`p.${flag} = ?`, q[flag] ? 1 : 0);
  if (q.bounds) {
    const box = boxSql("p", boundsBox(q.bounds));
    add(box.sql, ...box.params);
  }
  if (q.radius) {
    const box = boxSql("p", radiusBox(q.radius, q.radius.miles));
    const exact = radiusSql("p", q.radius, q.radius.miles);
    add(`${box.sql} AND ${exact.sql}`, ...box.params, ...exact.params);
  }
  if (custom) w.sql.push(...custom.where.sql), w.params.push(...custom.where.params);
  return w;
}

/** The organization, and the rows after the cursor. */
function scope(
  organizationId: string,
  q: PropertyListQuery,
  sort: SortKey<SortField | CustomSortField>[],
  custom: CustomQuery | null,
): Where {
  const w: Where = { sql: ["p.organization_id = ?"], params: [organizationId] };
  if (q.cursor) {
    const a = afterCursor(keysetOf(custom), sort, q.cursor);
    w.sql.push(...a.sql);
    w.params.push(...a.params);
  }
  return w;
}

/** `custom`: the query's custom-field filters and sorts (crm/custom-fields.ts `customFieldQuery`), when it has any. */
export function listSql(organizationId: string, q: PropertyListQuery, now = new Date(), custom: CustomQuery | null = null) {
  const sort = q.sort ?? DEFAULT_SORT;
  // A first page whose cursor could not lead to the next in one statement is refused now, not on the next page.
  if (!q.cursor) listSql(organizationId, { ...q, cursor: cursorShapedLike(sort) }, now, custom);
  const keyset = keysetOf(custom);
  const bounded = (
    {
      createdAt: false,
      updatedAt: false,
      listPrice: q["listPrice[gte]"] !== undefined || q["listPrice[lte]"] !== undefined,
      listDate: q["daysOnMarket[lte]"] !== undefined,
    } as Record<string, boolean>
  )[sort[0]!.field];
  // One zip code holds a few hundred listings at most: its indexes (by creation, by price) walk them in sort order.
  const order = { probe: orderBy(keyset, sort), fallback: orderBy(keyset, sort, !bounded), direct: q.zipCode !== undefined };
  const search = searchOf("property", q.q);
  if (search)
    return fitsOneStatement({
      sort,
      limit: q.limit,
      ...searchPageSql(
        "properties",
        "p",
        organizationId,
        search,
        [scope(organizationId, q, sort, custom), filters(q, now, custom)],
        { probe: order.probe, fallback: orderBy(keyset, sort, true) },
        q.limit,
      ),
    });
  return fitsOneStatement({
    sort,
    limit: q.limit,
    ...pageSql("properties p", "p", scope(organizationId, q, sort, custom), filters(q, now, custom), order, q.limit),
  });
}

/** The filters that change the total; a days-on-market bound moves with the date, so the date is part of its key. */
function totalKey(q: PropertyListQuery, now: Date): string | null {
  const { limit: _l, cursor: _c, sort, include: _i, q: text, ...filtersOnly } = q;
  const rest = { ...filtersOnly, q: searchKey(searchOf("property", text), sort ?? DEFAULT_SORT) };
  return filterKey(rest["daysOnMarket[lte]"] === undefined ? rest : { ...rest, on: today(now) });
}

/**
 * GET /v1/properties. One D1 round trip reads the page (limit + 1 rows, keyset.ts `pageSql`), the properties counter and the cached total
 * of these filters (crm/list-totals.ts); a filtered total is counted once per properties version. `q` searches the
 * address and the MLS id (crm/search.ts).
 */
export async function listProperties(
  ctx: ServiceContext,
  q: PropertyListQuery,
): Promise<{ data: Property[]; pagination: z.infer<typeof Pagination> }> {
  const now = new Date();
  const d1 = ctx.d1;
  const custom = await customFieldQuery(ctx, "property", "p", q, q.sort);
  const page = listSql(ctx.organizationId, q, now, custom);
  const key = totalKey(q, now);
  const totals = await totalStatements(d1, ctx.organizationId, "properties", key);
  const [rows, counter, cached] = await d1.batch([d1.prepare(page.sql).bind(...page.params), ...totals.statements]);
  const where = filters(q, now, custom);
  const search = searchOf("property", q.q);
  const { total, exact } = await resolveTotal(
    d1,
    ctx.organizationId,
    "properties",
    { hash: totals.keyHash, filtered: key !== null },
    { counter: counter!.results, cached: cached!.results },
    search
      ? searchCount(
          "properties",
          "p",
          ctx.organizationId,
          search,
          [{ sql: ["p.organization_id = ?"], params: [ctx.organizationId] }, where],
          orderBy(keysetOf(custom), page.sort),
        )
      : countOf("properties p", ["p.organization_id = ?", ...where.sql].join(" AND "), [ctx.organizationId, ...where.params]),
  );
  const { page: pageRows, hasMore, nextCursor } = keysetPage(keysetOf(custom), page.sort, rows!.results as Row[], page.limit);
  const include = q.include ?? [];
  const data = await present(ctx, pageRows.map(fromRow), include, include.includes("photos"));
  return { data, pagination: { hasMore, nextCursor, total, ...(search ? { totalExact: exact } : {}), limit: page.limit } };
}

/** The list's query without its page parameters and includes: what an export (crm/export.ts) takes. */
/** What an export takes: the list's filters, `q`, sort (custom fields too) and its format; no page parameters or includes. */
export type PropertyExportFilters = z.infer<typeof PropertyExportQuery>;

/**
 * One page of GET /v1/properties/export: the list's own query from `cursor`, `size` rows, no total, no includes and
 * no signed photo links (they expire; the photos' ids and keys are in the rows): one D1 query.
 */
export async function propertyExportWalk(
  ctx: ServiceContext,
  q: PropertyExportFilters,
  now = new Date(),
): Promise<(cursor: string | null, size: number) => Promise<ExportPage>> {
  // The custom-field filters and sorts, read once before the first page: a bad one is a 422 before the stream starts.
  const custom = await customFieldQuery(ctx, "property", "p", q, q.sort);
  // Sized before the first byte (listSql sizes a first page with a cursor too): too big for one statement is a 422, not a cut-off file.
  listSql(ctx.organizationId, { ...q, limit: 1 }, now, custom);
  return async (cursor, size) => {
    const page = listSql(ctx.organizationId, { ...q, limit: size, cursor: cursor ?? undefined }, now, custom);
    const { results } = await ctx.d1
      .prepare(page.sql)
      .bind(...page.params)
      .all<Row>();
    const { page: rows, nextCursor } = keysetPage(keysetOf(custom), page.sort, results, size);
    return { data: await present(ctx, rows.map(fromRow), [], false), nextCursor };
  };
}
