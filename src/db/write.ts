import { and, eq, type SQL, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { Conflict, PreconditionFailed } from "../lib/errors";
import type { Db } from "./client";
import { writeGuards } from "./schema";

/**
 * The write path every domain uses (docs/decisions/0002-compare-and-set-writes.md). D1 has no interactive transactions,
 * so a verb reads, decides, and then writes once with `db.batch`, which is atomic. Between the read and the batch
 * another request may have written the same rows; the batch therefore starts with guards (compare-and-set on the row's
 * `version`, or a row that must still exist) and a guard that fails aborts the whole batch: the change, its derived
 * rows (tag links, counters) and its events are written together or not at all. The verb then re-reads and re-applies
 * its change (`withRetries`), so independent concurrent changes all land and nothing is computed from a row that was
 * since replaced.
 *
 *   return withRetries(async () => {
 *     const before = await findThing(ctx, id);        // 404 when gone, also on a retry after a delete
 *     expectVersionMatch(ctx, before.version);        // If-Match
 *     const after = { ...apply(before, input), version: before.version + 1 };
 *     await commit(ctx, [expectVersion(ctx.db, THINGS, ctx.organizationId, before), update(after), ...derived], events);  // events/commit.ts
 *     return after;
 *   });
 */
export type Statement = BatchItem<"sqlite">;

/** A table whose rows carry `version`, bumped by every write of the row. */
export interface VersionedTable {
  table: SQLiteTable;
  id: SQLiteColumn;
  organizationId: SQLiteColumn;
  version: SQLiteColumn;
}

/** A guard failed: a row the write was computed from changed or went away after it was read. */
export class StaleWrite extends Error {
  constructor() {
    super("A row changed between read and write");
  }
}

const GUARD_CONSTRAINT = "write_guard_failed";

/** A statement that aborts its batch unless `condition` holds when it runs (the CHECK of `write_guards`). */
export const guard = (db: Db, condition: SQL): Statement => db.insert(writeGuards).select(sql`SELECT 'failed' WHERE NOT (${condition})`);

export const rowExists = (table: SQLiteTable, where: SQL | undefined): SQL => sql`EXISTS (SELECT 1 FROM ${table} WHERE ${where})`;

/** The row identified by `where` must (still) exist. */
export const expectRow = (db: Db, table: SQLiteTable, where: SQL | undefined): Statement => guard(db, rowExists(table, where));

/** No row may match `where` (an insert of a client-chosen key that must not have appeared meanwhile). */
export const expectNoRow = (db: Db, table: SQLiteTable, where: SQL | undefined): Statement =>
  guard(db, sql`NOT ${rowExists(table, where)}`);

/** This organization's row `id`, at exactly `version`. */
export const atVersion = (t: VersionedTable, organizationId: string, id: string | number, version: number): SQL =>
  and(eq(t.organizationId, organizationId), eq(t.id, id), eq(t.version, version))!;

/** The row must still be at the version that was read: the compare-and-set of a change to it. */
export const expectVersion = (
  db: Db,
  t: VersionedTable,
  organizationId: string,
  row: { id: string | number; version: number },
): Statement => expectRow(db, t.table, atVersion(t, organizationId, row.id, row.version));

/**
 * Several rows at once, each at the version that was read, in one statement whatever their number (the list is one
 * JSON parameter: D1 binds at most 100 values per statement).
 */
export function expectVersions(db: Db, t: VersionedTable, organizationId: string, rows: { id: string; version: number }[]): Statement {
  const list = JSON.stringify(rows.map((r) => [r.id, r.version]));
  return guard(
    db,
    sql`(SELECT COUNT(*) FROM ${t.table} JOIN json_each(${list}) j ON ${t.id} = json_extract(j.value, '$[0]') AND ${t.version} = json_extract(j.value, '$[1]')
         WHERE ${t.organizationId} = ${organizationId}) = ${rows.length}`,
  );
}

export function isGuardFailure(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) if (e.message.includes(GUARD_CONSTRAINT)) return true;
  return false;
}

/** Attempts of one verb before it gives up with a 409 the client may retry. */
export const MAX_WRITE_ATTEMPTS = 40;

/**
 * Runs a read-decide-commit `attempt` again whenever its commit lost a race (`StaleWrite`), after a short random
 * pause so that writers contending for one row spread out. Each lost race means another write won, so the loop ends;
 * the bound only keeps a request from spinning under extreme contention.
 */
export async function withRetries<T>(attempt: (n: number) => Promise<T>): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      if (!(err instanceof StaleWrite)) throw err;
      if (n >= MAX_WRITE_ATTEMPTS)
        throw new Conflict("The resource is being changed by other requests; try again", "concurrent_modification");
      await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(64, 2 ** n)));
    }
  }
}

/**
 * The caller's If-Match, checked against the version just read: a write the client made conditional on a version it
 * saw fails with 412 once the resource has moved on, instead of being re-applied.
 */
export function expectVersionMatch(ctx: { ifMatch?: "*" | number[] }, version: number): void {
  const expected = ctx.ifMatch;
  if (expected && expected !== "*" && !expected.includes(version)) throw new PreconditionFailed();
}

const VERSION = Symbol("version");

/**
 * Marks an object a verb returns with the version of the row it shows, for the route's ETag. The mark is a
 * non-enumerable symbol: JSON never carries it, and a spread copy (which may differ) does not inherit it.
 */
export function versioned<T extends object>(value: T, version: number): T {
  Object.defineProperty(value, VERSION, { value: version, enumerable: false });
  return value;
}

export const versionOf = (value: object): number | undefined => (value as { [VERSION]?: number })[VERSION];
