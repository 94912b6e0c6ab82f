import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { resourceCounters } from "../db/schema";
import type { Statement } from "../db/write";
import { sha256Hex } from "../lib/crypto";

/**
 * Totals of CRM lists without scans (contacts, properties …). The unfiltered total is a counter moved in every
 * create and delete batch; every write also moves the resource's version. A filtered total is counted once per
 * version and cached under the hash of its canonical filters, so walking 400 pages of a filter counts once, not 400
 * times, and a list request stays one round trip when the cached total is current.
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
export async function totalStatements(d1: D1Database | D1DatabaseSession, organizationId: string, resource: ListResource, key: string | null) {
  const keyHash = key ? await sha256Hex(key) : "";
  return {
    keyHash,
    statements: [
      d1.prepare("SELECT total, version FROM resource_counters WHERE organization_id = ? AND resource = ?").bind(organizationId, resource),
      d1.prepare("SELECT version, total FROM list_totals WHERE organization_id = ? AND resource = ? AND filter_key = ?").bind(organizationId, resource, keyHash),
    ],
  };
}

/**
 * The list total from the batched rows: the counter when unfiltered, the cached figure when it is of the current
 * version, else a count (cached under the version read before counting, never a newer one).
 */
export async function resolveTotal(
  d1: D1Database | D1DatabaseSession,
  organizationId: string,
  resource: ListResource,
  key: { hash: string; filtered: boolean },
  rows: { counter: unknown[]; cached: unknown[] },
  count: { from: string; where: string; params: unknown[] },
): Promise<number> {
  const counter = (rows.counter[0] as { total: number; version: number } | undefined) ?? { total: 0, version: 0 };
  if (!key.filtered) return counter.total;
  const hit = rows.cached[0] as { version: number; total: number } | undefined;
  if (hit && hit.version === counter.version) return hit.total;
  const row = await d1
    .prepare(
      `INSERT INTO list_totals (organization_id, resource, filter_key, version, total)
       SELECT ?, ?, ?, ?, COUNT(*) FROM ${count.from} WHERE ${count.where}
       ON CONFLICT (organization_id, resource, filter_key) DO UPDATE SET version = excluded.version, total = excluded.total
       RETURNING total`,
    )
    .bind(organizationId, resource, key.hash, counter.version, ...count.params)
    .first<{ total: number }>();
  return row?.total ?? 0;
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
