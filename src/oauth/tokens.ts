import { and, eq, gt, isNull } from "drizzle-orm";
import { verify } from "hono/jwt";
import type { Db } from "../db/client";
import {
  oauthCodes,
  oauthGrants,
  oauthRefreshTokens,
  organizationPhoneRegion,
  organizationShards,
  organizations,
  users,
} from "../db/schema";
import { expectRow, isGuardFailure } from "../db/write";
import { commitInDirectory, type DirectoryWork } from "../events/directory-outbox";
import { connectClient } from "../integrations/service";
import type { Config } from "../env";
import { sha256Hex, toBase64Url } from "../lib/crypto";
import { newId } from "../lib/ids";
import { nowIso } from "../lib/time";
import type { AccessTokens } from "../platform/auth";
import { isPermission, type Permission } from "../platform/permissions";
import type { AuthOrganization, AuthUser } from "../service-context";
import { isOurResource } from "./authorize";
import type { ClientDocumentDeps } from "./client-documents";
import { requireClient } from "./clients";
import { OAuthError } from "./errors";
import { issuerOf, mcpPathOf, mcpServerUrlOf } from "./metadata";
import { newGrant, type SigningConfig, type TokenRequest, type TokenResponse, tokenResponse } from "./grants";
import { newRefreshToken, refreshAccessToken, revokeFamily } from "./refresh";

/** POST /oauth/token: the authorization_code grant, or the refresh_token grant. */
export function requestToken(
  work: DirectoryWork,
  config: Config,
  documents: ClientDocumentDeps,
  form: TokenRequest,
): Promise<TokenResponse> {
  if (!config.JWT_SECRET)
    throw new OAuthError("temporarily_unavailable", "The token endpoint is not configured (JWT_SECRET is unset)", 503);
  const signing = config as SigningConfig;
  if (form.grant_type === undefined || form.grant_type === "") throw new OAuthError("invalid_request", "grant_type is required");
  if (form.grant_type === "authorization_code") return exchangeCode(work, signing, documents, form);
  if (form.grant_type === "refresh_token") return refreshAccessToken(work, signing, documents, form);
  throw new OAuthError("unsupported_grant_type", 'grant_type must be "authorization_code" or "refresh_token"');
}

/** RFC 7636 section 4.6: BASE64URL(SHA256(verifier)) must equal the stored S256 challenge. */
async function challengeOf(verifier: string): Promise<string> {
  return toBase64Url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
}

/**
 * The authorization_code grant. A code is exchanged once: the exchange marks it used, creates the grant and the first
 * refresh token of a new family in one guarded batch, so of two concurrent exchanges one wins; a later (or losing)
 * exchange is a reuse, answered `invalid_grant`, and revokes the family the first one started: its access and refresh
 * tokens stop working (RFC 6749 section 4.1.2).
 */
async function exchangeCode(
  work: DirectoryWork,
  config: SigningConfig,
  documents: ClientDocumentDeps,
  form: TokenRequest,
): Promise<TokenResponse> {
  const db = work.directory;
  for (const field of ["code", "redirect_uri", "client_id", "code_verifier"] as const) {
    if (!form[field]) throw new OAuthError("invalid_request", `${field} is required`);
  }
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(form.code_verifier!))
    throw new OAuthError("invalid_request", "code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636 section 4.1)");
  if (!isOurResource(config, form.resource)) throw new OAuthError("invalid_target", `resource must be ${mcpServerUrlOf(config)}`);
  const client = await requireClient(db, config, documents, form.client_id);

  const codeHash = await sha256Hex(form.code!);
  const row = await db
    .select({ code: oauthCodes, organizationName: organizations.name, userExists: users.id })
    .from(oauthCodes)
    .leftJoin(users, and(eq(users.id, oauthCodes.userId), eq(users.organizationId, oauthCodes.organizationId)))
    .leftJoin(organizations, eq(organizations.id, oauthCodes.organizationId))
    .where(eq(oauthCodes.codeHash, codeHash))
    .get();
  if (!row || row.code.clientId !== client.clientId)
    throw new OAuthError("invalid_grant", "The authorization code is unknown or was issued to another client");
  if (row.code.usedAt) {
    await revokeFamilyOfCode(work, codeHash);
    throw new OAuthError("invalid_grant", "The authorization code was already used; the tokens issued for it are revoked");
  }
  if (Date.parse(row.code.expiresAt) <= Date.now()) throw new OAuthError("invalid_grant", "The authorization code has expired");
  if (row.code.redirectUri !== form.redirect_uri)
    throw new OAuthError("invalid_grant", "redirect_uri is not the one the code was issued for");
  if ((await challengeOf(form.code_verifier!)) !== row.code.codeChallenge)
    throw new OAuthError("invalid_grant", "code_verifier does not match the code_challenge");
  if (!row.userExists || row.organizationName === null)
    throw new OAuthError("invalid_grant", "The user who approved this code no longer exists");

  const permissions = row.code.permissions.filter(isPermission);
  const now = new Date();
  // The first grant's id names the refresh token family this exchange starts.
  const familyId = newId();
  const family = { familyId, clientId: client.clientId, userId: row.code.userId, organizationId: row.code.organizationId };
  const grant = newGrant(family, permissions, now, familyId);
  const refresh = await newRefreshToken(family, permissions, now);
  const unused = and(eq(oauthCodes.codeHash, codeHash), isNull(oauthCodes.usedAt));
  try {
    await commitInDirectory(work, [
      expectRow(db, oauthCodes, unused),
      db.update(oauthCodes).set({ usedAt: grant.createdAt, grantId: grant.id }).where(unused),
      db.insert(oauthGrants).values(grant),
      db.insert(oauthRefreshTokens).values(refresh.row),
      // The client's first live grant in the organization connects it (integration.connected).
      // The integration's name is a registration's (integrations/connections.ts reads it from oauth_clients): none is
      // kept of a configured or document client, whose id names it.
      ...connectClient(db, { ...family, clientName: client.kind === "registered" ? client.clientName : null, permissions }),
    ]);
  } catch (err) {
    if (!isGuardFailure(err)) throw err;
    await revokeFamilyOfCode(work, codeHash);
    throw new OAuthError("invalid_grant", "The authorization code was already used; the tokens issued for it are revoked");
  }
  return tokenResponse(config, grant, row.organizationName, refresh.token, now);
}

