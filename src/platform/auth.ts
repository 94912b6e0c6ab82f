import { and, eq, gt, isNull, lt, or, sql } from "drizzle-orm";
import { createMiddleware } from "hono/factory";
import type { Context } from "hono";
import type { Db } from "../db/client";
import type { Statement } from "../db/write";
import { apiKeys, organizationPhoneRegion, organizationShards, organizations, sessions, users } from "../db/schema";
import { sha256Hex } from "../lib/crypto";
import { type Config, readConfig } from "../env";
import { InsufficientPermission, InsufficientRole, NotFound, OrganizationMoving, Unauthorized } from "../lib/errors";
import { createLogger, loggableError } from "../lib/log";
import { isPermission, PERMISSION_NAMES, type Permission, ROLE_PERMISSIONS, routePermission } from "./permissions";
import { admitCount, countCredential } from "./rate-limit";
import { nowIso } from "../lib/time";
import { parseIfMatch } from "./etag";
import { type ActingFor, type AuthOrganization, type AuthUser, portsOf, type ServiceContext } from "../service-context";
import type { AppBindings } from "./context";
import { type AuthPreload, preloadOf } from "./preload";
import { openShard } from "./session";
import { requestLog } from "./response-headers";

/** The caller of a live session: who, which organization, where it lives, and whether a move fences its writes. */
export interface Principal {
  user: AuthUser;
  organization: AuthOrganization;
  shard: number;
  fenced: boolean;
}

/** A credential found in the directory: a session (which carries every permission) or an API key (its own). */
interface Credential extends Principal {
  permissions?: Permission[];
  apiKey?: { id: string; lastUsedAt: string | null; expiresAt: string | null };
}

/**
 * What authentication needs of the OAuth server, handed in by the app (oauth/tokens.ts `accessTokens`), so the
 * platform names no domain.
 */
export interface AccessTokens {
  /** An access token (a JWT), as opposed to a session token. */
  recognizes(token: string): boolean;
  /** Where access tokens are accepted at all (the authenticated families and the MCP endpoint). */
  acceptedOn(path: string, config: Config): boolean;
  /** Who the token acts for, what it may do and until when, or null for a token that is not (or no longer) valid. */
  verify(directory: Db, config: Config, token: string): Promise<(Principal & { permissions: Permission[]; expiresAt: string }) | null>;
}

/**
 * `Authorization: Bearer <token>` → the live session's user and organization, and the organization's shard, in one
 * directory round trip. A session only: the OAuth authorization endpoint acts as this user, and an API key
 * (which carries only some of its user's permissions) must not approve a client for more than it may do itself.
 */
export async function resolveBearer(directory: Db, header: string | undefined): Promise<Principal | null> {
  const token = bearerOf(header);
  return token === undefined || isApiKey(token) ? null : sessionLookup(directory, await sha256Hex(token));
}

/** The token of an `Authorization: Bearer <token>` header. */
export const bearerOf = (header: string | undefined) => header?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];

/** An API key (`bk_` + 32 random bytes, base64url: api-keys/service.ts), as opposed to a session token. */
const isApiKey = (token: string) => token.startsWith("bk_");

/** The user, organization and shard columns both lookups answer. Aliased: D1 answers rows as objects, where the tables' `id` and `name` would collide. */
const PRINCIPAL_COLUMNS = {
  userId: sql<string>`${users.id}`.as("user_id"),
  email: users.email,
  userName: sql<string | null>`${users.name}`.as("user_name"),
  role: users.role,
  organizationId: sql<string>`${organizations.id}`.as("organization_id"),
  organizationName: sql<string>`${organizations.name}`.as("organization_name"),
  phoneRegion: organizationPhoneRegion.as("phone_region"),
  shard: organizationShards.shard,
  fencedAt: organizationShards.fencedAt,
};

