import { and, eq, isNull } from "drizzle-orm";
import { verify } from "hono/jwt";
import type { DirectoryWork } from "../events/directory-outbox";
import { oauthGrants } from "../db/schema";
import type { Config } from "../env";
import { nowIso } from "../lib/time";
import type { ClientDocumentDeps } from "./client-documents";
import { requireClient } from "./clients";
import { OAuthError } from "./errors";
import { issuerOf, mcpServerUrlOf } from "./metadata";
import { findRefreshToken, revokeFamily } from "./refresh";
import { looksLikeJwt } from "./tokens";

export interface RevocationRequest {
  token?: string;
  token_type_hint?: string;
  client_id?: string;
}

/**
 * Token revocation (RFC 7009) for public clients, which name themselves with `client_id`. A refresh token revokes its
 * whole family (every refresh token and access token issued from the same authorization); an access token revokes
 * its grant, i.e. that access token. The token's kind is told by its shape, so `token_type_hint` is read as what it
 * is, a hint, and any value is accepted (section 2.1). An unknown, expired or already revoked token, or one issued to
 * another client, is answered the same way with nothing revoked (section 2.2): the answer tells nothing about a token.
 */
export async function revokeToken(
  work: DirectoryWork,
  config: Config,
  documents: ClientDocumentDeps,
  form: RevocationRequest,
): Promise<void> {
  const db = work.directory;
  if (!form.token) throw new OAuthError("invalid_request", "token is required");
  if (!form.client_id) throw new OAuthError("invalid_request", "client_id is required (public clients name themselves)");
  const client = await requireClient(db, config, documents, form.client_id);

  if (looksLikeJwt(form.token)) {
    if (!config.JWT_SECRET)
      throw new OAuthError("temporarily_unavailable", "The revocation endpoint is not configured (JWT_SECRET is unset)", 503);
    let claims: Record<string, unknown>;
    try {
      claims = await verify(form.token, config.JWT_SECRET, { alg: "HS256", iss: issuerOf(config), aud: mcpServerUrlOf(config) });
    } catch {
      return; // Not ours, or expired: nothing left to revoke.
    }
    if (typeof claims.jti !== "string" || claims.client_id !== client.clientId) return;
    await db
      .update(oauthGrants)
      .set({ revokedAt: nowIso() })
      .where(and(eq(oauthGrants.id, claims.jti), eq(oauthGrants.clientId, client.clientId), isNull(oauthGrants.revokedAt)))
      .run();
    return;
  }
  const refresh = await findRefreshToken(db, form.token);
  if (refresh && refresh.clientId === client.clientId) await revokeFamily(work, refresh.familyId, "user");
}
