/**
 * The OAuth 2.1 authorization server (spec: Authentication rule 3): authorization code + PKCE (S256),
 * Dynamic Client Registration, RFC 8414 / RFC 9728 metadata. Its access tokens are accepted on every authenticated
 * family and the MCP endpoint (platform/auth.ts); a client a user grants is an integration (integrations/).
 *
 * Why not @cloudflare/workers-oauth-provider (read at 1.2.3; docs/decisions/0016-our-own-oauth-server.md): it wraps the
 * whole Worker as its fetch handler and issues opaque tokens (`userId:grantId:secret`) kept in a KV namespace
 * (OAUTH_KV), with props encrypted under the token. The spec asks for a signed JWT valid one hour whose response
 * carries the MCP server URL, user, organization and permissions; the provider has no JWT access tokens and would add
 * KV beside D1, take over routing from Hono (and so /openapi.json and the per-family errors). What it does well (PKCE,
 * single-use codes, DCR, metadata, rotating refresh tokens) is small enough to own here on D1 (refresh.ts for the
 * refresh tokens).
 */
import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { openCors } from "../platform/cors";
import { readConfig } from "../env";
import type { DirectoryWork } from "../events/directory-outbox";
import { apiError } from "../platform/api-family";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { rateLimit } from "../platform/rate-limit";
import { defineRoute, type RouteFamily } from "../platform/route";
import type { ClientDocumentDeps } from "./client-documents";
import { registerClient } from "./clients";
import { OAuthError } from "./errors";
import { authorizationServerMetadata, protectedResourceMetadata } from "./metadata";
import { authorize, submitAuthorization } from "./flow";
import { errorPage } from "./pages";
import {
  AuthorizationServerMetadata,
  AuthorizeForm,
  AuthorizeQuery,
  ClientRegistration,
  ClientRegistrationRequest,
  OAuthErrorBody,
  ProtectedResourceMetadata,
  RevocationForm,
  TokenForm,
  TokenResponse,
} from "./schemas";
import { revokeToken } from "./revoke";
import { requestToken } from "./tokens";

const tags = ["OAuth"];
/** Errors of /oauth/* are RFC 6749 bodies (platform/error-handler.ts, family "oauth"). */
const OAUTH: RouteFamily = {
  name: "api",
  error: (description) => ({ description, content: { "application/json": { schema: OAuthErrorBody } } }),
};
const oauthError = (description: string) => OAUTH.error(description);
const html = (description: string) => ({ description, content: { "text/html": { schema: z.string() } } });
const redirect = (description: string) => ({
  description,
  headers: {
    Location: {
      description: "The client's redirect URI with code and state, or error, error_description and state; plus iss (RFC 9207)",
      schema: { type: "string" as const },
    },
  },
});
const NO_STORE = { "Cache-Control": { description: "no-store", schema: { type: "string" as const, example: "no-store" } } };

const authorizePage = defineRoute(OAUTH, {
  operationId: "authorizeClient",
  method: "get",
  path: "/oauth/authorize",
  security: [],
  tags,
  summary: "Start an authorization (OAuth 2.1 authorization code with PKCE)",
  description: `Only known clients and registered redirect URIs: an unknown client or redirect URI gets an error page and is never
redirected to. Other problems are redirected back with \`error\`, \`error_description\` and \`state\` to a configured client
(OAUTH_CLIENTS); a client that registered itself, or whose client_id is the URL of its metadata document (Client ID
Metadata Document: fetched from a public address, at most 5 KB, 5 s, no redirect, cached per its Cache-Control), gets the
error page instead (RFC 9700 section 4.11.2: no redirect to an untrusted address before a user approved the client). A caller presenting a live
bearer session (\`Authorization: Bearer <session token>\`) is that user and is redirected at once with \`code\` and \`state\`.
A browser signs in with a one-time code mailed to its e-mail, then approves or denies the permissions asked for on a
consent page. The code is valid ${60} seconds, once.`,
  request: { query: AuthorizeQuery },
  responses: {
    200: html("The sign-in, code or consent page"),
    302: redirect("Back to the client's redirect URI"),
    400: html(
      "Unknown client, a client metadata document that cannot be used, a redirect URI not registered for the client, or any other problem of a request from a registered or document client (not redirected)",
    ),
    401: html("The bearer session presented is unknown, revoked or expired"),
    503: html("The authorization server is not configured (JWT_SECRET)"),
  },
});