const principalOf = (row: {
  userId: string;
  email: string;
  userName: string | null;
  role: AuthUser["role"];
  organizationId: string;
  organizationName: string;
  phoneRegion: string;
  shard: number;
  fencedAt: string | null;
}): Principal => ({
  user: { id: row.userId, email: row.email, name: row.userName, role: row.role },
  organization: { id: row.organizationId, name: row.organizationName, phoneRegion: row.phoneRegion },
  shard: row.shard,
  fenced: row.fencedAt !== null,
});

/** The token's shape says which table: an API key's row, or a session's; one read either way. */
function credentialLookup(directory: Db, token: string, tokenHash: string): Promise<Credential | null> {
  return isApiKey(token) ? apiKeyLookup(directory, tokenHash) : sessionLookup(directory, tokenHash);
}

async function sessionLookup(directory: Db, tokenHash: string): Promise<Credential | null> {
  const row = await directory
    .select(PRINCIPAL_COLUMNS)
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .innerJoin(organizations, eq(organizations.id, sessions.organizationId))
    .innerJoin(organizationShards, eq(organizationShards.organizationId, sessions.organizationId))
    .where(and(eq(sessions.tokenHash, tokenHash), isNull(sessions.revokedAt), gt(sessions.expiresAt, nowIso())))
    .get();
  return row ? principalOf(row) : null;
}

/**
 * A live API key: unexpired, its creator still a user of its organization. It acts as that user, with its
 * own permissions (∩ the user's role, at each request: `grantedPermissions`).
 */
async function apiKeyLookup(directory: Db, keyHash: string): Promise<Credential | null> {
  const now = nowIso();
  const row = await directory
    .select({
      ...PRINCIPAL_COLUMNS,
      keyId: sql<string>`${apiKeys.id}`.as("key_id"),
      permissions: apiKeys.permissions,
      lastUsedAt: apiKeys.lastUsedAt,
      keyExpiresAt: apiKeys.expiresAt,
    })
    .from(apiKeys)
    .innerJoin(users, and(eq(users.id, apiKeys.createdBy), eq(users.organizationId, apiKeys.organizationId)))
    .innerJoin(organizations, eq(organizations.id, apiKeys.organizationId))
    .innerJoin(organizationShards, eq(organizationShards.organizationId, apiKeys.organizationId))
    .where(and(eq(apiKeys.keyHash, keyHash), or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, now))))
    .get();
  if (!row) return null;
  return {
    ...principalOf(row),
    permissions: row.permissions.filter(isPermission),
    apiKey: { id: row.keyId, lastUsedAt: row.lastUsedAt, expiresAt: row.keyExpiresAt },
  };
}

/** How stale a key's `lastUsedAt` may be before a request stamps it again: at most one write a minute per key. */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * Stamps the key's last use after the answer (never on its path), when the stamp read with the key is a minute old:
 * the UPDATE is guarded on that age too, so concurrent requests of one key write it once.
 */
function noteKeyUse(c: Context<AppBindings>, key: { id: string; lastUsedAt: string | null }): void {
  const now = Date.now();
  if (key.lastUsedAt !== null && now - Date.parse(key.lastUsedAt) < LAST_USED_RESOLUTION_MS) return;
  const directory = c.get("directory");
  const staleBefore = nowIso(new Date(now - LAST_USED_RESOLUTION_MS));
  const stamp = directory
    .update(apiKeys)
    .set({ lastUsedAt: nowIso(new Date(now)) })
    .where(and(eq(apiKeys.id, key.id), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, staleBefore))))
    .run()
    .catch((err) => requestLog(c).warn("API key last use not stamped", { keyId: key.id, error: loggableError(err) }));
  try {
    c.executionCtx.waitUntil(stamp);
  } catch {
    // No execution context (app.request in a script): the stamp runs on its own.
  }
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
 * Rejects the request with 401 unless it carries a live session, a live API key (`bk_…`) or a valid OAuth
 * access token: signature, exp, iss and aud checked, its grant unrevoked (one directory read). A key's or a token's
 * permissions are set on the context; a session has them all. The error handler shapes the body per family. Either
 * way the organization's shard is opened for the rest of the request; a session's or a key's lookup also runs the
 * route's `preloads`, if it has one, on the shard it last lived on. Beside the lookup, the credential's request is
 * counted against its quota (platform/rate-limit.ts): 429 past it, once the credential is known to be valid.
 */
