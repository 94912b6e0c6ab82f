import { and, eq, gt, isNull, sql } from "drizzle-orm";
import { createMiddleware } from "hono/factory";
import type { Context } from "hono";
import type { Db } from "../db/client";
import type { Statement } from "../db/write";
import { organizationShards, organizations, sessions, users } from "../db/schema";
import { sha256Hex } from "../lib/crypto";
import { type Config, readConfig } from "../env";
import { InsufficientPermission, InsufficientRole, NotFound, OrganizationMoving, Unauthorized } from "../lib/errors";
import { PERMISSION_NAMES, type Permission, ROLE_PERMISSIONS, routePermission } from "./permissions";
import { nowIso } from "../lib/time";
import { parseIfMatch } from "./etag";
import type { AuthOrganization, AuthUser, ServiceContext } from "../service-context";
import type { AppBindings } from "./context";
import { type AuthPreload, preloadOf } from "./preload";
import { openShard } from "./session";

/** The caller of a live session: who, which organization, where it lives, and whether a move fences its writes. */
export interface Principal {
  user: AuthUser;
  organization: AuthOrganization;
  shard: number;
  fenced: boolean;
}

/**
 * What authentication needs of the OAuth server, handed in by the app (oauth/tokens.ts `accessTokens`), so the
 * platform names no domain.
 */
export interface AccessTokens {
  /** An access token (a JWT), as opposed to a session token. */
  recognizes(token: string): boolean;
  /** Where access tokens are accepted at all (the /v1 routes and the MCP endpoint). */
  acceptedOn(path: string, config: Config): boolean;
  /** Who the token acts for and what it may do, or null for a token that is not (or no longer) valid. */
  verify(directory: Db, config: Config, token: string): Promise<(Principal & { permissions: Permission[] }) | null>;
}

/**
 * `Authorization: Bearer <token>` → the live session's user and organization, and the organization's shard, in one
 * directory round trip (issue 24).
 */
export async function resolveBearer(directory: Db, header: string | undefined): Promise<Principal | null> {
  const token = bearerOf(header);
  return token === undefined ? null : sessionLookup(directory, await sha256Hex(token));
}

const bearerOf = (header: string | undefined) => header?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];

async function sessionLookup(directory: Db, tokenHash: string): Promise<Principal | null> {
  const row = await directory
    // Aliased: D1 answers rows as objects, where the two tables' `id` and `name` would collide.
    .select({
      userId: sql<string>`${users.id}`.as("user_id"),
      email: users.email,
      userName: sql<string | null>`${users.name}`.as("user_name"),
      role: users.role,
      organizationId: sql<string>`${organizations.id}`.as("organization_id"),
      organizationName: sql<string>`${organizations.name}`.as("organization_name"),
      shard: organizationShards.shard,
      fencedAt: organizationShards.fencedAt,
    })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .innerJoin(organizations, eq(organizations.id, sessions.organizationId))
    .innerJoin(organizationShards, eq(organizationShards.organizationId, sessions.organizationId))
    .where(and(eq(sessions.tokenHash, tokenHash), isNull(sessions.revokedAt), gt(sessions.expiresAt, nowIso())))
    .get();
  if (!row) return null;
  return {
    user: { id: row.userId, email: row.email, name: row.userName, role: row.role },
    organization: { id: row.organizationId, name: row.organizationName },
    shard: row.shard,
    fenced: row.fencedAt !== null,
  };
}

/**
 * Where each recent token's organization lived, per isolate: a route that reads with the authentication
 * (platform/preload.ts) reads its shard side by side with the directory lookup, so a one-row write stays one wave of
 * round trips before its batch. Only a guess: what was read is used only when the directory confirms the token, its
 * organization and its shard; a wrong guess (a move) reads again. Holds no secret: keys are token hashes.
 */
const shardGuesses = new Map<string, { organizationId: string; shard: number }>();
const GUESSES_KEPT = 1000;

function rememberShard(tokenHash: string, principal: Principal): void {
  shardGuesses.delete(tokenHash);
  shardGuesses.set(tokenHash, { organizationId: principal.organization.id, shard: principal.shard });
  if (shardGuesses.size > GUESSES_KEPT) shardGuesses.delete(shardGuesses.keys().next().value!);
}

/** Opens the principal's shard and refuses a write to an organization a move has fenced (503, Retry-After). */
function admit(c: Context<AppBindings>, principal: Principal): void {
  if (principal.fenced && c.req.method !== "GET" && c.req.method !== "HEAD") throw new OrganizationMoving();
  c.set("user", principal.user);
  c.set("organization", principal.organization);
  if (c.get("shard") !== principal.shard || !c.get("shardSession")) openShard(c, principal.shard);
}

/**
 * Rejects the request with 401 unless it carries a live session, or (on /v1 and the MCP endpoint only) a valid OAuth
 * access token: signature, exp, iss and aud checked, its grant unrevoked (one directory read). A token's permissions
 * are set on the context; a session has them all. An access token anywhere else (/api, /plants) is answered like an
 * unknown token, 401: it was issued for the MCP server and the CRM, not for the document desk or the reputation
 * suite. The error handler shapes the body per family. Either way the organization's shard is opened for the rest of
 * the request; a session's lookup also runs the route's `preloads`, if it has one, on the shard it last lived on.
 */
