import { countOf, filterKey, resolveTotal, totalStatements } from "../crm/list-totals";
import type { ExportPage } from "../crm/export";
import {
  afterCursor,
  cursorShapedLike,
  fitsOneStatement,
  type KeysetTable,
  keysetPage,
  orderBy,
  type SortKey,
  type Where,
} from "../crm/keyset";
import { customFieldQuery, type CustomQuery, type CustomSortField } from "../crm/custom-fields";
import { searchCount, searchKey, searchOf, searchPageSql } from "../crm/search";
import type { ServiceContext } from "../service-context";
import { facetTotalStatement } from "./facets";
import { type ContactRow, toContact } from "./mapping";
import { loadIncludes, project } from "./includes";
import type { z } from "@hono/zod-openapi";
import type { Contact, ContactExportQuery, ContactListQuery, SortField } from "./schemas";

/** Sort fields as SQL expressions, each served by an index led by organization_id (src/db/contacts.ts). */
const KEYSET: KeysetTable<SortField, ContactRow> = {
  id: "c.id",
  sql: { createdAt: "c.created_at", updatedAt: "c.updated_at", lastName: "c.last_name COLLATE NOCASE", leadScore: "c.lead_score_rank" },
  value: {
    createdAt: (r) => r.created_at,
    updatedAt: (r) => r.updated_at,
    lastName: (r) => r.last_name,
    leadScore: (r) => r.lead_score ?? -1,
  },
  rowId: (r) => r.id,
};
export const DEFAULT_SORT: SortKey<SortField | CustomSortField>[] = [{ field: "createdAt", direction: "desc" }];
export const DEFAULT_LIMIT = 25;

/** The filter part of the WHERE clause; the same for the page and for the total. */
function filters(organizationId: string, q: ContactListQuery, custom: CustomQuery | null): Where {
  const w: Where = { sql: ["c.organization_id = ?"], params: [organizationId] };
  const add = (clause: string, ...params: unknown[]) => {
    w.sql.push(clause);
    w.params.push(...params);
  };
  if (q.type) add("c.type = ?", q.type);
  if (q.status) add("c.status = ?", q.status);
  if (q.source) add("c.source = ?", q.source);
  if (q.assignedTo) add("c.assigned_to = ?", q.assignedTo);
  // Served by the unique (organization_id, email_key) index.
  if (q.email) add("c.email_key = ?", q.email.toLowerCase());
  // leadScore bounds read the rank column (-1 for no score), so a leadScore sort seeks straight to the range in its
  // index; a contact without a score matches neither bound.
  if (q["leadScore[gte]"] !== undefined) add("c.lead_score_rank >= ?", q["leadScore[gte]"]);
  if (q["leadScore[lte]"] !== undefined) add("c.lead_score_rank BETWEEN 0 AND ?", q["leadScore[lte]"]);
  if (q["createdAt[gte]"]) add("c.created_at >= ?", q["createdAt[gte]"]);
  if (q["createdAt[lte]"]) add("c.created_at <= ?", q["createdAt[lte]"]);
  // A contact matches tags when it has every one of them (primary key lookups on contact_tags).
  for (const tag of new Set(q.tags ?? [])) add("EXISTS (SELECT 1 FROM contact_tags t WHERE t.contact_id = c.id AND t.tag = ?)", tag);
  if (custom) w.sql.push(...custom.where.sql), w.params.push(...custom.where.params);
  return w;
}

export interface ContactPage {
  data: Partial<Contact>[];
  pagination: { hasMore: boolean; nextCursor: string | null; total: number; totalExact?: boolean; limit: number };
}

/** `custom`: the query's custom-field filters and sorts (crm/custom-fields.ts `customFieldQuery`), when it has any. */
export function listSql(organizationId: string, q: ContactListQuery, custom: CustomQuery | null = null) {
  const sort = q.sort ?? DEFAULT_SORT;
  const limit = q.limit ?? DEFAULT_LIMIT;
  // A first page whose cursor could not lead to the next in one statement is refused now, not on the next page.
  if (!q.cursor) listSql(organizationId, { ...q, cursor: cursorShapedLike(sort) }, custom);
  const where = filters(organizationId, q, custom);
  const keyset = keysetOf(custom);
  if (q.cursor) {
    const a = afterCursor(keyset, sort, q.cursor);
    where.sql.push(...a.sql);
    where.params.push(...a.params);
  }
  const search = searchOf("contact", q.q);
  if (search)
    return fitsOneStatement({
      sort,
      limit,
      ...searchPageSql(
        "contacts",
        "c",
        organizationId,
        search,
        [where],
        { probe: orderBy(keyset, sort), fallback: orderBy(keyset, sort, true) },
        limit,
      ),
    });
  return fitsOneStatement({
    sort,
    limit,
    sql: `SELECT c.* FROM contacts c WHERE ${where.sql.join(" AND ")} ORDER BY ${orderBy(keyset, sort)} LIMIT ?`,
    params: [...where.params, limit + 1],
  });
}

