import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { resourceCounters } from "../db/schema";
import type { Statement } from "../db/write";
import { sha256Hex } from "../lib/crypto";
import { fitsOneStatement, MAX_BOUND_VALUES } from "./keyset";

/**
 * Totals of CRM lists without scans (contacts, properties …). The unfiltered total is a counter moved in every
 * create and delete batch; every write also moves the resource's version. A filtered total is counted once per
 * version and cached under the hash of its canonical filters, so walking 400 pages of a filter counts once, not 400
 * times, and a list request stays one round trip when the cached total is current. A count may be a lower bound (a
 * broad search's, crm/search.ts `searchCount`): the cache keeps whether it is exact.
 */
export type ListResource = "contacts" | "properties" | "deals";

/** The counter statement for a write's batch: `delta` moves the total, the version always moves. */
export const bumpResourceCounter = (db: Db, organizationId: string, resource: ListResource, delta: number): Statement =>
  db
    .insert(resourceCounters)
    .values({ organizationId, resource, total: Math.max(0, delta), version: 1 })
    .onConflictDoUpdate({
      target: [resourceCounters.organizationId, resourceCounters.resource],
      set: { total: sql`${resourceCounters.total} + ${delta}`, version: sql`${resourceCounters.version} + 1` },
    });

/**
 * For a write of tasks that may change which contacts have an open one: the contacts' version moves, since the contacts
 * filter hasOpenTask reads tasks and its cached totals are of a contacts version.
 */
export const tasksMoveContacts = (db: Db, organizationId: string): Statement => bumpResourceCounter(db, organizationId, "contacts", 0);

/** The filters that change a list's total, canonical (sorted keys, sorted set values), or null when none are set. */
export function filterKey(filters: Record<string, unknown>): string | null {
  const entries = Object.entries(filters).filter(([, v]) => v !== undefined);
  if (entries.length === 0) return null;
  return JSON.stringify(entries.sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, Array.isArray(v) ? [...new Set(v)].sort() : v]));
}

/** The two statements a list request batches with its page: the counter row and the cached total of its filters. */
export async function totalStatements(
  d1: D1Database | D1DatabaseSession,
  organizationId: string,
  resource: ListResource,
  key: string | null,
) {
  const keyHash = key ? await sha256Hex(key) : "";
  return {
    keyHash,
    statements: [
      d1.prepare("SELECT total, version FROM resource_counters WHERE organization_id = ? AND resource = ?").bind(organizationId, resource),
      d1
        .prepare("SELECT version, total, exact FROM list_totals WHERE organization_id = ? AND resource = ? AND filter_key = ?")
        .bind(organizationId, resource, keyHash),
    ],
  };
}

/** A count statement for `resolveTotal`: one row of `total` and `exact`. */
export interface Count {
  sql: string;
  params: unknown[];
}

/** The exact count of the rows of `from` (a table and its alias, or a join) matching `where`. */
export const countOf = (from: string, where: string, params: unknown[]): Count => ({
  sql: `SELECT COUNT(*) AS total, 1 AS exact FROM ${from} WHERE ${where}`,
  params,
});

/**
 * The list total from the batched rows: the counter when unfiltered, the cached figure when it is of the current
 * version, else `count`'s (cached under the version read before counting, never a newer one). `exact` is false when
 * the total is a lower bound.
 */