const authorizeForm = defineRoute(OAUTH, {
  operationId: "submitAuthorization",
  method: "post",
  path: "/oauth/authorize",
  security: [],
  tags,
  summary: "A step of the browser sign-in and consent",
  description:
    "The pages' forms post here, to the same address (the authorization request stays in the query). Each form carries the CSRF token of its page, bound to the browser's sign-in cookie. Steps: `email` (mails a code when the address has an account; the page is the same either way), `code`, `consent` (`decision` approve or deny), `restart`. Rate-limited per address with the registration endpoint (20 a minute).",
  middleware: [rateLimit("oauth-public:post")] as const,
  request: { query: AuthorizeQuery, body: { required: true, content: { "application/x-www-form-urlencoded": { schema: AuthorizeForm } } } },
  responses: {
    200: html("The next page (or the same one with what went wrong)"),
    302: redirect("Approved (with code) or denied (error=access_denied): back to the client"),
    400: html("Unknown client, unregistered redirect URI, any other problem of a request from a registered client, or an unknown step"),
    403: html("The form's CSRF token does not belong to this browser's sign-in (expired or forged)"),
    429: oauthError("Too many requests from this address (rate_limited)"),
    503: html("The authorization server is not configured (JWT_SECRET)"),
  },
});

const token = defineRoute(OAUTH, {
  operationId: "exchangeAuthorizationCode",
  method: "post",
  path: "/oauth/token",
  security: [],
  tags,
  summary: "Exchange an authorization code or a refresh token for an access token",
  description: `Form-encoded (spec, Authentication rule 3): grant_type=authorization_code, code, redirect_uri, client_id,
code_verifier; or grant_type=refresh_token, refresh_token, client_id, optional scope (a part of what was granted).
The answer: a JWT access token valid one hour, a new single-use refresh token (valid 30 days), and the spec's metadata at
top level: \`mcp_server_url\`, \`user_id\`, \`organization_id\`, \`organization_name\`, \`permissions\`. A code or a
refresh token used a second time is refused and every token issued from it is revoked. Errors follow RFC 6749 section
5.2. CORS-enabled; 30 requests a minute per address.`,
  middleware: [rateLimit("oauth-token:post")] as const,
  request: { body: { required: true, content: { "application/x-www-form-urlencoded": { schema: TokenForm } } } },
  responses: {
    200: {
      description: "The access token and its metadata",
      headers: NO_STORE,
      content: { "application/json": { schema: TokenResponse } },
    },
    400: oauthError(
      "invalid_request, invalid_grant (unknown, expired, used or mismatched code or refresh token, wrong verifier), invalid_scope (a refresh asking for more than was granted) or unsupported_grant_type",
    ),
    401: oauthError("invalid_client: unknown client_id, or a client metadata document that cannot be used (the description says why)"),
    429: oauthError("Too many requests from this address (rate_limited)"),
    503: oauthError("temporarily_unavailable: JWT_SECRET is not configured"),
  },
});

const revoke = defineRoute(OAUTH, {
  operationId: "revokeToken",
  method: "post",
  path: "/oauth/revoke",
  security: [],
  tags,
  summary: "Revoke an access token or a refresh token (RFC 7009)",
  description: `Form-encoded: \`token\`, optional \`token_type_hint\` (access_token or refresh_token; a hint only), \`client_id\` (public
clients name themselves). A refresh token revokes every token of its family (the refresh tokens and access tokens issued
from the same authorization); an access token revokes that access token. 200 with an empty body whether or not the token
was known, live, or issued to this client (RFC 7009 section 2.2). CORS-enabled; 30 requests a minute per address.`,
  middleware: [rateLimit("oauth-revoke:post")] as const,
  request: { body: { required: true, content: { "application/x-www-form-urlencoded": { schema: RevocationForm } } } },
  responses: {
    200: { description: "Revoked, or nothing to revoke (empty body)", headers: NO_STORE },
    400: oauthError("invalid_request: no token or no client_id"),
    401: oauthError("invalid_client: unknown client_id, or a client metadata document that cannot be used (the description says why)"),
    429: oauthError("Too many requests from this address (rate_limited)"),
    503: oauthError("temporarily_unavailable: JWT_SECRET is not configured (an access token cannot be read)"),
  },
});

const register = defineRoute(OAUTH, {
  operationId: "registerClient",
  method: "post",
  path: "/oauth/register",
  security: [],
  tags,
  summary: "Register a public client (RFC 7591 Dynamic Client Registration)",
  description:
    'For MCP clients that register themselves. Public clients only (`token_endpoint_auth_method: "none"`, PKCE); redirect URIs must be https, or http to a loopback address (127.0.0.1, localhost, [::1]), and then match exactly, except the port of a loopback one (any port, RFC 8252 section 7.3). `grant_types` other than authorization_code and refresh_token are dropped from the registration. CORS-enabled; 20 requests a minute per address.',
  middleware: [rateLimit("oauth-public:post")] as const,
  request: { body: { required: true, content: { "application/json": { schema: ClientRegistrationRequest } } } },
  responses: {
    201: {
      description: "The client, with its client_id",
      headers: NO_STORE,
      content: { "application/json": { schema: ClientRegistration } },
    },
    400: oauthError("invalid_redirect_uri or invalid_client_metadata"),
    429: oauthError("Too many requests from this address (rate_limited)"),
  },
});

