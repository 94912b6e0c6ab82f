import { sha256Hex } from "../lib/crypto";
import { decodeCursor, encodeCursor } from "../lib/cursor";
import type { ServiceContext } from "../platform/context";
import { type ContactRow, toContact } from "./mapping";
import { loadIncludes, project } from "./includes";
import type { Contact, ContactListQuery, SortKey } from "./schemas";

/** Sort fields as SQL expressions, each served by an index led by organization_id (src/db/contacts.ts). */
const SORT_SQL: Record<SortKey["field"], string> = {
  createdAt: "c.created_at",
  updatedAt: "c.updated_at",
  lastName: "c.last_name COLLATE NOCASE",
  leadScore: "c.lead_score_rank",
};
const SORT_VALUE: Record<SortKey["field"], (r: ContactRow) => string | number> = {
  createdAt: (r) => r.created_at,
  updatedAt: (r) => r.updated_at,
  lastName: (r) => r.last_name,
  leadScore: (r) => r.lead_score ?? -1,
};
export const DEFAULT_SORT: SortKey[] = [{ field: "createdAt", direction: "desc" }];
export const DEFAULT_LIMIT = 25;

interface Where {
  sql: string[];
  params: unknown[];
}

/** The filter part of the WHERE clause; the same for the page and for the total. */
function filters(organizationId: string, q: ContactListQuery): Where {
  const w: Where = { sql: ["c.organization_id = ?"], params: [organizationId] };
  const add = (clause: string, ...params: unknown[]) => {
    w.sql.push(clause);
    w.params.push(...params);
  };
  if (q.type) add("c.type = ?", q.type);
  if (q.status) add("c.status = ?", q.status);
  if (q.source) add("c.source = ?", q.source);
  if (q.assignedTo) add("c.assigned_to = ?", q.assignedTo);
  // leadScore bounds read the rank column (-1 for no score), so a leadScore sort seeks straight to the range in its
  // index; a contact without a score matches neither bound.
  if (q["leadScore[gte]"] !== undefined) add("c.lead_score_rank >= ?", q["leadScore[gte]"]);
  if (q["leadScore[lte]"] !== undefined) add("c.lead_score_rank BETWEEN 0 AND ?", q["leadScore[lte]"]);
  if (q["createdAt[gte]"]) add("c.created_at >= ?", q["createdAt[gte]"]);
  if (q["createdAt[lte]"]) add("c.created_at <= ?", q["createdAt[lte]"]);
  // A contact matches tags when it has every one of them (primary key lookups on contact_tags).
  for (const tag of new Set(q.tags ?? [])) add("EXISTS (SELECT 1 FROM contact_tags t WHERE t.contact_id = c.id AND t.tag = ?)", tag);
  return w;
}

/**
 * Rows after the cursor. With one direction throughout this is a row-value comparison, which SQLite turns into an
 * index range; mixed directions fall back to the expanded OR form.
 */
function after(sort: SortKey[], values: (string | number)[], id: string): Where {
  const keys = [...sort.map((s) => ({ expr: SORT_SQL[s.field], dir: s.direction })), { expr: "c.id", dir: sort[0]!.direction }];
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

export interface ContactPage {
  data: Partial<Contact>[];
  pagination: { hasMore: boolean; nextCursor: string | null; total: number; limit: number };
}

export function listSql(organizationId: string, q: ContactListQuery) {
  const sort = q.sort ?? DEFAULT_SORT;
  const limit = q.limit ?? DEFAULT_LIMIT;
  const signature = sort.map((s) => `${s.field}:${s.direction}`).join(",");
  const where = filters(organizationId, q);
  if (q.cursor) {
    const cursor = decodeCursor(q.cursor, signature, sort.length);
    const a = after(sort, cursor.values, cursor.id);
    where.sql.push(...a.sql);
    where.params.push(...a.params);
  }
  const order = [...sort.map((s) => `${SORT_SQL[s.field]} ${s.direction.toUpperCase()}`), `c.id ${sort[0]!.direction.toUpperCase()}`].join(", ");
  return {
    sort,
    limit,
    signature,
    sql: `SELECT c.* FROM contacts c WHERE ${where.sql.join(" AND ")} ORDER BY ${order} LIMIT ?`,
    params: [...where.params, limit + 1],
  };
}

/** The filters that change the total, canonical, so equal filters share one cached total. */
function filterKey(q: ContactListQuery): string | null {
  const { limit: _l, cursor: _c, sort: _s, include: _i, fields: _f, ...rest } = q;
  const entries = Object.entries(rest).filter(([, v]) => v !== undefined);
  if (entries.length === 0) return null;
  return JSON.stringify(entries.sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, Array.isArray(v) ? [...new Set(v)].sort() : v]));
}

