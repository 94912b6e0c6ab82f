import { and, eq, isNull, or } from "drizzle-orm";
import type { Db } from "../db/client";
import type { DirectoryWork } from "../events/directory-outbox";
import { revokeAndDisconnect } from "../integrations/service";
import { oauthClients, oauthGrants, oauthRefreshTokens, organizations, users } from "../db/schema";
import { expectRow, isGuardFailure, type Statement } from "../db/write";
import { sha256Hex, toBase64Url } from "../lib/crypto";
import { addSeconds, nowIso } from "../lib/time";
import { isOurResource } from "./authorize";
import type { ClientDocumentDeps } from "./client-documents";
import { requireClient } from "./clients";
import { OAuthError } from "./errors";
import { mcpServerUrlOf } from "./metadata";
import { isPermission, type Permission } from "../platform/permissions";
import { type Family, newGrant, type SigningConfig, type TokenRequest, type TokenResponse, tokenResponse } from "./grants";

/**
 * Refresh tokens for public clients (OAuth 2.1 section 4.3, RFC 6749 section 6). Each is opaque, random,
 * stored only as SHA-256, and used once: a refresh marks it used and issues a new one in the same family (rotation,
 * OAuth 2.1 section 4.3.1), so a stolen token is detected when either holder uses it after the other: a used (or
 * revoked) token presented again revokes the whole family, its refresh tokens and every grant issued from it. One
 * exception keeps a client whose answer was lost signed in (as Cloudflare's workers-oauth-provider does): until the
 * token a use issued is first used, the used one may be presented again for a new pair.
 */

/** A refresh token lives this long from its issue; each rotation starts a new one (an agent in use stays signed in). */
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 86_400;

/** A new refresh token of `family`, carrying the permissions granted at consent: the raw token and its row. */
export async function newRefreshToken(family: Family, permissions: Permission[], now: Date) {
  const token = toBase64Url(crypto.getRandomValues(new Uint8Array(32)));
  const row = {
    tokenHash: await sha256Hex(token),
    ...family,
    permissions,
    createdAt: nowIso(now),
    expiresAt: nowIso(addSeconds(now, REFRESH_TOKEN_TTL_SECONDS)),
  };
  return { token, row };
}

/**
 * Revokes a family: its refresh tokens and its grants (the first one's id is the family id; grants made before
 * families existed have none), so every access token issued from it answers 401 at once (verifyAccessToken). `by`:
 * the family's user (a revocation the client asked for) or the system (a detected reuse), for the event's actor.
 */
export async function revokeFamily(work: DirectoryWork, familyId: string, by: "user" | "system"): Promise<void> {
  const at = nowIso();
  const db = work.directory;
  // In the same batch, the client's connection to the organization ends if this was its last live family.
  await revokeAndDisconnect(
    work,
    familyId,
    [
      db
        .update(oauthRefreshTokens)
        .set({ revokedAt: at })
        .where(and(eq(oauthRefreshTokens.familyId, familyId), isNull(oauthRefreshTokens.revokedAt))),
      db
        .update(oauthGrants)
        .set({ revokedAt: at })
        .where(and(or(eq(oauthGrants.id, familyId), eq(oauthGrants.familyId, familyId)), isNull(oauthGrants.revokedAt))),
    ],
    by,
  );
}

/** The refresh token whose raw value is `token`, or null. */
export async function findRefreshToken(db: Db, token: string) {
  return (
    (await db
      .select()
      .from(oauthRefreshTokens)
      .where(eq(oauthRefreshTokens.tokenHash, await sha256Hex(token)))
      .get()) ?? null
  );
}

const MAX_SCOPE = 1000;

/**
 * grant_type=refresh_token. The token must be this client's, unused (or used, with the token that use issued still
 * unused: a retry after a lost answer), unrevoked and unexpired, its user still in the organization; `scope` may narrow the new access token to part of what was granted (RFC 6749 section 6), never
 * widen it, and the new refresh token keeps the family's full grant. The rotation is one guarded batch (db/write.ts):
 * of two concurrent uses of one token exactly one wins; the other is a reuse and revokes the family.
 */
