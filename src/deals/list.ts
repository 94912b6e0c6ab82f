import type { z } from "@hono/zod-openapi";
import type { Pagination } from "../crm/body";
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
import type { ServiceContext } from "../service-context";
import { fromRow } from "./mapping";
import type { Deal, DealExportQuery, DealListQuery, SortField } from "./schemas";
import { present } from "./present";

type Row = Record<string, unknown>;

/**
 * Sort fields as SQL, each served by an index led by organization_id and ending in id (db/deals.ts). A deal without a
 * closing date has "" there (first ascending, last descending), so the keyset never meets a NULL.
 */
const KEYSET: KeysetTable<SortField, Row> = {
  id: "d.id",
  sql: {
    createdAt: "d.created_at",
    updatedAt: "d.updated_at",
    amount: "d.amount",
    closingDate: "d.closing_date",
    probability: "d.probability",
  },
  value: {
    createdAt: (r) => r.created_at as string,
    updatedAt: (r) => r.updated_at as string,
    amount: (r) => r.amount as number,
    closingDate: (r) => r.closing_date as string,
    probability: (r) => r.probability as number,
  },
  rowId: (r) => r.id as string,
};
export const DEFAULT_SORT: SortKey<SortField | CustomSortField>[] = [{ field: "createdAt", direction: "desc" }];
const keysetOf = (custom: CustomQuery | null) =>
  custom ? custom.keyset(KEYSET) : (KEYSET as KeysetTable<SortField | CustomSortField, Row>);

/** The filters of the WHERE clause (beside the organization); the same for the page and for the total. */
function filters(q: DealListQuery, custom: CustomQuery | null): Where {
  const w: Where = { sql: [], params: [] };
  const add = (clause: string, ...params: unknown[]) => {
    w.sql.push(clause);
    w.params.push(...params);
  };
  if (q.type) add("d.type = ?", q.type);
  if (q.stage) add("d.stage = ?", q.stage);
  if (q.status) add("d.status = ?", q.status);
  if (q.assignedTo) add("d.assigned_to = ?", q.assignedTo);
  if (q["amount[gte]"] !== undefined) add("d.amount >= ?", q["amount[gte]"]);
  if (q["amount[lte]"] !== undefined) add("d.amount <= ?", q["amount[lte]"]);
  if (q["probability[gte]"] !== undefined) add("d.probability >= ?", q["probability[gte]"]);
  if (q["createdAt[gte]"] !== undefined) add("d.created_at >= ?", q["createdAt[gte]"]);
  if (q["closingDate[gte]"] !== undefined) add("d.closing_date >= ?", q["closingDate[gte]"].slice(0, 10));
  if (custom) w.sql.push(...custom.where.sql), w.params.push(...custom.where.params);
  return w;
}

/** The organization, and the rows after the cursor. */
function scope(organizationId: string, q: DealListQuery, sort: SortKey<SortField | CustomSortField>[], custom: CustomQuery | null): Where {
  const w: Where = { sql: ["d.organization_id = ?"], params: [organizationId] };
  if (q.cursor) {
    const a = afterCursor(keysetOf(custom), sort, q.cursor);
    w.sql.push(...a.sql);
    w.params.push(...a.params);
  }
  return w;
}

/** `custom`: the query's custom-field filters and sorts (crm/custom-fields.ts `customFieldQuery`), when it has any. */
export function listSql(organizationId: string, q: DealListQuery, custom: CustomQuery | null = null) {
  const sort = q.sort ?? DEFAULT_SORT;
  // A first page whose cursor could not lead to the next in one statement is refused now, not on the next page.
  if (!q.cursor) listSql(organizationId, { ...q, cursor: cursorShapedLike(sort) }, custom);
  const keyset = keysetOf(custom);
  const bounded = (
    {
      createdAt: q["createdAt[gte]"] !== undefined,
      updatedAt: false,
      amount: q["amount[gte]"] !== undefined || q["amount[lte]"] !== undefined,
      closingDate: q["closingDate[gte]"] !== undefined,
      probability: q["probability[gte]"] !== undefined,
    } as Record<string, boolean>
  )[sort[0]!.field];
  const order = { probe: orderBy(keyset, sort), fallback: orderBy(keyset, sort, !bounded) };
  const search = searchOf("deal", q.q);
  if (search)
    return fitsOneStatement({
      sort,
      limit: q.limit,
      ...searchPageSql(
        "deals",
        "d",
        organizationId,
        search,
        [scope(organizationId, q, sort, custom), filters(q, custom)],
        { probe: order.probe, fallback: orderBy(keyset, sort, true) },
        q.limit,
      ),
    });
  return fitsOneStatement({
    sort,
    limit: q.limit,
    ...pageSql("deals d", "d", scope(organizationId, q, sort, custom), filters(q, custom), order, q.limit),
  });
}

