import { and, eq, lt } from "drizzle-orm";
import type { Db } from "../db/client";
import type { organizations, users } from "../db/members";
import type { Env } from "../env";
import { shardCount, shardDatabase } from "./bindings";

/**
 * Placement: a new organization goes to the shard carrying the fewest, read from the directory's counters
 * (`shard_placements`, kept by triggers: migrations/directory/0001), ties to the lowest index. Shards with no counter
 * row yet count as empty. One statement, so two organizations placed at once each see a consistent count.
 */
export const PLACE_ORGANIZATION_SQL =
  "INSERT INTO organization_shards (organization_id, shard) SELECT ?1, s.value FROM json_each(?2) s LEFT JOIN shard_placements p ON p.shard = s.value ORDER BY ifnull(p.organizations, 0), s.value LIMIT 1";

export interface NewOrganization {
  id: string;
  name: string;
  createdAt: string;
}

export interface NewMember {
  id: string;
  organizationId: string;
  email: string;
  name: string | null;
  /** The founders of an organization are its owners; `addMembers` callers say which role. */
  role?: "owner" | "admin" | "agent";
  createdAt: string;
}

const shardIndexes = (env: Env) => JSON.stringify(Array.from({ length: shardCount(env) }, (_, i) => i));

/**
 * Creates an organization and its first members: the directory rows and its placement in one batch, then the copy
 * its shard carries (db/members.ts). The directory is written first: until the shard copy lands the organization has
 * no data anywhere, which reads as an empty organization. Returns the shard.
 */
export async function createOrganization(env: Env, org: NewOrganization, members: NewMember[] = [], shard?: number): Promise<number> {
  const [, , ...rest] = await env.DB.batch([
    env.DB.prepare("INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)").bind(org.id, org.name, org.createdAt),
    // `shard` places it there instead (tests that need two organizations on different shards).
    env.DB.prepare(PLACE_ORGANIZATION_SQL).bind(org.id, shard === undefined ? shardIndexes(env) : JSON.stringify([shard])),
    ...members.map(memberInsert(env.DB)),
    shardRead(env.DB, org.id),
  ]);
  const placed = (rest.at(-1)?.results[0] as { shard: number } | undefined)?.shard;
  if (placed === undefined) throw new Error(`organization ${org.id} was not placed`);
  const db = shardDatabase(env, placed);
  await db.batch([
    db
      .prepare("INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT(id) DO NOTHING")
      .bind(org.id, org.name, org.createdAt),
    ...members.map(memberInsert(db, true)),
  ]);
  return placed;
}

/** Adds members to an existing organization: the directory, then the shard it lives on. */
export async function addMembers(env: Env, members: NewMember[]): Promise<void> {
  if (members.length === 0) return;
  const organizationId = members[0]!.organizationId;
  const written = await env.DB.batch([...members.map(memberInsert(env.DB)), shardRead(env.DB, organizationId)]);
  const shard = (written.at(-1)?.results[0] as { shard: number } | undefined)?.shard;
  if (shard === undefined) throw new Error(`organization ${organizationId} has no shard`);
  const db = shardDatabase(env, shard);
  await db.batch(members.map(memberInsert(db, true)));
}

/** Where the organization was placed, read at the end of the batch that placed it or added to it. */
const shardRead = (directory: D1Database, organizationId: string) =>
  directory.prepare("SELECT shard FROM organization_shards WHERE organization_id = ?").bind(organizationId);

const memberInsert =
  (db: D1Database, copy = false) =>
  (m: NewMember) =>
    db
      .prepare(
        `INSERT INTO users (id, organization_id, email, name, role, created_at) VALUES (?, ?, ?, ?, ?, ?)${copy ? " ON CONFLICT(id) DO NOTHING" : ""}`,
      )
      .bind(m.id, m.organizationId, m.email, m.name, m.role ?? "owner", m.createdAt);

/**
 * Brings the directory's copy of a member's or an organization's row up to what its shard holds at `version`, never
 * back: a change commits on the shard first, with its event and its version, and then the directory
 * follows, so a retry after a failure in between brings it along, and an earlier change arriving late is a no-op.
 */
export async function followOnDirectory(
  directory: Db,
  table: typeof organizations | typeof users,
  id: string,
  values: Record<string, unknown>,
  version: number,
): Promise<void> {
  // One update for either table: both have `id` and `version` (db/members.ts).
  const t = table as typeof users;
  await directory
    .update(t)
    .set({ ...values, version })
    .where(and(eq(t.id, id), lt(t.version, version)))
    .run();
}
