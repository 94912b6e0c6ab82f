import type { Env } from "../env";

/**
 * The tenant shards a deployment has: the bindings DB_SHARD_0 … DB_SHARD_{n-1}, numbered without gaps
 * (scripts/migrate.mjs checks wrangler.toml). Only this module, the directory lookups and the move name a binding;
 * services get their shard's database in `ServiceContext`.
 */
export type ShardBinding = `DB_SHARD_${number}`;

const bindingOf = (shard: number): ShardBinding => `DB_SHARD_${shard}`;
/** Env declares DB_SHARD_0; a deployment binds as many more as it has. */
const boundAs = (env: Env, binding: ShardBinding) => (env as unknown as Record<ShardBinding, D1Database | undefined>)[binding];

/** How many shards are bound: the first missing index ends the list. */
export function shardCount(env: Env): number {
  let n = 0;
  while (boundAs(env, bindingOf(n))) n++;
  return n;
}

/** The database of shard `shard`; a directory row naming a shard this deployment does not bind is a broken deploy. */
export function shardDatabase(env: Env, shard: number): D1Database {
  const db = Number.isInteger(shard) && shard >= 0 ? boundAs(env, bindingOf(shard)) : undefined;
  if (!db)
    throw new Error(`No D1 binding ${bindingOf(shard)}: the directory places an organization on a shard this deployment does not bind`);
  return db;
}

/** Every bound shard, by index: the cron walks them. */
export function everyShard(env: Env): { shard: number; db: D1Database }[] {
  return Array.from({ length: shardCount(env) }, (_, shard) => ({ shard, db: shardDatabase(env, shard) }));
}
