import { and, eq, gt, isNull, type SQL, sql } from "drizzle-orm";
import { createMiddleware } from "hono/factory";
import type { Context } from "hono";
import type { Db } from "../db/client";
import type { Statement } from "../db/write";
import { organizations, sessions, users } from "../db/schema";
import { sha256Hex } from "../lib/crypto";
import { type Config, readConfig } from "../env";
import { InsufficientPermission, Unauthorized } from "../lib/errors";
import { mcpPathOf } from "../oauth/metadata";
import { PERMISSION_NAMES, type Permission } from "../oauth/permissions";
import { looksLikeJwt, verifyAccessToken } from "../oauth/tokens";
import { nowIso } from "../lib/time";
import { parseIfMatch } from "./etag";
import type { AppBindings, AuthOrganization, AuthUser, ServiceContext } from "./context";
import { type AuthPreload, preloadOf } from "./preload";

/**
 * `Authorization: Bearer <token>` → the live session's user and organization, in one D1 round trip. `preload` reads
 * what the route needs in the same trip, filtered on the session's organization in SQL (platform/preload.ts).
 */
export async function resolveBearer(
  db: Db,
  header: string | undefined,
  preload?: (organizationId: SQL) => { key: string; statements: Statement[] } | undefined,
): Promise<{ user: AuthUser; organization: AuthOrganization; preloaded?: Map<string, unknown[]> } | null> {
  const match = header?.match(/^Bearer\s+(\S+)\s*$/i);
  if (!match) return null;
  const tokenHash = await sha256Hex(match[1]!);
  const now = nowIso();
  const live = and(eq(sessions.tokenHash, tokenHash), isNull(sessions.revokedAt), gt(sessions.expiresAt, now));
  const session = db
    // Aliased: in a batch, D1 answers rows as objects, where the two tables' `id` and `name` would collide.
    .select({
      userId: sql<string>`${users.id}`.as("user_id"),
      email: users.email,
      userName: sql<string | null>`${users.name}`.as("user_name"),
      organizationId: sql<string>`${organizations.id}`.as("organization_id"),
      organizationName: sql<string>`${organizations.name}`.as("organization_name"),
    })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .innerJoin(organizations, eq(organizations.id, sessions.organizationId))
    .where(live);
  const riders = preload?.(sql`(SELECT ${sessions.organizationId} FROM ${sessions} WHERE ${live})`);
  let row: Awaited<typeof session>[number] | undefined;
  let preloaded: Map<string, unknown[]> | undefined;
  if (riders && riders.statements.length > 0) {
    const [rows, ...read] = await db.batch([session, ...riders.statements] as [typeof session, ...Statement[]]);
    row = rows[0];
    preloaded = new Map([[riders.key, read as unknown[]]]);
  } else {
    row = await session.get();
  }
  if (!row) return null;
  return {
    user: { id: row.userId, email: row.email, name: row.userName },
    organization: { id: row.organizationId, name: row.organizationName },
    preloaded,
  };
}

/**
 * Rejects the request with 401 unless it carries a live session, or (on /v1 and the MCP endpoint only) a valid OAuth
 * access token: signature, exp, iss and aud checked, its grant unrevoked (one D1 read). A token's permissions are set
 * on the context; a session has them all. An access token anywhere else (/api, /plants) is answered like an unknown
 * token, 401: it was issued for the MCP server and the CRM, not for the document desk or the reputation suite.
 * The error handler shapes the body per family. A session's lookup also runs the route's `preloads`, if it has one.
 */
export const authenticate = (preloads: AuthPreload[]) =>
  createMiddleware<AppBindings>(async (c, next) => {
    const header = c.req.header("authorization");
    const token = header?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
    if (token !== undefined && looksLikeJwt(token)) {
      const config = readConfig(c.env);
      if (!acceptsAccessTokens(c.req.path, config)) throw new Unauthorized();
      const principal = await verifyAccessToken(c.get("db"), config, token);
      if (!principal) throw new Unauthorized();
      c.set("user", principal.user);
      c.set("organization", principal.organization);
      c.set("permissions", principal.permissions);
      return next();
    }
    const db = c.get("db");
    const resolved = await resolveBearer(db, header, (organizationId) => preloadOf(preloads, db, c.req.method, c.req.path, organizationId));
    if (!resolved) throw new Unauthorized();
    c.set("user", resolved.user);
    c.set("organization", resolved.organization);
    if (resolved.preloaded) c.set("preloaded", resolved.preloaded);
    await next();
  });

/** Authentication without preloads (the MCP endpoint). */
export const requireAuth = authenticate([]);

/** Issue 14: access tokens work on the CRM routes and the MCP endpoint. */
function acceptsAccessTokens(path: string, config: Config): boolean {
  const mcp = mcpPathOf(config);
  return path.startsWith("/v1/") || path === mcp || path.startsWith(`${mcp}/`);
}

/** What the caller may do: an access token's granted permissions, or all of them for a bearer session. */
export function grantedPermissions(c: Context<AppBindings>): Permission[] {
  return c.get("permissions") ?? [...PERMISSION_NAMES];
}

/** Throws 403 `insufficient_permission` unless the caller was granted `permission` (MCP tools and the /v1 routes). */
export function requirePermission(c: Context<AppBindings>, permission: Permission): void {
  if (!grantedPermissions(c).includes(permission)) throw new InsufficientPermission(`This token was not granted ${permission}`);
}

/** The permission each /v1 route needs, by its first path segment: GET (and HEAD) reads, every other method writes. */
const V1_PERMISSIONS: Record<string, { read: Permission; write: Permission }> = {
  contacts: { read: "contacts:read", write: "contacts:write" },
  deals: { read: "deals:read", write: "deals:write" },
  properties: { read: "properties:read", write: "properties:write" },
  webhooks: { read: "webhooks:manage", write: "webhooks:manage" },
};

/** What an `include` embeds from another resource (a contact's deals, a deal's contact or property) needs too. */
const INCLUDE_PERMISSIONS: Record<string, Permission> = { deals: "deals:read", contact: "contacts:read", property: "properties:read" };

/** The permissions the embeds named in `include` (a list, or the query's comma-separated form) need. */
export function includePermissions(include: string | readonly string[] | undefined): Permission[] {
  const names = typeof include === "string" ? include.split(",").map((s) => s.trim()) : (include ?? []);
  return [...new Set(names.filter((n) => Object.hasOwn(INCLUDE_PERMISSIONS, n)).map((n) => INCLUDE_PERMISSIONS[n]!))];
}

/**
 * After `requireAuth` on /v1/*: an access token may only reach the routes its permissions cover, and embed
 * (`include`) only what it could read by itself; a session passes.
 */
export const requireRoutePermission = createMiddleware<AppBindings>(async (c, next) => {
  if (c.get("permissions") !== undefined) {
    const segment = c.req.path.split("/")[2] ?? "";
    // The trash lists several kinds: its route asks for the read permission of each kind it lists.
    if (segment === "trash" && (c.req.method === "GET" || c.req.method === "HEAD")) return next();
    const needs = Object.hasOwn(V1_PERMISSIONS, segment) ? V1_PERMISSIONS[segment]! : undefined;
    if (!needs) throw new InsufficientPermission("Access tokens do not reach this route");
    requirePermission(c, c.req.method === "GET" || c.req.method === "HEAD" ? needs.read : needs.write);
    for (const include of c.req.queries("include") ?? []) for (const permission of includePermissions(include)) requirePermission(c, permission);
  }
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
    defer: (work) => c.executionCtx.waitUntil(work),
    preloaded: c.get("preloaded"),
  };
}
