import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { organizationShards, publicKeys } from "../db/schema";
import { inJsonList } from "../lib/sql";
import { nowIso } from "../lib/time";

/**
 * Lookups in the directory: where an organization lives, and which organization a public key (a link
 * token's hash, a slug, an agreement id, a sealed PDF's hash) belongs to. Each is one directory read, made before the
 * shard is opened; nothing here reads two shards.
 */
export type PublicKeyKind = (typeof publicKeys.$inferSelect)["kind"];

export interface Placement {
  organizationId: string;
  shard: number;
  fenced: boolean;
}

/** Where `organizationId` lives; null for an organization the directory does not know. */
export async function placementOf(directory: Db, organizationId: string): Promise<Placement | null> {
  const row = await directory
    .select({ shard: organizationShards.shard, fencedAt: organizationShards.fencedAt })
    .from(organizationShards)
    .where(eq(organizationShards.organizationId, organizationId))
    .get();
  return row ? { organizationId, shard: row.shard, fenced: row.fencedAt !== null } : null;
}

/**
 * A public route's key → its organization and where it lives, in the one directory read the route makes before its
 * own; null when the directory knows no such key (the route answers as it does for an unknown token). The route's
 * platform opens the shard (platform/session.ts `openPublicKey`).
 */
export async function publicKeyPlacement(directory: Db, kind: PublicKeyKind, key: string): Promise<Placement | null> {
  const row = await directory
    .select({ organizationId: publicKeys.organizationId, shard: organizationShards.shard, fencedAt: organizationShards.fencedAt })
    .from(publicKeys)
    .innerJoin(organizationShards, eq(organizationShards.organizationId, publicKeys.organizationId))
    .where(and(eq(publicKeys.kind, kind), eq(publicKeys.key, key)))
    .get();
  return row ? { organizationId: row.organizationId, shard: row.shard, fenced: row.fencedAt !== null } : null;
}

/**
 * Records public keys of an organization in the directory, before the shard write that makes them reachable: a key
 * whose shard write then fails resolves to an organization that has no such row, which answers as unknown.
 * Idempotent; a key already held by another organization is left to it (the caller's check: `claimPublicKey`).
 */
export async function registerPublicKeys(directory: Db, organizationId: string, kind: PublicKeyKind, keys: string[]): Promise<void> {
  if (keys.length === 0) return;
  const createdAt = nowIso();
  await directory
    .insert(publicKeys)
    .values(keys.map((key) => ({ kind, key, organizationId, createdAt })))
    .onConflictDoNothing();
}

/** Forgets public keys of an organization (the links of an erased envelope): the route then answers as for an unknown key. */
export async function removePublicKeys(directory: Db, organizationId: string, kind: PublicKeyKind, keys: string[]): Promise<void> {
  if (keys.length === 0) return;
  await directory
    .delete(publicKeys)
    .where(and(eq(publicKeys.kind, kind), eq(publicKeys.organizationId, organizationId), inJsonList(publicKeys.key, keys)));
}

/** Claims a key for one organization (an agent slug): true when it is now, or already was, this organization's. */
export async function claimPublicKey(directory: Db, organizationId: string, kind: PublicKeyKind, key: string): Promise<boolean> {
  const [, holder] = await directory.batch([
    directory.insert(publicKeys).values({ kind, key, organizationId, createdAt: nowIso() }).onConflictDoNothing(),
    directory
      .select({ organizationId: publicKeys.organizationId })
      .from(publicKeys)
      .where(and(eq(publicKeys.kind, kind), eq(publicKeys.key, key))),
  ]);
  return holder[0]?.organizationId === organizationId;
}
