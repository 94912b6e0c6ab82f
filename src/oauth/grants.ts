import { sign } from "hono/jwt";
import type { Config } from "../env";
import { newId } from "../lib/ids";
import { addSeconds, nowIso } from "../lib/time";
import type { Permission } from "../platform/permissions";
import { issuerOf, mcpServerUrlOf } from "./metadata";

/**
 * An access token's grant and the token response that carries it: what the authorization_code exchange (tokens.ts)
 * and the refresh_token rotation (refresh.ts) both issue.
 */

/** Spec, Limits: an MCP access token lives one hour. */
export const ACCESS_TOKEN_TTL_SECONDS = 3600;

export interface TokenRequest {
  grant_type?: string;
  code?: string;
  redirect_uri?: string;
  client_id?: string;
  code_verifier?: string;
  resource?: string;
  refresh_token?: string;
  scope?: string;
}

/** The token response: RFC 6749 section 5.1 plus the spec's metadata (Authentication rule 3), at top level. */
export interface TokenResponse {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  scope: string;
  mcp_server_url: string;
  user_id: string;
  organization_id: string;
  organization_name: string;
  permissions: Permission[];
  /** Opaque and single use: grant_type=refresh_token rotates it (refresh.ts). */
  refresh_token: string;
}

export type SigningConfig = Config & { JWT_SECRET: string };

/** What a refresh token family is bound to. */
export interface Family {
  familyId: string;
  clientId: string;
  userId: string;
  organizationId: string;
}

export type Grant = Family & { id: string; permissions: Permission[]; createdAt: string; expiresAt: string };

/** A grant (one access token's `jti`) in `family`, valid for the access token's lifetime. */
export function newGrant(family: Family, permissions: Permission[], now: Date, id = newId()): Grant {
  return { id, ...family, permissions, createdAt: nowIso(now), expiresAt: nowIso(addSeconds(now, ACCESS_TOKEN_TTL_SECONDS)) };
}

/** Signs the access token of `grant` and answers it with the spec's metadata and the refresh token. */
export async function tokenResponse(
  config: SigningConfig,
  grant: Grant,
  organizationName: string,
  refreshToken: string,
  now: Date,
): Promise<TokenResponse> {
  const iat = Math.floor(now.getTime() / 1000);
  const claims = {
    iss: issuerOf(config),
    aud: mcpServerUrlOf(config),
    sub: grant.userId,
    org: grant.organizationId,
    scope: grant.permissions.join(" "),
    client_id: grant.clientId,
    jti: grant.id,
    iat,
    exp: iat + ACCESS_TOKEN_TTL_SECONDS,
  };
  return {
    access_token: await sign(claims, config.JWT_SECRET, "HS256"),
    token_type: "Bearer",
    expires_in: ACCESS_TOKEN_TTL_SECONDS,
    scope: claims.scope,
    mcp_server_url: claims.aud,
    user_id: grant.userId,
    organization_id: grant.organizationId,
    organization_name: organizationName,
    permissions: grant.permissions,
    refresh_token: refreshToken,
  };
}
