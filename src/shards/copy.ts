import { getTableColumns, is, type SQL, sql } from "drizzle-orm";
import { getTableConfig, SQLiteAsyncDialect, SQLiteColumn } from "drizzle-orm/sqlite-core";
import { columnName, rowJson, storedColumns, valuesFromJson } from "../db/row-json";
import { shardFences, writeGuards } from "../db/schema";
import { isGuardFailure } from "../db/write";
import { Conflict } from "../lib/errors";
import type { MovedTable } from "./moved-tables";

/**
 * The two row-level steps of a shard move, each one bounded batch. Rows travel between the databases as
 * JSON text (db/row-json.ts); a key is the JSON array of a row's key columns, which is also the saved cursor.
 */

/** Rows read per batch: one read of each side and one write batch of at most a few statements. */
export const BATCH_ROWS = 100;
/** A JSON payload bound to one statement stays under this; a larger batch is split over several statements. */
const PAYLOAD_BYTES = 512 * 1024;

export type Key = (string | number | null)[];

/** Drizzle's SQL, rendered as db/client.ts would (snake_case), for D1 statements batched side by side. */
const dialect = new SQLiteAsyncDialect({ casing: "snake_case" });
const statement = (db: D1Database, query: SQL) => {
  const { sql: text, params } = dialect.sqlToQuery(query);
  return db.prepare(text).bind(...params);
};

interface Row {
  k: string;
  r: string;
}

const keyList = (t: MovedTable) => sql.join(t.key, sql`, `);
const after = (t: MovedTable, key: Key) =>
  sql`(${keyList(t)}) > (${sql.join(
    key.map((v) => sql`${v}`),
    sql`, `,
  )})`;
const upTo = (t: MovedTable, key: Key) =>
  sql`(${keyList(t)}) <= (${sql.join(
    key.map((v) => sql`${v}`),
    sql`, `,
  )})`;

async function readRows(db: D1Database, t: MovedTable, organizationId: string, where: SQL[], limit?: number): Promise<Row[]> {
  const bounded = limit === undefined ? sql`` : sql` LIMIT ${limit}`;
  return (
    await statement(
      db,
      sql`SELECT json_array(${keyList(t)}) AS k, ${rowJson(t.table)} AS r FROM ${t.table} WHERE ${sql.join([t.of(organizationId), ...where], sql` AND `)} ORDER BY ${keyList(t)}${bounded}`,
    ).all<Row>()
  ).results;
}

/** JSON arrays of at most PAYLOAD_BYTES each (a single larger row goes alone). */
function chunks(items: string[]): string[] {
  const out: string[] = [];
  let current: string[] = [];
  let size = 0;
  for (const item of items) {
    if (current.length > 0 && size + item.length > PAYLOAD_BYTES) {
      out.push(`[${current.join(",")}]`);
      current = [];
      size = 0;
    }
    current.push(item);
    size += item.length + 1;
  }
  if (current.length > 0) out.push(`[${current.join(",")}]`);
  return out;
}

/**
 * The values of `t` that are unique across organizations on a shard: its walking key (ids, tokens, `(record_id, seq)`
 * of trash_rows) and its unique indexes (agent slugs, survey token hashes, webhook delivery keys), each unless it
 * holds the organization column. A copied row that takes such a value from another organization's row on the target
 * would make INSERT OR REPLACE delete that row; the batch refuses instead.
 */
function crossOrganizationUniques(t: MovedTable): { column: SQLiteColumn; key: string }[][] {
  const keyOf = new Map(Object.entries(getTableColumns(t.table) as Record<string, SQLiteColumn>).map(([key, c]) => [c, key]));
  const indexes = getTableConfig(t.table)
    .indexes.filter((i) => i.config.unique)
    .map((i) => i.config.columns.filter((c): c is SQLiteColumn => is(c, SQLiteColumn)));
  // A table without a primary key is walked in its first unique index: one guard for both.
  const sets = new Map([t.key, ...indexes].map((cols) => [cols.map(columnName).sort().join(), cols]));
  return [...sets.values()]
    .filter((cols) => cols.length > 0 && !cols.some((c) => columnName(c) === "organization_id"))
    .map((cols) => cols.map((column) => ({ column, key: keyOf.get(column)! })));
}

/**
 * A guard statement: fails the batch when a row of `payload` holds a key or unique value that a row on the target
 * holds and the organization does not own (`IS NOT 1`: a row whose owner cannot be told counts as another's).
 */