export const authenticate = (preloads: AuthPreload[], accessTokens: AccessTokens) =>
  createMiddleware<AppBindings>(async (c, next) => {
    const token = bearerOf(c.req.header("authorization"));
    if (token === undefined) throw new Unauthorized();
    const tokenHash = await sha256Hex(token);
    if (accessTokens.recognizes(token)) {
      const config = readConfig(c.env);
      if (!accessTokens.acceptedOn(c.req.path, config)) throw new Unauthorized();
      const [principal, counted] = await Promise.all([
        accessTokens.verify(c.get("directory"), config, token),
        countCredential(c, tokenHash),
      ]);
      if (!principal) throw new Unauthorized();
      admitCount(c, counted);
      admit(c, principal);
      c.set("permissions", principal.permissions);
      c.set("credentialExpiresAt", principal.expiresAt);
      return next();
    }
    const guess = shardGuesses.get(tokenHash);
    let preload: { key: string; statements: Statement[] } | undefined;
    if (guess) {
      openShard(c, guess.shard);
      preload = preloadOf(preloads, c.get("db"), c.req.method, c.req.path, sql`${guess.organizationId}`);
    }
    const [principal, preloaded, counted] = await Promise.all([
      credentialLookup(c.get("directory"), token, tokenHash),
      preload && preload.statements.length > 0 ? c.get("db").batch(preload.statements as [Statement, ...Statement[]]) : undefined,
      countCredential(c, tokenHash),
    ]);
    if (!principal) throw new Unauthorized();
    admitCount(c, counted);
    rememberShard(tokenHash, principal);
    admit(c, principal);
    if (principal.permissions) c.set("permissions", principal.permissions);
    if (principal.apiKey) {
      noteKeyUse(c, principal.apiKey);
      c.set("credentialExpiresAt", principal.apiKey.expiresAt);
    }
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

/**
 * An agent acts on what is theirs; acting for another user (their public profile, the testimonials about them, or the
 * organization's own) needs `users:manage`: owners and admins, 403 `insufficient_role` for an agent,
 * `insufficient_permission` for a key or token without it. `userId` undefined means the caller.
 */
export function requireSelfOrManager(c: Context<AppBindings>, userId: string | null | undefined): void {
  if (userId !== undefined && userId !== c.get("user").id) requirePermission(c, "users:manage");
}

/**
 * The reputation suite's records about an agent (testimonials, surveys): an agent acts only on their own; owners and
 * admins, and their keys and tokens, on any agent's or the organization's (else an agent could rewrite a
 * colleague's reviews and answer surveys about them). By role, not by `users:manage`: a review tool moderating for
 * the brokerage needs no right to manage users (docs/decisions/0029-agents-act-for-themselves.md).
 */
export const agentActingFor =
  (c: Context<AppBindings>): ActingFor =>
  (agentUserId) => {
    const { id, role } = c.get("user");
    if (role === "agent" && agentUserId !== id) throw new InsufficientRole("An agent acts only on the records about themselves");
  };

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
  for (const include of c.req.queries("include") ?? [])
    for (const permission of includePermissions(include)) requirePermission(c, permission);
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
    ...portsOf(c.env),
    log: createLogger({ requestId: c.get("requestId"), organizationId: c.get("organization").id }),
    db: c.get("db"),
    directory: c.get("directory"),
    d1: c.get("d1"),
    organizationId: c.get("organization").id,
    phoneRegion: c.get("organization").phoneRegion,
    actor: { type: "user", userId: c.get("user").id },
    requestId: c.get("requestId"),
    ifMatch: parseIfMatch(c.req.header("if-match")),
    defer: (work) => c.executionCtx.waitUntil(work),
    preloaded: takeAllPreloaded(c),
  };
}