export async function resolveTotal(
  d1: D1Database | D1DatabaseSession,
  organizationId: string,
  resource: ListResource,
  key: { hash: string; filtered: boolean; asOf?: string },
  rows: { counter: unknown[]; cached: unknown[] },
  count: Count,
): Promise<{ total: number; exact: boolean }> {
  const counter = (rows.counter[0] as { total: number; version: number } | undefined) ?? { total: 0, version: 0 };
  if (!key.filtered) return { total: counter.total, exact: true };
  const hit = rows.cached[0] as { version: number; total: number; exact: number } | undefined;
  if (hit && hit.version === counter.version) return { total: hit.total, exact: hit.exact === 1 };
  const asOf = key.asOf ?? null;
  fitsOneStatement({ params: [organizationId, resource, key.hash, counter.version, asOf, ...count.params] });
  // `WHERE true`: SQLite reads an ON after INSERT … SELECT … FROM as a join's unless a WHERE comes first.
  const row = await d1
    .prepare(
      `INSERT INTO list_totals (organization_id, resource, filter_key, version, as_of, total, exact)
       SELECT ?, ?, ?, ?, ?, n.total, n.exact FROM (${count.sql}) n WHERE true
       ON CONFLICT (organization_id, resource, filter_key) DO UPDATE SET version = excluded.version, as_of = excluded.as_of, total = excluded.total, exact = excluded.exact
       RETURNING total, exact`,
    )
    .bind(organizationId, resource, key.hash, counter.version, asOf, ...count.params)
    .first<{ total: number; exact: number }>();
  return { total: row?.total ?? 0, exact: (row?.exact ?? 1) === 1 };
}

/** A bound that moves with time: its column, its comparison, and the instant it stands at for this request. */
export interface DriftingBound {
  column: string;
  op: ">=" | "<=";
  at: string;
}

/**
 * The cached-total statement of a query with one relative date bound (`lastContactedAt[lte]=-P30D`), in place of
 * `totalStatements`' second one. A total cached at this version (`key` names the bound as written, so it stays one
 * entry as time goes) was counted with the bound at `as_of`; at a later instant the same rows are there (nothing wrote
 * since: the version has not moved), so the total now is that one plus the rows the bound's move took in, less those
 * it left behind: two counts over the range between the two instants (`others`: the query's other filters), a short
 * range of an index led by the bound's column rather than the whole organization. Answers no row when the cached total
 * is of another version: the caller counts in full (`resolveTotal` with `asOf`). Null when the statement would bind too
 * many values.
 */
export function driftingTotal(
  d1: D1Database | D1DatabaseSession,
  organizationId: string,
  resource: ListResource,
  keyHash: string,
  bound: DriftingBound,
  others: { sql: string; params: unknown[] },
) {
  const { column, op, at } = bound;
  // Rows a `<=` bound takes in moving from a to b (a < b): a < column <= b; a `>=` bound leaves a <= column < b.
  const between = (lo: string, hi: string) =>
    op === "<=" ? `${column} > ${lo} AND ${column} <= ${hi}` : `${column} >= ${lo} AND ${column} < ${hi}`;
  const rows = (range: string) => `(SELECT COUNT(*) FROM ${others.sql} AND ${range})`;
  const [forward, back] = op === "<=" ? ["+", "-"] : ["-", "+"];
  const params = [...others.params, at, ...others.params, at, organizationId, resource, keyHash, organizationId, resource];
  if (params.length > MAX_BOUND_VALUES) return null;
  return d1
    .prepare(
      `SELECT lt.version, lt.exact, lt.total ${forward} ${rows(between("lt.as_of", "?"))} ${back} ${rows(between("?", "lt.as_of"))} AS total
       FROM list_totals lt
       WHERE lt.organization_id = ? AND lt.resource = ? AND lt.filter_key = ? AND lt.as_of IS NOT NULL
         AND lt.version = (SELECT version FROM resource_counters WHERE organization_id = ? AND resource = ?)`,
    )
    .bind(...params);
}

/**
 * Cron pass: cached totals older than their resource's version can never be read again (a write moved the version),
 * so they go; otherwise every distinct filter ever asked for would stay stored.
 */
export async function pruneStaleListTotals(d1: D1Database): Promise<number> {
  const res = await d1
    .prepare(
      `DELETE FROM list_totals WHERE version < (
         SELECT c.version FROM resource_counters c WHERE c.organization_id = list_totals.organization_id AND c.resource = list_totals.resource)`,
    )
    .run();
  return res.meta.changes ?? 0;
}
