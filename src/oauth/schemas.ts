import { z } from "@hono/zod-openapi";
import { PERMISSION_NAMES } from "../platform/permissions";

const param = (name: string, description: string, max = 2000) =>
  z
    .string()
    .max(max)
    .optional()
    .openapi({ param: { name, in: "query" }, description });

export const AuthorizeQuery = z.object({
  client_id: param(
    "client_id",
    "A client of OAUTH_CLIENTS, the https URL of the client's metadata document (Client ID Metadata Document), or a client registered at /oauth/register",
    200,
  ),
  redirect_uri: param("redirect_uri", "Must match a redirect URI registered for the client"),
  response_type: param("response_type", 'Must be "code"', 20),
  code_challenge: param("code_challenge", "BASE64URL(SHA256(code_verifier)), 43 characters (RFC 7636)", 128),
  code_challenge_method: param("code_challenge_method", 'Must be "S256"; "plain" is refused', 10),
  state: param("state", "Returned unchanged with the code or the error (at most 1000 characters)"),
  scope: param(
    "scope",
    `Space-separated permissions (absent: all but contacts:erase, granted only when asked for by name): ${PERMISSION_NAMES.join(", ")}`,
  ),
  resource: param("resource", "RFC 8707 resource indicator: if present, the MCP server URL (the only resource tokens are issued for)"),
});

export const AuthorizeForm = z.object({
  csrf_token: z.string().max(200).optional().openapi({ description: "The token of the page the form is on" }),
  step: z.string().max(20).optional().openapi({ description: "email | code | consent | restart" }),
  email: z.string().max(254).optional(),
  code: z.string().max(20).optional().openapi({ description: "The 6-digit code mailed to the address" }),
  decision: z.string().max(20).optional().openapi({ description: "approve | deny (step consent)" }),
  organization_id: z
    .string()
    .max(100)
    .optional()
    .openapi({ description: "Which organization to act for, when the e-mail belongs to several" }),
});

export const TokenForm = z
  .object({
    grant_type: z.string().max(100).optional().openapi({ example: "authorization_code" }),
    code: z.string().max(200).optional(),
    redirect_uri: z.string().max(2000).optional(),
    client_id: z.string().max(200).optional(),
    code_verifier: z.string().max(200).optional(),
    resource: z.string().max(2000).optional().openapi({ description: "RFC 8707: if present, the MCP server URL" }),
    refresh_token: z
      .string()
      .max(200)
      .optional()
      .openapi({ description: "grant_type=refresh_token: the refresh token to rotate (single use)" }),
    scope: z
      .string()
      .max(1000)
      .optional()
      .openapi({ description: "grant_type=refresh_token: narrow the new access token to these granted permissions (space-separated)" }),
  })
  .openapi("TokenRequest");

export const RevocationForm = z
  .object({
    token: z.string().max(2000).optional().openapi({ description: "The access token or refresh token to revoke" }),
    token_type_hint: z
      .string()
      .max(100)
      .optional()
      .openapi({ description: "access_token or refresh_token: a hint only, the token's kind is told by its shape" }),
    client_id: z.string().max(200).optional().openapi({ description: "The public client the token was issued to" }),
  })
  .openapi("RevocationRequest");

export const TokenResponse = z
  .object({
    access_token: z.string().openapi({
      description: "A JWT (HS256) with iss, aud (the MCP server URL), sub (user id), org, scope, client_id, jti (grant id), iat, exp",
    }),
    token_type: z.literal("Bearer"),
    expires_in: z.int().openapi({ example: 3600 }),
    scope: z.string().openapi({ description: "The granted permissions, space-separated" }),
    mcp_server_url: z.string().openapi({ description: "Where to use the token: the MCP server (Streamable HTTP)" }),
    user_id: z.string(),
    organization_id: z.string(),
    organization_name: z.string(),
    permissions: z.array(z.enum(PERMISSION_NAMES as [string, ...string[]])),
    refresh_token: z.string().openapi({
      description:
        "Opaque, single use, valid 30 days: grant_type=refresh_token answers a new one. Using one twice revokes every token issued from it",
    }),
  })
  .openapi("TokenResponse");

export const OAuthErrorBody = z
  .object({
    error: z.string().openapi({
      example: "invalid_grant",
      description: "RFC 6749 section 5.2 / RFC 7591 section 3.2.2 error code (rate_limited past the limit)",
    }),
    error_description: z.string().optional(),
  })
  .openapi("OAuthError");

export const ClientRegistrationRequest = z
  .object({
    redirect_uris: z
      .array(z.string().max(2000))
      .min(1)
      .max(10)
      .openapi({ description: "https, or http to 127.0.0.1, localhost or [::1] (any port)" }),
    client_name: z.string().max(100).optional(),
    token_endpoint_auth_method: z.string().max(50).optional().openapi({ description: 'Only "none" (public client with PKCE)' }),
    grant_types: z.array(z.string().max(100)).max(10).optional(),
    response_types: z.array(z.string().max(100)).max(10).optional(),
  })
  .loose()
  .openapi("ClientRegistrationRequest");

export const ClientRegistration = z
  .object({
    client_id: z.string(),
    client_id_issued_at: z.int(),
    client_name: z.string().optional(),
    redirect_uris: z.array(z.string()),
    token_endpoint_auth_method: z.literal("none"),
    grant_types: z.array(z.string()),
    response_types: z.array(z.string()),
  })
  .openapi("ClientRegistration");

export const AuthorizationServerMetadata = z
  .object({
    issuer: z.string(),
    authorization_endpoint: z.string(),
    token_endpoint: z.string(),
    registration_endpoint: z.string(),
    revocation_endpoint: z.string(),
    revocation_endpoint_auth_methods_supported: z.array(z.string()),
    response_types_supported: z.array(z.string()),
    response_modes_supported: z.array(z.string()),
    grant_types_supported: z.array(z.string()),
    code_challenge_methods_supported: z.array(z.string()),
    token_endpoint_auth_methods_supported: z.array(z.string()),
    scopes_supported: z.array(z.string()),
    authorization_response_iss_parameter_supported: z.boolean(),
    client_id_metadata_document_supported: z
      .boolean()
      .openapi({ description: "A client_id may be the https URL of a Client ID Metadata Document (no registration needed)" }),
    service_documentation: z.string(),
  })
  .openapi("AuthorizationServerMetadata");

export const ProtectedResourceMetadata = z
  .object({
    resource: z.string(),
    authorization_servers: z.array(z.string()),
    scopes_supported: z.array(z.string()),
    bearer_methods_supported: z.array(z.string()),
    resource_name: z.string(),
  })
  .openapi("ProtectedResourceMetadata");