/** A code presented again: what its first exchange started (its grant, and the refresh tokens and grants since) is revoked. */
async function revokeFamilyOfCode(work: DirectoryWork, codeHash: string): Promise<void> {
  const code = await work.directory.select({ grantId: oauthCodes.grantId }).from(oauthCodes).where(eq(oauthCodes.codeHash, codeHash)).get();
  if (code?.grantId) await revokeFamily(work, code.grantId, "system");
}

/** A JWT (three base64url parts), as opposed to a session token (`sess_…`). */
export const looksLikeJwt = (token: string): boolean => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);

export interface AccessTokenPrincipal {
  user: AuthUser;
  organization: AuthOrganization;
  permissions: Permission[];
  /** Where the organization lives, and whether a move fences its writes. */
  shard: number;
  fenced: boolean;
  /** When the token's grant ends (its own `exp` at the latest). */
  expiresAt: string;
}

/**
 * An access token → who it acts for and what it may do, or null: the signature (HS256, JWT_SECRET), `exp`, `iss` and
 * `aud` are checked by the JWT helper, then one D1 read finds its grant unrevoked and its user still in the organization.
 */
export async function verifyAccessToken(db: Db, config: Config, token: string): Promise<AccessTokenPrincipal | null> {
  if (!config.JWT_SECRET) return null;
  let claims: Record<string, unknown>;
  try {
    claims = await verify(token, config.JWT_SECRET, { alg: "HS256", iss: issuerOf(config), aud: mcpServerUrlOf(config) });
  } catch {
    return null;
  }
  const { jti, sub, org } = claims;
  if (typeof jti !== "string" || typeof sub !== "string" || typeof org !== "string" || typeof claims.exp !== "number") return null;
  const row = await db
    .select({
      permissions: oauthGrants.permissions,
      expiresAt: oauthGrants.expiresAt,
      email: users.email,
      userName: users.name,
      role: users.role,
      organizationName: organizations.name,
      phoneRegion: organizationPhoneRegion.as("phone_region"),
      shard: organizationShards.shard,
      fencedAt: organizationShards.fencedAt,
    })
    .from(oauthGrants)
    .innerJoin(users, and(eq(users.id, oauthGrants.userId), eq(users.organizationId, oauthGrants.organizationId)))
    .innerJoin(organizations, eq(organizations.id, oauthGrants.organizationId))
    .innerJoin(organizationShards, eq(organizationShards.organizationId, oauthGrants.organizationId))
    // The grant's own expiry too: a token is refused after an hour even if it claims a later exp.
    .where(
      and(
        eq(oauthGrants.id, jti),
        eq(oauthGrants.userId, sub),
        eq(oauthGrants.organizationId, org),
        isNull(oauthGrants.revokedAt),
        gt(oauthGrants.expiresAt, nowIso()),
      ),
    )
    .get();
  if (!row) return null;
  return {
    user: { id: sub, email: row.email, name: row.userName, role: row.role },
    organization: { id: org, name: row.organizationName, phoneRegion: row.phoneRegion },
    permissions: row.permissions.filter(isPermission),
    shard: row.shard,
    fenced: row.fencedAt !== null,
    expiresAt: row.expiresAt,
  };
}

/**
 * Access tokens work on every authenticated family (/v1, /api, /plants), within their permissions, and on the MCP
 * endpoint.
 */
function acceptsAccessTokens(path: string, config: Config): boolean {
  const mcp = mcpPathOf(config);
  return /^\/(v1|api|plants)(\/|$)/.test(path) || path === mcp || path.startsWith(`${mcp}/`);
}

/** Access tokens as authentication takes them (platform/auth.ts `AccessTokens`), handed in by app.ts and the MCP endpoint. */
export const accessTokens: AccessTokens = { recognizes: looksLikeJwt, acceptedOn: acceptsAccessTokens, verify: verifyAccessToken };
