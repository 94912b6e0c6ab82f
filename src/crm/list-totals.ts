import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { resourceCounters } from "../db/schema";
import type { Statement } from "../db/write";
import { sha256Hex } from "../lib/crypto";
import { fitsOneStatement } from "./keyset";

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
  key: { hash: string; filtered: boolean },
  rows: { counter: unknown[]; cached: unknown[] },
  count: Count,
): Promise<{ total: number; exact: boolean }> {
  const counter = (rows.counter[0] as { total: number; version: number } | undefined) ?? { total: 0, version: 0 };
  if (!key.filtered) return { total: counter.total, exact: true };
  const hit = rows.cached[0] as { version: number; total: number; exact: number } | undefined;
  if (hit && hit.version === counter.version) return { total: hit.total, exact: hit.exact === 1 };
  fitsOneStatement({ params: [organizationId, resource, key.hash, counter.version, ...count.params] });
  // `WHERE true`: SQLite reads an ON after INSERT … SELECT … FROM as a join's unless a WHERE comes first.
  const row = await d1
    .prepare(
      `INSERT INTO list_totals (organization_id, resource, filter_key, version, total, exact)
       SELECT ?, ?, ?, ?, n.total, n.exact FROM (${count.sql}) n WHERE true
       ON CONFLICT (organization_id, resource, filter_key) DO UPDATE SET version = excluded.version, total = excluded.total, exact = excluded.exact
       RETURNING total, exact`,
    )
    .bind(organizationId, resource, key.hash, counter.version, ...count.params)
    .first<{ total: number; exact: number }>();
  return { total: row?.total ?? 0, exact: (row?.exact ?? 1) === 1 };
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
