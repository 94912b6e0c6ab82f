import { and, eq, gt, isNull } from "drizzle-orm";
import { createMiddleware } from "hono/factory";
import type { Context } from "hono";
import type { Db } from "../db/client";
import { organizations, sessions, users } from "../db/schema";
import { sha256Hex } from "../lib/crypto";
import { Unauthorized } from "../lib/errors";
import { nowIso } from "../lib/time";
import { parseIfMatch } from "./etag";
import type { AppBindings, AuthOrganization, AuthUser, ServiceContext } from "./context";

/** `Authorization: Bearer <token>` → the live session's user and organization, in one D1 round trip. */
export async function resolveBearer(db: Db, header: string | undefined): Promise<{ user: AuthUser; organization: AuthOrganization } | null> {
  const match = header?.match(/^Bearer\s+(\S+)\s*$/i);
  if (!match) return null;
  const tokenHash = await sha256Hex(match[1]!);
  const row = await db
    .select({
      userId: users.id,
      email: users.email,
      userName: users.name,
      organizationId: organizations.id,
      organizationName: organizations.name,
    })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .innerJoin(organizations, eq(organizations.id, sessions.organizationId))
    .where(and(eq(sessions.tokenHash, tokenHash), isNull(sessions.revokedAt), gt(sessions.expiresAt, nowIso())))
    .get();
  if (!row) return null;
  return {
    user: { id: row.userId, email: row.email, name: row.userName },
    organization: { id: row.organizationId, name: row.organizationName },
  };
}

/** Rejects the request with 401 unless it carries a live session; the error handler shapes the body per family. */
export const requireAuth = createMiddleware<AppBindings>(async (c, next) => {
  const resolved = await resolveBearer(c.get("db"), c.req.header("authorization"));
  if (!resolved) throw new Unauthorized();
  c.set("user", resolved.user);
  c.set("organization", resolved.organization);
  await next();
});

/** The service context of an authenticated request. */
export function serviceContext(c: Context<AppBindings>): ServiceContext {
  return {
    env: c.env,
    db: c.get("db"),
    d1: c.get("d1"),
    organizationId: c.get("organization").id,
    actor: { type: "user", userId: c.get("user").id },
    requestId: c.get("requestId"),
    ifMatch: parseIfMatch(c.req.header("if-match")),
    origin: new URL(c.req.url).origin,
    defer: (work) => c.executionCtx.waitUntil(work),
  };
}
