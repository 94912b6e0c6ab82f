import { appUrlOf, type Config } from "../env";
import { DEFAULT_PERMISSIONS, PERMISSION_NAMES } from "../platform/permissions";

/** This server's issuer identifier: APP_URL, the origin users reach it at (RFC 8414 section 2). */
export const issuerOf = appUrlOf;

/** The MCP server the tokens are for (their `aud`, RFC 8707 resource): MCP_SERVER_URL, or `/mcp` on this origin. */
export const mcpServerUrlOf = (config: Config): string => config.MCP_SERVER_URL ?? `${issuerOf(config)}/mcp`;

/** The path of the MCP endpoint on this worker, where access tokens are accepted beside /v1. */
export const mcpPathOf = (config: Config): string => new URL(mcpServerUrlOf(config)).pathname.replace(/\/+$/, "") || "/mcp";

/**
 * Where an MCP client finds the protected-resource metadata (for `WWW-Authenticate: Bearer resource_metadata=…`): the
 * path-suffixed address RFC 9728 section 3.1 derives from the resource, which routes.ts serves for `/mcp`; the plain
 * one for an MCP server elsewhere.
 */
export const protectedResourceMetadataUrl = (config: Config): string =>
  `${issuerOf(config)}/.well-known/oauth-protected-resource${mcpPathOf(config) === "/mcp" ? "/mcp" : ""}`;

/** RFC 8414 authorization server metadata. */
export function authorizationServerMetadata(config: Config) {
  const issuer = issuerOf(config);
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    registration_endpoint: `${issuer}/oauth/register`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    revocation_endpoint_auth_methods_supported: ["none"],
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: ["authorization_code", "refresh_token"],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: ["none"],
    scopes_supported: [...PERMISSION_NAMES],
    authorization_response_iss_parameter_supported: true,
    // A client_id may be the https URL of the client's metadata document (client-documents.ts; MCP 2025-11-25).
    client_id_metadata_document_supported: true,
    service_documentation: `${issuer}/docs`,
  };
}

/**
 * The scope an MCP client asks for when nothing names one (RFC 9728 `scopes_supported`, and the 401's `scope`): what an
 * agent needs to read and work the CRM and the document desk. The explicit-only permissions (erasure, users, API keys,
 * the organization) are left out: a client asks for one by name, after a 403 step-up names it.
 */
export const BASELINE_SCOPE = DEFAULT_PERMISSIONS.join(" ");

/** RFC 9728 protected resource metadata of the MCP server. */
export function protectedResourceMetadata(config: Config) {
  return {
    resource: mcpServerUrlOf(config),
    authorization_servers: [issuerOf(config)],
    scopes_supported: [...DEFAULT_PERMISSIONS],
    bearer_methods_supported: ["header"],
    resource_name: "Brokerage Edge MCP server",
  };
}
