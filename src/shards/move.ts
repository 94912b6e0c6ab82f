import { and, eq, isNull } from "drizzle-orm";
import { createDb, type Db } from "../db/client";
import { organizationShards, shardFences, shardMoves } from "../db/schema";
import type { Env } from "../env";
import { Conflict, NotFound, Validation } from "../lib/errors";
import { nowIso } from "../lib/time";
import { shardCount, shardDatabase } from "./bindings";
import { clearBatch, type Key, syncBatch } from "./copy";
import { MOVED_TABLES } from "./moved-tables";

/**
 * Moving an organization to another shard (docs/decisions/0009-moving-an-organization.md), as a state machine kept in
 * the directory's `shard_moves`:
 *
 * - `copying`: every table is brought in line on the target in bounded batches while the organization works as usual.
 * - the fence: the source shard refuses the organization's writes (its `shard_fences` row and triggers) and the
 *   directory marks it fenced, so requests answer 503 with Retry-After before they try; reads go on.
 * - `fenced`: the same pass again, over a source nothing writes, makes the target an exact copy.
 * - the flip: the directory names the target, unfenced, in one statement: the organization is always on exactly one
 *   shard, and its rows on the old one stay readable for requests that looked it up before.
 * - `flipped`: after a drain (requests that read the old placement finish), the old rows are deleted in batches. The
 *   fence row stays there as a tombstone, so a writer still holding the old placement is refused, never lost.
 * - `done`.
 *
 * The phase, the table and the last key done are saved after every batch; each save is a compare-and-set on what
 * the step read, so a run that crashed resumes at the batch it stopped at, and two runs at once cannot step back.
 */
export type MovePhase = (typeof shardMoves.$inferSelect)["phase"];
type MoveRow = typeof shardMoves.$inferSelect;

export interface MoveProgress {
  organizationId: string;
  from: number;
  to: number;
  phase: MovePhase;
  /** The table being worked on (copy order in copying/fenced, reverse order while deleting), null between. */
  table: string | null;
  tablesDone: number;
  tables: number;
  startedAt: string;
  updatedAt: string;
  finishedAt: string | null;
  /** While the old rows wait for reads that started before the flip: when their deletion may begin. */
  drainUntil: string | null;
}

export interface StepOptions {
  /** Stop starting batches after this long (a request's own budget). */
  budgetMs?: number;
  /** Stop after this many batches (tests: a crash after a known batch). */
  maxBatches?: number;
  /** How long the old rows stay readable after the flip. */
  drainMs?: number;
}

export const DEFAULT_DRAIN_MS = 10_000;
const TABLES = MOVED_TABLES.length;

const moveWhere = (row: MoveRow) =>
  and(
    eq(shardMoves.organizationId, row.organizationId),
    eq(shardMoves.phase, row.phase),
    eq(shardMoves.tableIndex, row.tableIndex),
    row.cursor === null ? isNull(shardMoves.cursor) : eq(shardMoves.cursor, row.cursor),
  );

export function progressOf(row: MoveRow): MoveProgress {
  const table =
    row.phase === "copying" || row.phase === "fenced"
      ? MOVED_TABLES[row.tableIndex]
      : row.phase === "flipped"
        ? MOVED_TABLES[TABLES - 1 - row.tableIndex]
        : undefined;
  const drainUntil =
    row.phase === "flipped" && row.cursor ? ((JSON.parse(row.cursor) as { drainUntil?: string }).drainUntil ?? null) : null;
  return {
    organizationId: row.organizationId,
    from: row.fromShard,
    to: row.toShard,
    phase: row.phase,
    table: table?.name ?? null,
    tablesDone: row.phase === "done" ? TABLES : Math.min(row.tableIndex, TABLES),
    tables: TABLES,
    startedAt: row.startedAt,
    updatedAt: row.updatedAt,
    finishedAt: row.finishedAt,
    drainUntil,
  };
}

export async function readMove(directory: Db, organizationId: string): Promise<MoveRow | null> {
  return (await directory.select().from(shardMoves).where(eq(shardMoves.organizationId, organizationId)).get()) ?? null;
}

/**
 * Starts the move of `organizationId` to shard `to`, or finds the one already under way to it (resume). 404 for an
 * organization the directory does not know, 400 for a shard this deployment does not bind, 409 when it already lives
 * there or a move elsewhere is under way.
 */
