import { and, eq, getTableColumns, gt, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import { rowJson, tableName, valuesFromJson } from "../db/row-json";
import { type TrashKind, trashEntries, trashRows } from "../db/schema";
import { expectRow, type Statement } from "../db/write";
import { NotFound } from "../lib/errors";
import type { ServiceContext } from "../service-context";

/**
 * The trash's moves of CRM records (contacts, deals, properties): their rows into `trash_rows` on delete and back on
 * restore. Below the domains that delete (and the trash's own routes and purge), which all share them.
 */

/** How long a deleted record can be restored; the purge removes it after. */
export const RESTORE_DAYS = 30;
const DAY_MS = 86_400_000;

/**
 * Moves the rows of `table` matching `where` into `trash_rows` under `recordId`: the copy and the delete, two
 * statements for the write's batch. Each row is kept as the JSON object of its stored columns (`json_object` keeps
 * integers, reals, text and NULL apart), so `restoreRows` writes back the same values. Rows are numbered after the
 * record's rows already kept (an earlier statement of the batch), in the order they are read.
 */
export function archiveRows(ctx: ServiceContext, recordId: string, table: SQLiteTable, where: SQL | undefined): Statement[] {
  const kept = sql`(SELECT COALESCE(MAX(${trashRows.seq}), 0) FROM ${trashRows} WHERE ${trashRows.recordId} = ${recordId})`;
  return [
    ctx.db
      .insert(trashRows)
      .select(
        sql`SELECT ${ctx.organizationId}, ${recordId}, ${kept} + row_number() OVER (), ${tableName(table)}, ${rowJson(table)} FROM ${table} WHERE ${where}`,
      ),
    ctx.db.delete(table).where(where),
  ];
}

/** Writes the rows `archiveRows` kept for `recordId` from `table` back into it, in their original order. */
export function restoreRows(db: Db, recordId: string, table: SQLiteTable): Statement {
  return db
    .insert(table)
    .select(
      sql`SELECT ${valuesFromJson(table, "row")} FROM ${trashRows} WHERE ${trashRows.recordId} = ${recordId} AND ${trashRows.tableName} = ${tableName(table)} ORDER BY ${trashRows.seq}`,
    );
}

/** A kept row as the service's record type: each value through its column's own decoding (JSON, booleans). */
export function decodeRow<T>(table: SQLiteTable, json: string): T {
  const columns = getTableColumns(table) as Record<string, SQLiteColumn>;
  const raw = JSON.parse(json) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, column] of Object.entries(columns)) {
    const value = raw[key];
    out[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return out as T;
}

/**
 * The trash entry a delete writes in its batch: restorable for RESTORE_DAYS. `mergedInto`: the contact a merged
 * contact went into; such an entry is never restored (contacts/service.ts `restoreContact`).
 */
export function trashEntry(
  ctx: ServiceContext,
  kind: TrashKind,
  recordId: string,
  label: string,
  { now = new Date(), mergedInto }: { now?: Date; mergedInto?: string } = {},
): Statement {
  return ctx.db.insert(trashEntries).values({
    recordId,
    organizationId: ctx.organizationId,
    kind,
    state: "trashed",
    label,
    deletedAt: now.toISOString(),
    deletedBy: ctx.actor.userId ?? null,
    restorableUntil: new Date(now.getTime() + RESTORE_DAYS * DAY_MS).toISOString(),
    mergedInto: mergedInto ?? null,
  });
}

type Entry = typeof trashEntries.$inferSelect;

const restorable = (ctx: ServiceContext, kind: TrashKind, recordId: string, now: string) =>
  and(
    eq(trashEntries.recordId, recordId),
    eq(trashEntries.organizationId, ctx.organizationId),
    eq(trashEntries.kind, kind),
    eq(trashEntries.state, "trashed"),
    gt(trashEntries.restorableUntil, now),
  );

export interface Trashed<T> {
  entry: Entry;
  /** The record's own row as it was when deleted. */
  record: T;
}

/**
 * The trashed record a restore starts from, read with its entry in one round trip: 404 (as for an unknown id) when
 * it is not in this organization's trash, or no longer restorable (past its days, being purged, purged, erased).
 */
export async function readTrashed<T>(
  ctx: ServiceContext,
  kind: TrashKind,
  recordId: string,
  table: SQLiteTable,
  what: string,
): Promise<Trashed<T>> {
  const now = new Date().toISOString();
  const [entries, rows] = await ctx.db.batch([
    ctx.db
      .select()
      .from(trashEntries)
      .where(restorable(ctx, kind, recordId, now)),
    ctx.db
      .select({ row: trashRows.row })
      .from(trashRows)
      .where(and(eq(trashRows.recordId, recordId), eq(trashRows.tableName, tableName(table))))
      .limit(1),
  ]);
  const entry = entries[0];
  if (!entry || !rows[0]) throw new NotFound(what);
  return { entry, record: decodeRow<T>(table, rows[0].row) };
}

/**
 * The statements every restore starts and ends its batch with: the guard that the entry is still restorable (of
 * concurrent restores one commits; a purge that claimed it first wins), and the removal of the kept rows and the entry.
 */
export function restoreFrame(ctx: ServiceContext, kind: TrashKind, recordId: string): { guard: Statement; clear: Statement[] } {
  const now = new Date().toISOString();
  return {
    guard: expectRow(ctx.db, trashEntries, restorable(ctx, kind, recordId, now)),
    clear: [
      ctx.db.delete(trashRows).where(eq(trashRows.recordId, recordId)),
      ctx.db.delete(trashEntries).where(eq(trashEntries.recordId, recordId)),
    ],
  };
}