const collisionGuard = (t: MovedTable, organizationId: string, columns: { column: SQLiteColumn; key: string }[], payload: string) =>
  sql`INSERT INTO ${writeGuards} (failed) SELECT ${`key or unique value of ${t.name} held by another organization`} FROM json_each(${payload}) j WHERE EXISTS (SELECT 1 FROM ${t.table} WHERE ${sql.join(
    columns.map(({ column, key }) => sql`${column} = json_extract(j.value, ${`$.${key}`})`),
    sql` AND `,
  )} AND (${t.of(organizationId)}) IS NOT 1)`;

export interface SyncStep {
  /** The last key this batch covered; null once the table is done. */
  cursor: Key | null;
  written: number;
  deleted: number;
}

/**
 * Makes the target's rows of `t` for the organization equal the source's over the next BATCH_ROWS keys after
 * `cursor`: source rows missing or different on the target are written (INSERT OR REPLACE, so a row that took a
 * unique value another row of the organization held before is settled either way; a key or unique value held by
 * another organization's row refuses the batch, 409 `move_collision`: a move never replaces a row it does not own),
 * target rows of the range that the source no longer has are deleted. Idempotent: run again over the same range it
 * writes nothing. While the organization's writes go on (phase `copying`) a range may fall behind; the pass under the
 * fence (phase `fenced`) reads a source nothing writes.
 */
export async function syncBatch(
  source: D1Database,
  target: D1Database,
  t: MovedTable,
  organizationId: string,
  cursor: Key | null,
): Promise<SyncStep> {
  const from = cursor ? [after(t, cursor)] : [];
  const rows = await readRows(source, t, organizationId, from, BATCH_ROWS);
  const last = rows.length === BATCH_ROWS ? (JSON.parse(rows.at(-1)!.k) as Key) : null;
  const theirs = await readRows(target, t, organizationId, last ? [...from, upTo(t, last)] : from);
  const present = new Map(theirs.map((row) => [row.k, row.r]));
  const wanted = new Set(rows.map((row) => row.k));
  const stale = theirs.filter((row) => !wanted.has(row.k)).map((row) => row.k);
  const changed = rows.filter((row) => present.get(row.k) !== row.r).map((row) => row.r);
  const payloads = chunks(changed);
  const statements = [
    ...chunks(stale).map((keys) =>
      statement(
        target,
        sql`DELETE FROM ${t.table} WHERE ${t.of(organizationId)} AND (${keyList(t)}) IN (SELECT ${sql.raw(t.key.map((_, i) => `json_extract(value, '$[${i}]')`).join(", "))} FROM json_each(${keys}))`,
      ),
    ),
    ...crossOrganizationUniques(t).flatMap((columns) =>
      payloads.map((payload) => statement(target, collisionGuard(t, organizationId, columns, payload))),
    ),
    ...payloads.map((payload) =>
      statement(
        target,
        sql`INSERT OR REPLACE INTO ${t.table} (${sql.join(
          storedColumns(t.table).map(([, c]) => sql.identifier(columnName(c))),
          sql`, `,
        )}) SELECT ${valuesFromJson(t.table, "value")} FROM json_each(${payload})`,
      ),
    ),
  ];
  try {
    if (statements.length > 0) await target.batch(statements);
  } catch (err) {
    if (!isGuardFailure(err)) throw err;
    // Nothing was written; the move stays at this batch until the data is mended, then the same call goes on.
    throw new Conflict(
      `${t.name}: a row of the organization holds a key or unique value (an id, a slug, a token hash) that another organization's row holds on the target shard; the move stops at this batch`,
      "move_collision",
    );
  }
  return { cursor: last, written: changed.length, deleted: stale.length };
}

/**
 * Deletes up to BATCH_ROWS of the organization's rows of `t` from the shard it has left. The fence (db/shard-fences.ts)
 * refuses every other write there; `clearing` lets this batch's deletes through and is reset before the batch
 * commits, so no other statement ever runs with it set. True once the table holds none of them.
 */
export async function clearBatch(db: D1Database, t: MovedTable, organizationId: string): Promise<boolean> {
  const clearing = (on: 0 | 1) =>
    statement(
      db,
      sql`UPDATE ${shardFences} SET ${sql.identifier("clearing")} = ${on} WHERE ${shardFences.organizationId} = ${organizationId}`,
    );
  const [, deleted] = await db.batch([
    clearing(1),
    statement(
      db,
      sql`DELETE FROM ${t.table} WHERE rowid IN (SELECT rowid FROM ${t.table} WHERE ${t.of(organizationId)} LIMIT ${BATCH_ROWS})`,
    ),
    clearing(0),
  ]);
  return deleted!.meta.changes < BATCH_ROWS;
}