export async function refreshAccessToken(
  work: DirectoryWork,
  config: SigningConfig,
  documents: ClientDocumentDeps,
  form: TokenRequest,
): Promise<TokenResponse> {
  const db = work.directory;
  for (const field of ["refresh_token", "client_id"] as const) {
    if (!form[field]) throw new OAuthError("invalid_request", `${field} is required`);
  }
  if (!isOurResource(config, form.resource)) throw new OAuthError("invalid_target", `resource must be ${mcpServerUrlOf(config)}`);
  const client = await requireClient(db, config, documents, form.client_id);

  const tokenHash = await sha256Hex(form.refresh_token!);
  const row = await db
    .select({ token: oauthRefreshTokens, organizationName: organizations.name, userExists: users.id })
    .from(oauthRefreshTokens)
    .leftJoin(users, and(eq(users.id, oauthRefreshTokens.userId), eq(users.organizationId, oauthRefreshTokens.organizationId)))
    .leftJoin(organizations, eq(organizations.id, oauthRefreshTokens.organizationId))
    .where(eq(oauthRefreshTokens.tokenHash, tokenHash))
    .get();
  if (!row || row.token.clientId !== client.clientId)
    throw new OAuthError("invalid_grant", "The refresh token is unknown or was issued to another client");
  const { token } = row;
  const reused = async () => {
    await revokeFamily(work, token.familyId, "system");
    return new OAuthError("invalid_grant", "The refresh token was already used or revoked; every token issued from it is now revoked");
  };
  // A used token whose replacement has not been used yet: the answer that carried the replacement was lost and the
  // client asks again. It gets a new pair and the lost replacement dies (presented later, it is a reuse). Once the
  // replacement has been used, this token is an old one and its reuse revokes the family.
  let lost: string | undefined;
  if (token.revokedAt) throw await reused();
  if (token.usedAt) {
    const replacement = token.replacedBy
      ? await db
          .select({ usedAt: oauthRefreshTokens.usedAt, revokedAt: oauthRefreshTokens.revokedAt })
          .from(oauthRefreshTokens)
          .where(eq(oauthRefreshTokens.tokenHash, token.replacedBy))
          .get()
      : undefined;
    if (!replacement || replacement.usedAt || replacement.revokedAt) throw await reused();
    lost = token.replacedBy!;
  }
  if (Date.parse(token.expiresAt) <= Date.now()) throw new OAuthError("invalid_grant", "The refresh token has expired");
  if (!row.userExists || row.organizationName === null)
    throw new OAuthError("invalid_grant", "The user who approved this access no longer exists");

  const granted = token.permissions.filter(isPermission);
  const permissions = narrowedScope(granted, form.scope);
  const now = new Date();
  const family: Family = { familyId: token.familyId, clientId: token.clientId, userId: token.userId, organizationId: token.organizationId };
  const grant = newGrant(family, permissions, now);
  const next = await newRefreshToken(family, granted, now);
  const unused = (hash: string) =>
    and(eq(oauthRefreshTokens.tokenHash, hash), isNull(oauthRefreshTokens.usedAt), isNull(oauthRefreshTokens.revokedAt));
  // The guard: this token still unused, or (a retry) the lost replacement still unused; of two concurrent uses one wins.
  const statements: [Statement, ...Statement[]] = lost
    ? [
        expectRow(db, oauthRefreshTokens, unused(lost)),
        db.update(oauthRefreshTokens).set({ revokedAt: grant.createdAt }).where(unused(lost)),
        db
          .update(oauthRefreshTokens)
          .set({ replacedBy: next.row.tokenHash })
          .where(and(eq(oauthRefreshTokens.tokenHash, tokenHash), eq(oauthRefreshTokens.replacedBy, lost))),
      ]
    : [
        expectRow(db, oauthRefreshTokens, unused(tokenHash)),
        db.update(oauthRefreshTokens).set({ usedAt: grant.createdAt, replacedBy: next.row.tokenHash }).where(unused(tokenHash)),
      ];
  statements.push(db.insert(oauthGrants).values(grant), db.insert(oauthRefreshTokens).values(next.row));
  // A registered client in use is kept by the cron (prune.ts), whether it asks for codes or refreshes.
  if (client.kind === "registered")
    statements.push(db.update(oauthClients).set({ lastUsedAt: grant.createdAt }).where(eq(oauthClients.id, client.clientId)));
  try {
    await db.batch(statements);
  } catch (err) {
    if (!isGuardFailure(err)) throw err;
    throw await reused();
  }
  return tokenResponse(config, grant, row.organizationName, next.token, now);
}

/** The permissions asked for by `scope` (space-separated), each of them granted; all that was granted when absent. */
function narrowedScope(granted: Permission[], scope: string | undefined): Permission[] {
  const asked = (scope ?? "").split(" ").filter(Boolean);
  if (asked.length === 0) return granted;
  if (scope!.length > MAX_SCOPE || !asked.every((p) => isPermission(p) && granted.includes(p))) {
    throw new OAuthError("invalid_scope", `scope may only name permissions granted to this refresh token: ${granted.join(" ")}`);
  }
  return granted.filter((p) => asked.includes(p));
}
