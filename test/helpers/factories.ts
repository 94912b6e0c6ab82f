import { env } from "cloudflare:workers";
import { sha256Hex, newToken } from "../../src/lib/crypto";
import { newId } from "../../src/lib/ids";
import { shardDatabase } from "../../src/shards/bindings";
import { addMembers, createOrganization } from "../../src/shards/placement";

export interface TestPrincipal {
  token: string;
  userId: string;
  organizationId: string;
  sessionId: string;
}

/**
 * A fresh organization with one user and a live session: tests never share organizations or rely on seeded ids. The
 * organization is placed like any other (src/shards/placement.ts): on the least full shard, so the organizations of
 * one test file spread over both shards (issue 24). `shard` forces one; the user is an owner unless `role` says otherwise.
 */
export async function createPrincipal(
  opts: { expiresInSeconds?: number; organizationId?: string; shard?: number; role?: "owner" | "admin" | "agent" } = {},
): Promise<TestPrincipal> {
  const organizationId = opts.organizationId ?? newId();
  const userId = newId();
  const sessionId = newId();
  const token = newToken("sess");
  const now = new Date();
  const expiresAt = new Date(now.getTime() + (opts.expiresInSeconds ?? 3600) * 1000).toISOString();
  const member = {
    id: userId,
    organizationId,
    email: `${userId}@example.test`,
    name: "Test Agent",
    role: opts.role ?? ("owner" as const),
    createdAt: now.toISOString(),
  };
  if (opts.organizationId) await addMembers(env, [member]);
  else
    await createOrganization(
      env,
      { id: organizationId, name: `Org ${organizationId}`, createdAt: now.toISOString() },
      [member],
      opts.shard,
    );
  await env.DB.prepare("INSERT INTO sessions (id, token_hash, user_id, organization_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)")
    .bind(sessionId, await sha256Hex(token), userId, organizationId, now.toISOString(), expiresAt)
    .run();
  return { token, userId, organizationId, sessionId };
}

/** The shard database an organization lives on, for a test that reads or seeds its rows directly. */
export async function tenantDb(organizationId: string): Promise<D1Database> {
  const row = await env.DB.prepare("SELECT shard FROM organization_shards WHERE organization_id = ?")
    .bind(organizationId)
    .first<{ shard: number }>();
  if (!row) throw new Error(`organization ${organizationId} is not placed`);
  return shardDatabase(env, row.shard);
}

export async function revokeSession(sessionId: string): Promise<void> {
  await env.DB.prepare("UPDATE sessions SET revoked_at = ? WHERE id = ?").bind(new Date().toISOString(), sessionId).run();
}