/**
 * GET /v1/contacts. One D1 round trip reads the page (limit + 1 rows, to know hasMore), the organization's counters
 * and the cached total of these filters. The unfiltered total is the maintained counter; a filtered total is counted
 * once per contacts version and cached, so walking 400 pages counts once, not 400 times.
 */
export async function listContacts(ctx: ServiceContext, q: ContactListQuery): Promise<ContactPage> {
  const d1 = ctx.d1;
  const page = listSql(ctx.organizationId, q);
  const key = filterKey(q);
  const keyHash = key ? await sha256Hex(key) : "";
  const [rows, counters, cached] = await d1.batch([
    d1.prepare(page.sql).bind(...page.params),
    d1.prepare("SELECT contacts_total AS total, contacts_version AS version FROM contact_counters WHERE organization_id = ?").bind(ctx.organizationId),
    d1.prepare("SELECT version, total FROM contact_list_totals WHERE organization_id = ? AND filter_key = ?").bind(ctx.organizationId, keyHash),
  ]);
  const counter = (counters!.results[0] as { total: number; version: number } | undefined) ?? { total: 0, version: 0 };
  let total = counter.total;
  if (key) {
    const hit = cached!.results[0] as { version: number; total: number } | undefined;
    total = hit && hit.version === counter.version ? hit.total : await countAndCache(ctx, q, keyHash, counter.version);
  }

  const found = rows!.results as unknown as ContactRow[];
  const hasMore = found.length > page.limit;
  const pageRows = found.slice(0, page.limit);
  const last = pageRows.at(-1);
  const contacts = pageRows.map(toContact);
  await loadIncludes(ctx, contacts, q.include ?? []);
  return {
    data: contacts.map((c) => project(c, q.fields)),
    pagination: {
      hasMore,
      nextCursor: hasMore && last ? encodeCursor({ sort: page.signature, values: page.sort.map((s) => SORT_VALUE[s.field](last)), id: last.id }) : null,
      total,
      limit: page.limit,
    },
  };
}

/** Counts the filtered contacts and caches the figure under the version read before counting (never newer). */
async function countAndCache(ctx: ServiceContext, q: ContactListQuery, keyHash: string, version: number): Promise<number> {
  const where = filters(ctx.organizationId, q);
  const row = await ctx.d1.prepare(
    `INSERT INTO contact_list_totals (organization_id, filter_key, version, total)
     SELECT ?, ?, ?, COUNT(*) FROM contacts c WHERE ${where.sql.join(" AND ")}
     ON CONFLICT (organization_id, filter_key) DO UPDATE SET version = excluded.version, total = excluded.total
     RETURNING total`,
  )
    .bind(ctx.organizationId, keyHash, version, ...where.params)
    .first<{ total: number }>();
  return row?.total ?? 0;
}

/**
 * Cron pass: cached totals older than their organization's contacts version can never be read again (a write bumped
 * the version), so they are dropped; otherwise every distinct filter ever asked for would stay stored.
 */
export async function pruneStaleListTotals(d1: D1Database): Promise<number> {
  const res = await d1
    .prepare(
      `DELETE FROM contact_list_totals WHERE version < (
         SELECT c.contacts_version FROM contact_counters c WHERE c.organization_id = contact_list_totals.organization_id)`,
    )
    .run();
  return res.meta.changes ?? 0;
}