export async function startMove(env: Env, organizationId: string, to: number): Promise<MoveRow> {
  const directory = createDb(env.DB);
  if (!Number.isInteger(to) || to < 0 || to >= shardCount(env)) {
    throw new Validation([
      {
        field: "to",
        path: ["to"],
        code: "unknown_shard",
        message: `Shard ${to} does not exist: this deployment has shards 0 to ${shardCount(env) - 1}`,
      },
    ]);
  }
  const [placement, current] = await Promise.all([
    directory.select().from(organizationShards).where(eq(organizationShards.organizationId, organizationId)).get(),
    readMove(directory, organizationId),
  ]);
  if (!placement) throw new NotFound("Organization");
  if (current && current.phase !== "done") {
    if (current.toShard !== to)
      throw new Conflict(`A move of this organization to shard ${current.toShard} is under way`, "move_in_progress");
    return current;
  }
  // The same call again after the move it started finished (a retry, a second operator): done, not a conflict.
  if (placement.shard === to && current?.phase === "done" && current.toShard === to) return current;
  if (placement.shard === to) throw new Conflict(`The organization already lives on shard ${to}`, "already_on_shard");
  // A fence left by an earlier move away from the target would refuse the copy: the organization has no rows there.
  await createDb(shardDatabase(env, to)).delete(shardFences).where(eq(shardFences.organizationId, organizationId));
  const at = nowIso();
  const fresh = {
    organizationId,
    fromShard: placement.shard,
    toShard: to,
    phase: "copying" as const,
    tableIndex: 0,
    cursor: null,
    startedAt: at,
    updatedAt: at,
    finishedAt: null,
  };
  // Only over a finished move: of two starts at once, one writes and both go on with the same row.
  await directory
    .insert(shardMoves)
    .values(fresh)
    .onConflictDoUpdate({ target: shardMoves.organizationId, set: fresh, setWhere: eq(shardMoves.phase, "done") });
  const row = await readMove(directory, organizationId);
  if (!row || row.phase === "done") throw new Error(`the move of ${organizationId} was not recorded`);
  if (row.toShard !== to) throw new Conflict(`A move of this organization to shard ${row.toShard} is under way`, "move_in_progress");
  return row;
}

/** Runs batches of the move until it is done or the budget is spent; answers where it stands. */
export async function stepMove(env: Env, organizationId: string, options: StepOptions = {}): Promise<MoveProgress> {
  const directory = createDb(env.DB);
  const deadline = Date.now() + (options.budgetMs ?? 15_000);
  let batches = 0;
  for (;;) {
    const row = await readMove(directory, organizationId);
    if (!row) throw new NotFound("Move");
    if (row.phase === "done" || Date.now() >= deadline || batches >= (options.maxBatches ?? Infinity)) return progressOf(row);
    const next = await step(env, directory, row, options.drainMs ?? DEFAULT_DRAIN_MS);
    if (next === "waiting") return progressOf(row);
    batches++;
  }
}

/** One batch of `row`'s phase, saved as a compare-and-set on `row`. */
async function step(env: Env, directory: Db, row: MoveRow, drainMs: number): Promise<"stepped" | "waiting"> {
  const sourceD1 = shardDatabase(env, row.fromShard);
  const source = createDb(sourceD1);
  const target = shardDatabase(env, row.toShard);
  const save = (set: Partial<MoveRow>) =>
    directory
      .update(shardMoves)
      .set({ ...set, updatedAt: nowIso() })
      .where(moveWhere(row));
  const org = row.organizationId;

  if (row.phase === "copying" || row.phase === "fenced") {
    const table = MOVED_TABLES[row.tableIndex];
    if (table) {
      const done = await syncBatch(sourceD1, target, table, org, row.cursor === null ? null : (JSON.parse(row.cursor) as Key));
      await save(done.cursor ? { cursor: JSON.stringify(done.cursor) } : { tableIndex: row.tableIndex + 1, cursor: null });
    } else if (row.phase === "copying") {
      // The shard's fence first: from here no write of the organization lands on the source, whoever makes it. The
      // directory's mark then turns writes away at authentication (503) instead of at the shard.
      await source
        .insert(shardFences)
        .values({ organizationId: org, fencedAt: nowIso() })
        .onConflictDoUpdate({ target: shardFences.organizationId, set: { clearing: 0 } });
      await directory.batch([
        directory
          .update(organizationShards)
          .set({ fencedAt: nowIso() })
          .where(and(eq(organizationShards.organizationId, org), eq(organizationShards.shard, row.fromShard))),
        save({ phase: "fenced", tableIndex: 0, cursor: null }),
      ]);
    } else {
      // The target now equals a source nothing writes: the directory names it, unfenced, in the same batch.
      const drainUntil = new Date(Date.now() + drainMs).toISOString();
      await directory.batch([
        directory
          .update(organizationShards)
          .set({ shard: row.toShard, fencedAt: null })
          .where(and(eq(organizationShards.organizationId, org), eq(organizationShards.shard, row.fromShard))),
        save({ phase: "flipped", tableIndex: 0, cursor: JSON.stringify({ drainUntil }) }),
      ]);
    }
    return "stepped";
  }

  // flipped: the old rows, tables in reverse copy order, once reads that started on them have had time to finish.
  const drainUntil = row.cursor ? (JSON.parse(row.cursor) as { drainUntil?: string }).drainUntil : undefined;
  if (drainUntil && Date.now() < Date.parse(drainUntil)) return "waiting";
  const table = MOVED_TABLES[TABLES - 1 - row.tableIndex];
  if (table) {
    if (await clearBatch(sourceD1, table, org)) await save({ tableIndex: row.tableIndex + 1 });
    else await save({ updatedAt: nowIso() });
  } else {
    await save({ phase: "done", finishedAt: nowIso() });
  }
  return "stepped";
}
