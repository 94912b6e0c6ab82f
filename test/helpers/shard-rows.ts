import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { expect, vi } from "vitest";
import { createDb } from "../../src/db/client";
import { columnName, rowJson, storedColumns } from "../../src/db/row-json";
import { EVENT_CONSUMERS } from "../../src/queues";
import { shardDatabase } from "../../src/shards/bindings";
import { MOVED_TABLES, type MovedTable } from "../../src/shards/moved-tables";

/** Every row of the organization on `shard`, table by table, as the JSON of its stored columns, in key order. */
export async function snapshot(shard: number, organizationId: string): Promise<Record<string, string[]>> {
  const db = createDb(shardDatabase(env, shard));
  const out: Record<string, string[]> = {};
  for (const t of MOVED_TABLES) {
    const rows = await db.all<{ r: string }>(
      sql`SELECT ${rowJson(t.table)} AS r FROM ${t.table} WHERE ${t.of(organizationId)} ORDER BY ${sql.join(t.key, sql`, `)}`,
    );
    out[t.name] = rows.map((row) => row.r);
  }
  return out;
}

/** The moved tables that hold none of the organization's rows on `shard`: empty once every table is seeded. */
export const unseeded = async (shard: number, organizationId: string) =>
  Object.entries(await snapshot(shard, organizationId))
    .filter(([, rows]) => rows.length === 0)
    .map(([name]) => name);

export interface Seed {
  organizationId: string;
  /** Text of the row's other columns: `<tag>:<table>.<column>`. */
  tag: string;
  /** Text of its key columns (default `tag`): two organizations given the same `keys` hold rows with the same keys. */
  keys?: string;
  /** Every number column (a trash row's `seq`, an audit row's `seq` …). */
  n: number;
}

const byName = new Map(MOVED_TABLES.map((t) => [t.name, t]));

/** Text columns a CHECK limits to a few values: seeded with one of them. */
const CHECKED: Record<string, string> = { "users.role": "agent" };

function valueFor(t: MovedTable, column: SQLiteColumn, seed: Seed): unknown {
  const name = columnName(column);
  if (name === "organization_id") return seed.organizationId;
  if (Object.hasOwn(CHECKED, `${t.name}.${name}`)) return CHECKED[`${t.name}.${name}`];
  // A row scoped through a parent names the parent row seeded for the same organization.
  if (t.through?.column === name) {
    const parent = byName.get(t.through.parent)!;
    return valueFor(parent, storedColumns(parent.table).find(([, c]) => columnName(c) === t.through!.parentKey)![1], seed);
  }
  switch (column.getSQLType()) {
    case "integer":
      return seed.n;
    case "real":
      return seed.n + 0.5;
    case "blob":
      return new Uint8Array([seed.n, 0, 0, 0]).buffer;
    default:
      return `${t.key.includes(column) ? (seed.keys ?? seed.tag) : seed.tag}:${t.name}.${name}`;
  }
}

/**
 * One row of the organization in every moved table of `shard` (but `organizations`: its row is there already),
 * written with SQL from the schema alone, so a table the API reaches only deep inside a flow (a delivery attempt, a
 * referral key, an overage) has a row, and a table added later is seeded without a change here.
 */
export async function seedEveryTable(shard: number, seed: Seed): Promise<void> {
  const db = shardDatabase(env, shard);
  await db.batch(
    MOVED_TABLES.filter((t) => t.name !== "organizations").map((t) => {
      const columns = storedColumns(t.table).map(([, c]) => c);
      return db
        .prepare(
          `INSERT INTO "${t.name}" (${columns.map((c) => `"${columnName(c)}"`).join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
        )
        .bind(...columns.map((c) => valueFor(t, c, seed)));
    }),
  );
}

/**
 * Waits until every event the organization's writes staged is sent and handled by every consumer that takes it, so
 * nothing writes its rows behind a test that compares them.
 */
export async function eventsSettled(shard: number, organizationId: string): Promise<void> {
  const db = shardDatabase(env, shard);
  await vi.waitFor(
    async () => {
      const events = (
        await db
          .prepare("SELECT id, type, sent_at AS sentAt FROM outbox_events WHERE organization_id = ?")
          .bind(organizationId)
          .all<{ id: string; type: string; sentAt: string | null }>()
      ).results;
      const done = new Set(
        (
          await db
            .prepare(
              "SELECT p.consumer || ' ' || p.event_id AS k FROM processed_events p JOIN outbox_events e ON e.id = p.event_id WHERE e.organization_id = ? AND p.processed_at IS NOT NULL",
            )
            .bind(organizationId)
            .all<{ k: string }>()
        ).results.map((r) => r.k),
      );
      const pending = events.flatMap((e) => [
        ...(e.sentAt ? [] : [`${e.type} unsent`]),
        ...EVENT_CONSUMERS.filter((c) => c.accepts(e.type) && !done.has(`${c.name} ${e.id}`)).map((c) => `${e.type} ${c.name}`),
      ]);
      expect(pending).toEqual([]);
    },
    { timeout: 15_000, interval: 100 },
  );
}
