import { env } from "cloudflare:workers";
import { sha256Hex, newToken } from "../../src/lib/crypto";
import { newId } from "../../src/lib/ids";

export interface TestPrincipal {
  token: string;
  userId: string;
  organizationId: string;
  sessionId: string;
}

/** A fresh organization with one user and a live session: tests never share organizations or rely on seeded ids. */
export async function createPrincipal(opts: { expiresInSeconds?: number; organizationId?: string } = {}): Promise<TestPrincipal> {
  const organizationId = opts.organizationId ?? newId();
  const userId = newId();
  const sessionId = newId();
  const token = newToken("sess");
  const now = new Date();
  const expiresAt = new Date(now.getTime() + (opts.expiresInSeconds ?? 3600) * 1000).toISOString();
  const statements = [];
  if (!opts.organizationId) {
    statements.push(env.DB.prepare("INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)").bind(organizationId, `Org ${organizationId}`, now.toISOString()));
  }
  statements.push(
    env.DB.prepare("INSERT INTO users (id, organization_id, email, name, created_at) VALUES (?, ?, ?, ?, ?)").bind(userId, organizationId, `${userId}@example.test`, "Test Agent", now.toISOString()),
    env.DB.prepare("INSERT INTO sessions (id, token_hash, user_id, organization_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)").bind(sessionId, await sha256Hex(token), userId, organizationId, now.toISOString(), expiresAt),
  );
  await env.DB.batch(statements);
  return { token, userId, organizationId, sessionId };
}

export async function revokeSession(sessionId: string): Promise<void> {
  await env.DB.prepare("UPDATE sessions SET revoked_at = ? WHERE id = ?").bind(new Date().toISOString(), sessionId).run();
}
