import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { createDb, type Db } from "../db/client";
import type { Env } from "../env";
import { OrganizationMoving } from "../lib/errors";
import { createLogger, loggableError } from "../lib/log";
import { inJsonList } from "../lib/sql";
import { portsOf, type ServiceContext } from "../service-context";
import { everyShard, shardDatabase } from "./bindings";
import { placementOf, type Placement } from "./directory";

/**
 * Tenant shards opened for work that has no request: a queue batch, a cron pass. Each is opened on its
 * primary (no D1 session: a consumer reads what the producer just wrote), next to the directory.
 */
export interface OpenShard {
  shard: number;
  db: Db;
  d1: D1Database;
  directory: Db;
}

export const openShardOf = (env: Env, shard: number, directory: Db = createDb(env.DB)): OpenShard => {
  const d1 = shardDatabase(env, shard);
  return { shard, db: createDb(d1), d1, directory };
};

/**
 * The shard of one organization, opened from its placement in the directory (the signing Durable Object, the mail
 * log); null for an organization the directory no longer knows. `fenced` says a move refuses its writes for now.
 */
export async function tenantOf(env: Env, organizationId: string): Promise<(Placement & OpenShard) | null> {
  const directory = createDb(env.DB);
  const placement = await placementOf(directory, organizationId);
  return placement ? { ...placement, ...openShardOf(env, placement.shard, directory) } : null;
}

export function openEveryShard(env: Env): OpenShard[] {
  const directory = createDb(env.DB);
  return everyShard(env).map(({ shard, db }) => ({ shard, db: createDb(db), d1: db, directory }));
}

/**
 * The context of work the system does for one organization on its shard (a consumer, a cron task): `db` is the
 * shard a caller opened for it, `d1` the same database for hand-written SQL, the directory beside it. `defer` is
 * required: work with no request passes a collector it awaits (lib/deferred.ts `withDeferred`) or `ctx.waitUntil`,
 * so a deferred publish is never dropped by a no-op.
 */
export function systemContext(env: Env, db: Db, organizationId: string, requestId: string, defer: ServiceContext["defer"]): ServiceContext {
  return {
    ...onShard(env, db),
    ...portsOf(env),
    log: createLogger({ requestId, organizationId }),
    organizationId,
    actor: { type: "system", userId: null },
    requestId,
    defer,
    env,
  };
}

/** The databases of work on one shard: the shard (`db`, and `d1` for hand-written SQL) and the directory. */
export const onShard = (env: Env, db: Db): Pick<ServiceContext, "db" | "d1" | "directory"> => ({
  db,
  d1: db.$client,
  directory: createDb(env.DB),
});

/**
 * A queue batch's items sorted by where their organization lives, with one directory read per organization (side
 * by side), never one per message: `byShard` to handle, `fenced` to retry once the move is done, `unknown` (an
 * organization the directory no longer knows: deleted, or a message naming none) to drop.
 */
export interface Routing<T> {
  byShard: { shard: OpenShard; items: T[] }[];
  fenced: T[];
  unknown: T[];
}

export async function routeToShards<T>(env: Env, items: T[], organizationOf: (item: T) => string | null): Promise<Routing<T>> {
  const directory = createDb(env.DB);
  const orgIds = [...new Set(items.map(organizationOf).filter((id): id is string => id !== null))];
  const placements = new Map<string, Placement | null>(
    await Promise.all(orgIds.map(async (id) => [id, await placementOf(directory, id)] as const)),
  );
  const routing: Routing<T> = { byShard: [], fenced: [], unknown: [] };
  const shards = new Map<number, { shard: OpenShard; items: T[] }>();
  for (const item of items) {
    const orgId = organizationOf(item);
    const placement = orgId === null ? null : placements.get(orgId);
    if (!placement) routing.unknown.push(item);
    else if (placement.fenced) routing.fenced.push(item);
    else {
      let group = shards.get(placement.shard);
      if (!group) shards.set(placement.shard, (group = { shard: openShardOf(env, placement.shard, directory), items: [] }));
      group.items.push(item);
    }
  }
  routing.byShard = [...shards.values()];
  return routing;
}

/**
 * Runs `task` on every shard, side by side; one shard's failure is logged and never stops the others (a shard that
 * is down, or a statement refused because one of its organizations is moving: the next pass takes it up).
 */
export async function onEveryShard<R>(env: Env, name: string, task: (shard: OpenShard) => Promise<R>): Promise<(R | undefined)[]> {
  return Promise.all(
    openEveryShard(env).map((shard) =>
      task(shard).catch((err) => {
        const level = OrganizationMoving.raisedBy(err) ? "warn" : "error";
        createLogger()[level]("cron task failed on a shard; next pass retries", {
          task: name,
          shard: shard.shard,
          error: loggableError(err),
        });
        return undefined;
      }),
    ),
  );
}

/**
 * The organizations of rows named by id alone (queue messages sent before messages named their organization): each
 * shard is asked for the ids it holds, one query per shard, side by side. Never on a request path.
 */
export async function organizationsOfIds(
  env: Env,
  table: SQLiteTable,
  columns: { id: SQLiteColumn; organizationId: SQLiteColumn },
  ids: string[],
): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const found = await Promise.all(
    openEveryShard(env).map(({ db }) =>
      db.select({ id: columns.id, organizationId: columns.organizationId }).from(table).where(inJsonList(columns.id, ids)),
    ),
  );
  return new Map(found.flat().map((r) => [r.id as string, r.organizationId as string]));
}