const metadataRoute = (operationId: string, path: string, summary: string, schema: z.ZodType) =>
  defineRoute(
    { name: "api", error: apiError },
    {
      operationId,
      method: "get",
      path,
      security: [],
      tags,
      summary,
      responses: {
        200: { description: summary, content: { "application/json": { schema } } },
        404: apiError("Never: declared for clients that probe"),
      },
    },
  );

const serverMetadata = metadataRoute(
  "getAuthorizationServerMetadata",
  "/.well-known/oauth-authorization-server",
  "Authorization server metadata (RFC 8414)",
  AuthorizationServerMetadata,
);
const resourceMetadata = metadataRoute(
  "getProtectedResourceMetadata",
  "/.well-known/oauth-protected-resource",
  "Protected resource metadata of the MCP server (RFC 9728)",
  ProtectedResourceMetadata,
);
const mcpResourceMetadata = metadataRoute(
  "getMcpProtectedResourceMetadata",
  "/.well-known/oauth-protected-resource/mcp",
  "The same, at the path-suffixed address MCP clients try first",
  ProtectedResourceMetadata,
);

/** A registration body that breaks the schema is `invalid_redirect_uri` or `invalid_client_metadata` (RFC 7591 section 3.2.2). */
const registrationHook = (result: { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } }) => {
  if (result.success) return;
  const issues = result.error?.issues ?? [];
  const message =
    issues.map((i) => `${i.path.map(String).join(".") || "body"}: ${i.message}`).join("; ") || "The registration request is malformed";
  throw new OAuthError(issues.some((i) => i.path[0] === "redirect_uris") ? "invalid_redirect_uri" : "invalid_client_metadata", message);
};

/**
 * A parameter of the authorization pages over its bound: the request cannot be verified, so it is never redirected
 * back; the browser gets the error page (with the pages' headers), not a JSON body.
 */
const pageHook = (result: { success: boolean }, c: Context) => {
  if (!result.success) return errorPage(c, 400, "This authorization request is malformed: a parameter is longer than allowed.");
};

/** The token and registration answers must not be cached, errors included (RFC 6749 section 5.1). */
const noStore = async (c: Context, next: () => Promise<void>) => {
  await next();
  c.res.headers.set("Cache-Control", "no-store");
  c.res.headers.set("Pragma", "no-cache");
};

/** The directory and the bindings a token or revocation request needs for the integration events it may emit. */
const directoryWork = (c: Context<AppBindings>): DirectoryWork => ({
  env: c.env,
  directory: c.get("directory"),
  defer: (work) => c.executionCtx.waitUntil(work),
});

/** The OAuth routes, reaching clients' metadata documents through `documents` (client-documents.ts; tests replace parts). */
export function createOAuthRoutes(documents: ClientDocumentDeps) {
  const routes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook });
  // Browser-based MCP clients (an inspector page) read the metadata, register and exchange codes with fetch: no cookie
  // or ambient credential is involved on these routes, so any origin may call them.
  const anyOrigin = openCors(["GET", "POST", "OPTIONS"], ["content-type", "authorization", "mcp-protocol-version"]);
  routes.use("/.well-known/*", anyOrigin);
  routes.use("/oauth/token", anyOrigin, noStore);
  routes.use("/oauth/register", anyOrigin, noStore);
  routes.use("/oauth/revoke", anyOrigin, noStore);

  return routes
    .openapi(authorizePage, (c) => authorize(c, c.req.valid("query"), documents), pageHook as never)
    .openapi(authorizeForm, (c) => submitAuthorization(c, c.req.valid("query"), c.req.valid("form"), documents), pageHook as never)
    .openapi(token, async (c) => c.json(await requestToken(directoryWork(c), readConfig(c.env), documents, c.req.valid("form")), 200))
    .openapi(revoke, async (c) => {
      await revokeToken(directoryWork(c), readConfig(c.env), documents, c.req.valid("form"));
      return c.body(null, 200);
    })
    .openapi(register, async (c) => c.json(await registerClient(c.get("directory"), c.req.valid("json")), 201), registrationHook as never)
    .openapi(serverMetadata, (c) => c.json(authorizationServerMetadata(readConfig(c.env)), 200))
    .openapi(resourceMetadata, (c) => c.json(protectedResourceMetadata(readConfig(c.env)), 200))
    .openapi(mcpResourceMetadata, (c) => c.json(protectedResourceMetadata(readConfig(c.env)), 200));
}
