import { type Count, countOf, driftingTotal, filterKey, resolveTotal, totalStatements } from "../crm/list-totals";
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
import { searchCount, searchKey, searchOf, searchPageSql, searchWhere } from "../crm/search";
import { hasRelativeBound, isRelativeBound, resolveDateBounds } from "../crm/date-bounds";
import type { ServiceContext } from "../service-context";
import { facetTotalStatement } from "./facets";
import { type ContactRow, toContact } from "./mapping";
import { loadIncludes, project } from "./includes";
import type { z } from "@hono/zod-openapi";
import { CONTACT_DATE_BOUNDS, type Contact, type ContactExportQuery, type ContactListQuery, type SortField } from "./schemas";

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
  // `none`: assigned to nobody (ids are generated, so no user is called that); contacts_org_assigned_idx serves both.
  if (q.assignedTo === "none") add("c.assigned_to IS NULL");
  else if (q.assignedTo) add("c.assigned_to = ?", q.assignedTo);
  // Served by the unique (organization_id, email_key) index.
  if (q.email) add("c.email_key = ?", q.email.toLowerCase());
  // leadScore bounds read the rank column (-1 for no score), so a leadScore sort seeks straight to the range in its
  // index; a contact without a score matches neither bound.
  if (q["leadScore[gte]"] !== undefined) add("c.lead_score_rank >= ?", q["leadScore[gte]"]);
  if (q["leadScore[lte]"] !== undefined) add("c.lead_score_rank BETWEEN 0 AND ?", q["leadScore[lte]"]);
  if (q["createdAt[gte]"]) add("c.created_at >= ?", q["createdAt[gte]"]);
  if (q["createdAt[lte]"]) add("c.created_at <= ?", q["createdAt[lte]"]);
  if (q.lastContactedAt === "never") add("c.last_contacted_at IS NULL");
  if (q["lastContactedAt[gte]"]) add("c.last_contacted_at >= ?", q["lastContactedAt[gte]"]);
  if (q["lastContactedAt[lte]"]) add("c.last_contacted_at <= ?", q["lastContactedAt[lte]"]);
  // An open task of the contact: a seek on tasks_org_contact_idx (organization_id, contact_id, completed) per contact.
  if (q.hasOpenTask)
    add(
      `${q.hasOpenTask === "true" ? "" : "NOT "}EXISTS (SELECT 1 FROM tasks t WHERE t.organization_id = c.organization_id AND t.contact_id = c.id AND t.completed = 0)`,
    );
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

/** The facet fields as contact_facet_counts stores them: nobody assigned is "" there. */
const facetFilters = (f: ReturnType<typeof totalFilters>) => (f.assignedTo === "none" ? { ...f, assignedTo: "" } : f);

/** `q` with its relative date bounds (`-P30D`) resolved at `now`, the one time the page and its total are read at. */
export const resolvedAt = <T extends Record<string, unknown>>(q: T, now: Date): T =>
  hasRelativeBound(q) ? resolveDateBounds(q, CONTACT_DATE_BOUNDS, now) : q;

/** The column and comparison of each date bound, for a relative one's drifting total. */
const BOUND_COLUMNS: Record<(typeof CONTACT_DATE_BOUNDS)[number], { column: string; op: ">=" | "<=" }> = {
  "createdAt[gte]": { column: "c.created_at", op: ">=" },
  "createdAt[lte]": { column: "c.created_at", op: "<=" },
  "lastContactedAt[gte]": { column: "c.last_contacted_at", op: ">=" },
  "lastContactedAt[lte]": { column: "c.last_contacted_at", op: "<=" },
};

/**
 * How the total of `q` is read: the statements to batch with the page, and what makes the figure of their rows. A total
 * over type/status/source/assignedTo is summed from the facet counts; another is the cached count of its filters,
 * counted once per contacts version (crm/list-totals.ts; a task's write moves that version too, for hasOpenTask). A
 * query with one relative date bound keeps its cached total as the bound moves (`driftingTotal`); with more than one,
 * or with `q`, it is counted on every read. `original`: the query before its bounds were resolved.
 */
async function totalPlan(ctx: ServiceContext, original: ContactListQuery, q: ContactListQuery, custom: CustomQuery | null) {
  const d1 = ctx.d1;
  const changing = totalFilters(q);
  const faceted = facetTotalStatement(d1, ctx.organizationId, facetFilters(changing));
  const where = filters(ctx.organizationId, q, custom);
  const search = searchOf("contact", q.q);
  const count = search
    ? searchCount("contacts", "c", ctx.organizationId, search, [where], orderBy(keysetOf(custom), q.sort ?? DEFAULT_SORT))
    : countOf("contacts c", where.sql.join(" AND "), where.params);
  const relative = CONTACT_DATE_BOUNDS.filter((k) => typeof original[k] === "string" && isRelativeBound(original[k]));
  const drifting = !faceted && !search && relative.length === 1 ? relative[0]! : null;
  if (!faceted && relative.length > 0 && !drifting) return uncachedPlan(d1, count, search);
  const key = faceted ? null : filterKey(totalFilters(drifting ? original : q));
  const totals = await totalStatements(d1, ctx.organizationId, "contacts", key);
  let cached = totals.statements[1]!;
  if (drifting) {
    const others = filters(ctx.organizationId, { ...q, [drifting]: undefined }, custom);
    const bound = { ...BOUND_COLUMNS[drifting], at: q[drifting] as string };
    const statement = driftingTotal(d1, ctx.organizationId, "contacts", totals.keyHash, bound, {
      sql: `contacts c WHERE ${others.sql.join(" AND ")}`,
      params: others.params,
    });
    // Too many values for the two range counts: counted on every read instead.
    if (statement) cached = statement;
    else return uncachedPlan(d1, count, search);
  }
  const statements = faceted ? [faceted] : [totals.statements[0]!, cached];
  const resolve = async (rows: D1Result[]): Promise<{ total: number; exact: boolean }> => {
    if (faceted) {
      const row = rows[0]!.results[0] as { total: number; exact?: number };
      return { total: row.total, exact: (row.exact ?? 1) === 1 };
    }
    return resolveTotal(
      d1,
      ctx.organizationId,
      "contacts",
      { hash: totals.keyHash, filtered: key !== null, asOf: drifting ? (q[drifting] as string) : undefined },
      { counter: rows[0]!.results, cached: rows[1]!.results },
      count,
    );
  };
  return { statements, resolve, search };
}