const keysetOf = (custom: CustomQuery | null) =>
  custom ? custom.keyset(KEYSET) : (KEYSET as KeysetTable<SortField | CustomSortField, ContactRow>);

/** The filters that change the total (`q` as its words: "Patel" and "patel" count once; with the sort, crm/search.ts `searchKey`). */
const totalFilters = ({ limit: _l, cursor: _c, sort, include: _i, fields: _f, q, ...rest }: ContactListQuery) => ({
  ...rest,
  q: searchKey(searchOf("contact", q), sort ?? DEFAULT_SORT),
});

/**
 * GET /v1/contacts. One D1 round trip reads the page (limit + 1 rows, to know hasMore), the contacts counter and the
 * total of these filters: summed from the facet counts when they filter on type, status, source and assignedTo only
 * (facets.ts), else the cached count (crm/list-totals.ts), counted once per contacts version. `q` searches names,
 * e-mail, phones, notes and tags (crm/search.ts). Custom-field filters and sorts read the definitions first (one more
 * round trip, only for a query that has them).
 */
export async function listContacts(ctx: ServiceContext, q: ContactListQuery): Promise<ContactPage> {
  const d1 = ctx.d1;
  const custom = await customFieldQuery(ctx, "contact", "c", q, q.sort);
  const page = listSql(ctx.organizationId, q, custom);
  const faceted = facetTotalStatement(d1, ctx.organizationId, totalFilters(q));
  const key = faceted ? null : filterKey(totalFilters(q));
  const totals = await totalStatements(d1, ctx.organizationId, "contacts", key);
  const [rows, counter, cached, facet] = await d1.batch([
    d1.prepare(page.sql).bind(...page.params),
    ...totals.statements,
    ...(faceted ? [faceted] : []),
  ]);
  const where = filters(ctx.organizationId, q, custom);
  const search = searchOf("contact", q.q);
  const { total, exact } = facet
    ? { total: (facet.results[0] as { total: number }).total, exact: true }
    : await resolveTotal(
        d1,
        ctx.organizationId,
        "contacts",
        { hash: totals.keyHash, filtered: key !== null },
        { counter: counter!.results, cached: cached!.results },
        search
          ? searchCount("contacts", "c", ctx.organizationId, search, [where], orderBy(keysetOf(custom), page.sort))
          : countOf("contacts c", where.sql.join(" AND "), where.params),
      );

  const {
    page: pageRows,
    hasMore,
    nextCursor,
  } = keysetPage(keysetOf(custom), page.sort, rows!.results as unknown as ContactRow[], page.limit);
  const contacts = pageRows.map(toContact);
  await loadIncludes(ctx, contacts, q.include ?? []);
  return {
    data: contacts.map((c) => project(c, q.fields)),
    pagination: {
      hasMore,
      nextCursor,
      total,
      ...(search ? { totalExact: exact } : {}),
      limit: page.limit,
    },
  };
}

/** What an export takes: the list's filters, `q`, sort (custom fields too) and its format; no page parameters or includes. */
export type ContactExportFilters = z.infer<typeof ContactExportQuery>;

/**
 * The pages of GET /v1/contacts/export: the list's own query (filters, `q`, sort) from `cursor`, `size` rows, without
 * the total or includes, so a page is one D1 query.
 */
export async function contactExportWalk(
  ctx: ServiceContext,
  q: ContactExportFilters,
): Promise<(cursor: string | null, size: number) => Promise<ExportPage>> {
  // The custom-field filters and sorts, read once before the first page: a bad one is a 422 before the stream starts.
  const custom = await customFieldQuery(ctx, "contact", "c", q, q.sort);
  // Sized before the first byte (listSql sizes a first page with a cursor too): too big for one statement is a 422, not a cut-off file.
  listSql(ctx.organizationId, { ...q, limit: 1 }, custom);
  return async (cursor, size) => {
    const page = listSql(ctx.organizationId, { ...q, limit: size, cursor: cursor ?? undefined }, custom);
    const { results } = await ctx.d1
      .prepare(page.sql)
      .bind(...page.params)
      .all<ContactRow>();
    const { page: rows, nextCursor } = keysetPage(keysetOf(custom), page.sort, results, size);
    return { data: rows.map((r) => project(toContact(r), q.fields)), nextCursor };
  };
}