/**
 * GET /v1/deals. One D1 round trip reads the page (limit + 1 rows, keyset.ts `pageSql`), the deals counter and the cached total of these
 * filters (crm/list-totals.ts); a filtered total is counted once per deals version. Includes add a query each. `q`
 * searches titles (crm/search.ts).
 */
export async function listDeals(ctx: ServiceContext, q: DealListQuery): Promise<{ data: Deal[]; pagination: z.infer<typeof Pagination> }> {
  const d1 = ctx.d1;
  const custom = await customFieldQuery(ctx, "deal", "d", q, q.sort);
  const page = listSql(ctx.organizationId, q, custom);
  const { limit: _l, cursor: _c, sort: _s, include: _i, q: text, ...filtersOnly } = q;
  const search = searchOf("deal", text);
  const key = filterKey({ ...filtersOnly, q: searchKey(search, page.sort) });
  const totals = await totalStatements(d1, ctx.organizationId, "deals", key);
  const [rows, counter, cached] = await d1.batch([d1.prepare(page.sql).bind(...page.params), ...totals.statements]);
  const where = filters(q, custom);
  const { total, exact } = await resolveTotal(
    d1,
    ctx.organizationId,
    "deals",
    { hash: totals.keyHash, filtered: key !== null },
    { counter: counter!.results, cached: cached!.results },
    search
      ? searchCount(
          "deals",
          "d",
          ctx.organizationId,
          search,
          [{ sql: ["d.organization_id = ?"], params: [ctx.organizationId] }, where],
          orderBy(keysetOf(custom), page.sort),
        )
      : countOf("deals d", ["d.organization_id = ?", ...where.sql].join(" AND "), [ctx.organizationId, ...where.params]),
  );
  const { page: pageRows, hasMore, nextCursor } = keysetPage(keysetOf(custom), page.sort, rows!.results as Row[], page.limit);
  const data = await present(ctx, pageRows.map(fromRow), q.include ?? []);
  return { data, pagination: { hasMore, nextCursor, total, ...(search ? { totalExact: exact } : {}), limit: page.limit } };
}

/** The list's query without its page parameters and includes: what an export (crm/export.ts) takes. */
/** What an export takes: the list's filters, `q`, sort (custom fields too) and its format; no page parameters or includes. */
export type DealExportFilters = z.infer<typeof DealExportQuery>;

/** One page of GET /v1/deals/export: the list's own query from `cursor`, `size` rows, no total, no includes: one D1 query. */
export async function dealExportWalk(
  ctx: ServiceContext,
  q: DealExportFilters,
): Promise<(cursor: string | null, size: number) => Promise<ExportPage>> {
  // The custom-field filters and sorts, read once before the first page: a bad one is a 422 before the stream starts.
  const custom = await customFieldQuery(ctx, "deal", "d", q, q.sort);
  // Sized before the first byte (listSql sizes a first page with a cursor too): too big for one statement is a 422, not a cut-off file.
  listSql(ctx.organizationId, { ...q, limit: 1 }, custom);
  return async (cursor, size) => {
    const page = listSql(ctx.organizationId, { ...q, limit: size, cursor: cursor ?? undefined }, custom);
    const { results } = await ctx.d1
      .prepare(page.sql)
      .bind(...page.params)
      .all<Row>();
    const { page: rows, nextCursor } = keysetPage(keysetOf(custom), page.sort, results, size);
    return { data: await present(ctx, rows.map(fromRow), []), nextCursor };
  };
}