/** A total counted on every read, in the page's batch. */
function uncachedPlan(d1: D1Database | D1DatabaseSession, count: Count, search: ReturnType<typeof searchOf>) {
  return {
    statements: [d1.prepare(count.sql).bind(...count.params)],
    resolve: async (rows: D1Result[]) => {
      const row = rows[0]!.results[0] as { total: number; exact?: number };
      return { total: row.total, exact: (row.exact ?? 1) === 1 };
    },
    search,
  };
}

/**
 * GET /v1/contacts. One D1 round trip reads the page (limit + 1 rows, to know hasMore) and the total of these filters
 * (`totalPlan`). `q` searches names, e-mail, phones, notes and tags (crm/search.ts). Custom-field filters and sorts
 * read the definitions first (one more round trip, only for a query that has them). Relative date bounds are read at
 * `now`, the request's time.
 */
export async function listContacts(ctx: ServiceContext, query: ContactListQuery, now: Date = new Date()): Promise<ContactPage> {
  const q = resolvedAt(query, now);
  const custom = await customFieldQuery(ctx, "contact", "c", q, q.sort);
  const page = listSql(ctx.organizationId, q, custom);
  const plan = await totalPlan(ctx, query, q, custom);
  const [rows, ...totalRows] = await ctx.d1.batch([ctx.d1.prepare(page.sql).bind(...page.params), ...plan.statements]);
  const { total, exact } = await plan.resolve(totalRows);

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
      ...(plan.search ? { totalExact: exact } : {}),
      limit: page.limit,
    },
  };
}

/**
 * The totals of several contact queries at `now` (smart lists' counts): their statements in one D1 batch, then a
 * count only for a cached total that is out of date. Custom-field filters read their definitions once per query.
 */
export async function contactTotals(
  ctx: ServiceContext,
  queries: ContactListQuery[],
  now: Date,
): Promise<{ total: number; exact: boolean }[]> {
  const plans = await Promise.all(
    queries.map(async (query) => {
      const q = resolvedAt(query, now);
      return totalPlan(ctx, query, q, await customFieldQuery(ctx, "contact", "c", q, q.sort));
    }),
  );
  const statements = plans.flatMap((p) => p.statements);
  const rows = statements.length ? await ctx.d1.batch(statements) : [];
  let at = 0;
  return Promise.all(
    plans.map((p) => {
      const own = rows.slice(at, at + p.statements.length);
      at += p.statements.length;
      return p.resolve(own);
    }),
  );
}

/**
 * The statement answering whether contact `contactId` matches `q` at `now` (a row `{hit: 0|1}`): the list's own
 * filters and search on one row, looked up by its primary key.
 */
export function contactMatchSql(organizationId: string, q: ContactListQuery, custom: CustomQuery | null, contactId: string) {
  const where = filters(organizationId, q, custom);
  const search = searchOf("contact", q.q);
  const words = search ? searchWhere("c", search) : { sql: [], params: [] };
  return {
    sql: `SELECT EXISTS (SELECT 1 FROM contacts c WHERE c.id = ? AND ${[...where.sql, ...words.sql].join(" AND ")}) AS hit`,
    params: [contactId, ...where.params, ...words.params],
  };
}

/** The WHERE of the contacts matching `q` (resolved) on alias `c`, search included: for a smart list's set-wise passes. */
export function contactWhere(organizationId: string, q: ContactListQuery, custom: CustomQuery | null): Where {
  const where = filters(organizationId, q, custom);
  const search = searchOf("contact", q.q);
  const words = search ? searchWhere("c", search) : { sql: [], params: [] };
  return { sql: [...where.sql, ...words.sql], params: [...where.params, ...words.params] };
}

/** What an export takes: the list's filters, `q`, sort (custom fields too) and its format; no page parameters or includes. */
export type ContactExportFilters = z.infer<typeof ContactExportQuery>;

/**
 * The pages of GET /v1/contacts/export: the list's own query (filters, `q`, sort) from `cursor`, `size` rows, without
 * the total or includes, so a page is one D1 query.
 */
export async function contactExportWalk(
  ctx: ServiceContext,
  query: ContactExportFilters,
): Promise<(cursor: string | null, size: number) => Promise<ExportPage>> {
  // Relative date bounds are read at the export's start: every page walks the same set.
  const q = resolvedAt(query, new Date());
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