export const authenticate = (preloads: AuthPreload[], accessTokens: AccessTokens) =>
  createMiddleware<AppBindings>(async (c, next) => {
    const token = bearerOf(c.req.header("authorization"));
    if (token !== undefined && accessTokens.recognizes(token)) {
      const config = readConfig(c.env);
      if (!accessTokens.acceptedOn(c.req.path, config)) throw new Unauthorized();
      const principal = await accessTokens.verify(c.get("directory"), config, token);
      if (!principal) throw new Unauthorized();
      admit(c, principal);
      c.set("permissions", principal.permissions);
      return next();
    }
    if (token === undefined) throw new Unauthorized();
    const tokenHash = await sha256Hex(token);
    const guess = shardGuesses.get(tokenHash);
    let preload: { key: string; statements: Statement[] } | undefined;
    if (guess) {
      openShard(c, guess.shard);
      preload = preloadOf(preloads, c.get("db"), c.req.method, c.req.path, sql`${guess.organizationId}`);
    }
    const [principal, preloaded] = await Promise.all([
      sessionLookup(c.get("directory"), tokenHash),
      preload && preload.statements.length > 0 ? c.get("db").batch(preload.statements as [Statement, ...Statement[]]) : undefined,
    ]);
    if (!principal) throw new Unauthorized();
    rememberShard(tokenHash, principal);
    admit(c, principal);
    if (preload && preloaded && guess?.organizationId === principal.organization.id && guess.shard === principal.shard) {
      c.set("preloaded", new Map([[preload.key, preloaded as unknown[]]]));
    }
    await next();
  });

/** What the caller may do: its credential's permissions (all of them for a bearer session) ∩ what its role allows. */
export function grantedPermissions(c: Context<AppBindings>): Permission[] {
  const allowed = ROLE_PERMISSIONS[c.get("user").role];
  return (c.get("permissions") ?? PERMISSION_NAMES).filter((p) => allowed.includes(p));
}

/**
 * Throws 403 unless the caller may use `permission`: `insufficient_role` when the user's role does not allow it,
 * whatever the credential; `insufficient_permission` when the credential (an access token, an API key) lacks it.
 */
export function requirePermission(c: Context<AppBindings>, permission: Permission): void {
  const role = c.get("user").role;
  if (!ROLE_PERMISSIONS[role].includes(permission)) throw new InsufficientRole(`The ${role} role does not allow ${permission}`);
  const credential = c.get("permissions");
  if (credential && !credential.includes(permission)) throw new InsufficientPermission(`This credential was not granted ${permission}`);
}

/** What an `include` embeds from another resource (a contact's deals, a deal's contact or property) needs too. */
const INCLUDE_PERMISSIONS: Record<string, Permission> = { deals: "deals:read", contact: "contacts:read", property: "properties:read" };

/** The permissions the embeds named in `include` (a list, or the query's comma-separated form) need. */
export function includePermissions(include: string | readonly string[] | undefined): Permission[] {
  const names = typeof include === "string" ? include.split(",").map((s) => s.trim()) : (include ?? []);
  return [...new Set(names.filter((n) => Object.hasOwn(INCLUDE_PERMISSIONS, n)).map((n) => INCLUDE_PERMISSIONS[n]!))];
}

/**
 * After authentication, on every authenticated family: the caller reaches a route only with the permission it needs
 * (platform/permissions.ts `routePermission`), and embeds (`include`) only what it could read by itself. A path no
 * entry covers answers 404 whoever asks, so a route left out of the table is closed, not open (the trash asks per
 * kind in its route).
 */
export const requireRoutePermission = createMiddleware<AppBindings>(async (c, next) => {
  const needs = routePermission(c.req.method, c.req.path);
  if (needs === null) throw new NotFound("Route");
  if (needs !== "per-kind") requirePermission(c, needs);
  for (const include of c.req.queries("include") ?? []) for (const permission of includePermissions(include)) requirePermission(c, permission);
  await next();
});

/**
 * What was read with the authentication, handed over once as data: the service context takes it off the request, so
 * a second context of the same request reads afresh.
 */
function takeAllPreloaded(c: Context<AppBindings>): Map<string, unknown[]> | undefined {
  const preloaded = c.get("preloaded");
  c.set("preloaded", undefined);
  return preloaded;
}

/** The service context of an authenticated request. */
export function serviceContext(c: Context<AppBindings>): ServiceContext {
  return {
    env: c.env,
    db: c.get("db"),
    directory: c.get("directory"),
    d1: c.get("d1"),
    organizationId: c.get("organization").id,
    actor: { type: "user", userId: c.get("user").id },
    requestId: c.get("requestId"),
    ifMatch: parseIfMatch(c.req.header("if-match")),
    defer: (work) => c.executionCtx.waitUntil(work),
    preloaded: takeAllPreloaded(c),
  };
}
