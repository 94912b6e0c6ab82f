import { eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { oauthClients } from "../db/schema";
import type { Config } from "../env";
import { newId } from "../lib/ids";
import { nowIso } from "../lib/time";
import { jsonIssues } from "../lib/json-bounds";
import { oneLineText } from "../lib/validation";
import { type ClientDocumentDeps, ClientDocumentRefused, isDocumentUrl, loadClientDocument } from "./client-documents";
import { OAuthError } from "./errors";
import { isAbsoluteWithoutFragment, isHttpsOrLoopback, MAX_CLIENT_NAME, MAX_REDIRECT_URI, MAX_REDIRECT_URIS } from "./uris";

/**
 * A client the authorization server knows, by where it was declared: `configured` in OAUTH_CLIENTS (redirect URI
 * patterns; errors are redirected to it), `registered` by itself (RFC 7591), or `document`: its client_id is the URL of
 * its metadata document (client-documents.ts). A registered or document client is whatever anyone declared, so its
 * redirect URIs match exactly and no error is sent to them before a user approved it (authorize.ts).
 */
export interface KnownClient {
  clientId: string;
  clientName: string | null;
  /** Configured clients: patterns (see `redirectMatches`); the others: exact URIs. */
  redirectUris: string[];
  kind: "configured" | "registered" | "document";
}

const MAX_CLIENT_ID = 200;

/**
 * The client `clientId` names, looked up in the order MCP clients try them (MCP authorization 2025-11-25, client
 * registration): OAUTH_CLIENTS, then a metadata document URL, then a registration. Null when none knows it; a document
 * that cannot be used throws `ClientDocumentRefused`, whose message says why.
 */
export async function findClient(
  db: Db,
  config: Config,
  documents: ClientDocumentDeps,
  clientId: string | undefined,
): Promise<KnownClient | null> {
  if (!clientId || clientId.length > MAX_CLIENT_ID) return null;
  const fixed = config.OAUTH_CLIENTS.find((c) => c.clientId === clientId);
  if (fixed) return { clientId, clientName: null, redirectUris: fixed.redirectUris, kind: "configured" };
  if (isDocumentUrl(clientId)) return { clientId, ...(await loadClientDocument(config, documents, clientId)), kind: "document" };
  const row = await db.select().from(oauthClients).where(eq(oauthClients.id, clientId)).get();
  return row ? { clientId: row.id, clientName: row.clientName, redirectUris: row.redirectUris, kind: "registered" } : null;
}

/** `findClient` for the token and revocation endpoints: an unknown client, or an unusable document, is `invalid_client`. */
export async function requireClient(
  db: Db,
  config: Config,
  documents: ClientDocumentDeps,
  clientId: string | undefined,
): Promise<KnownClient> {
  let client: KnownClient | null;
  try {
    client = await findClient(db, config, documents, clientId);
  } catch (err) {
    if (err instanceof ClientDocumentRefused) throw new OAuthError("invalid_client", err.message, 401);
    throw err;
  }
  if (!client) throw new OAuthError("invalid_client", "Unknown client_id", 401);
  return client;
}

/**
 * A static client's redirect pattern matches the whole URI; each `*` stands for one DNS label or a port number
 * (letters, digits, hyphens: never a dot, colon, slash, `@`, `?` or `#`), so `http://127.0.0.1:*\/callback` admits any
 * port and nothing else. A registered or document client's URIs match exactly (RFC 7591 and OAuth 2.1 section 2.3.1), except
 * that an http loopback redirect matches on everything but the port (RFC 8252 section 7.3: a native client listens on
 * an ephemeral port), so a registration without a port, or with another one, admits any.
 */
export function redirectMatches(client: KnownClient, redirectUri: string | undefined): boolean {
  if (!redirectUri || redirectUri.length > MAX_REDIRECT_URI || !isAbsoluteWithoutFragment(redirectUri)) return false;
  const loopback = withoutLoopbackPort(redirectUri);
  if (client.kind !== "configured")
    return (
      client.redirectUris.includes(redirectUri) ||
      (loopback !== null && client.redirectUris.some((uri) => withoutLoopbackPort(uri) === loopback))
    );
  return client.redirectUris.some((pattern) => {
    if (patternRegex(pattern).test(redirectUri)) return true;
    const portless = withoutLoopbackPort(pattern);
    return loopback !== null && portless !== null && patternRegex(portless).test(loopback);
  });
}

/**
 * `http://<loopback host>[:port]<rest>` without its port, compared as written (no URL normalization, so the scheme,
 * host, path and query must be exactly the registered ones); null for any other URI. The host must end at the port,
 * path, query or end: `http://127.0.0.1.evil.example` and `http://127.0.0.1:80@evil.example` are not loopback. A
 * pattern's port may be `*`. `localhost` counts as configured by registration and OAUTH_CLIENTS (RFC 8252 section 8.3
 * prefers the IP literals; both are accepted here).
 */
function withoutLoopbackPort(uri: string): string | null {
  const m = /^(http:\/\/(?:127\.0\.0\.1|\[::1\]|localhost))(?::(?:\d{1,5}|\*))?(?=[/?]|$)(.*)$/.exec(uri);
  return m ? `${m[1]}${m[2]}` : null;
}

const patternRegex = (pattern: string) =>
  new RegExp(
    `^${pattern
      .split("*")
      .map((part) => part.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&"))
      .join("[A-Za-z0-9-]+")}$`,
  );

/** Where a registered client may send its users back: https anywhere, plain http only to this machine (RFC 8252 section 7.3). */
function allowedRedirect(uri: unknown): uri is string {
  return typeof uri === "string" && uri.length <= MAX_REDIRECT_URI && isAbsoluteWithoutFragment(uri) && isHttpsOrLoopback(uri);
}

export interface RegisteredClient {
  client_id: string;
  client_id_issued_at: number;
  client_name?: string;
  redirect_uris: string[];
  token_endpoint_auth_method: "none";
  grant_types: ("authorization_code" | "refresh_token")[];
  response_types: ["code"];
}

/**
 * Dynamic Client Registration (RFC 7591) of a public client. Metadata the server does not support is refused when it
 * would change security (a client secret), and narrowed when it is only a wish: grant types other than
 * `authorization_code` and `refresh_token` are dropped, as section 3.2.1 allows. Every client is issued refresh tokens
 * (a client that did not list the grant simply never uses them).
 */
export async function registerClient(db: Db, body: Record<string, unknown>): Promise<RegisteredClient> {
  // As in every JSON body (lib/json-bounds.ts; this route's own hook skips the shared one): each string, the metadata
  // ignored here (client_uri, contacts, software_id …) and the field names included, must be well-formed Unicode
  // without NUL. A lone surrogate cannot be stored as UTF-8 and would come back as another name or URI than was sent.
  const unreadable = jsonIssues(body);
  if (unreadable.length > 0) {
    // A field name may itself be the ill-formed text: echoed with U+FFFD in its place.
    const message = unreadable.map((i) => `${i.field.toWellFormed() || "body"}: ${i.message}`).join("; ");
    throw new OAuthError(
      unreadable.some((i) => i.path[0] === "redirect_uris") ? "invalid_redirect_uri" : "invalid_client_metadata",
      message,
    );
  }
  const uris = body.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > MAX_REDIRECT_URIS) {
    throw new OAuthError("invalid_redirect_uri", `redirect_uris must list 1 to ${MAX_REDIRECT_URIS} URIs`);
  }
  const bad = uris.find((u) => !allowedRedirect(u));
  if (bad !== undefined) {
    throw new OAuthError(
      "invalid_redirect_uri",
      `redirect URI ${JSON.stringify(String(bad).slice(0, 200))} is not https, or http to a loopback address (127.0.0.1, localhost, [::1]), without a fragment`,
    );
  }
  const method = body.token_endpoint_auth_method;
  if (method !== undefined && method !== "none")
    throw new OAuthError(
      "invalid_client_metadata",
      'token_endpoint_auth_method must be "none": only public clients with PKCE are registered',
    );
  const grants = body.grant_types;
  if (grants !== undefined && (!Array.isArray(grants) || !grants.includes("authorization_code")))
    throw new OAuthError("invalid_client_metadata", 'grant_types must include "authorization_code"');
  const responses = body.response_types;
  if (responses !== undefined && (!Array.isArray(responses) || !responses.includes("code")))
    throw new OAuthError("invalid_client_metadata", 'response_types must include "code"');
  const name = body.client_name;
  // Shown on the consent page: one line of visible text, no control characters or bidi overrides (lib/validation.ts).
  if (name !== undefined && (typeof name !== "string" || !oneLineText(MAX_CLIENT_NAME).safeParse(name).success)) {
    throw new OAuthError(
      "invalid_client_metadata",
      `client_name must be one line of 1 to ${MAX_CLIENT_NAME} visible characters, without control characters`,
    );
  }
  const at = nowIso();
  const client = {
    id: newId(),
    clientName: typeof name === "string" ? name.trim() : null,
    redirectUris: [...new Set(uris as string[])],
    createdAt: at,
    lastUsedAt: at,
  };
  await db.insert(oauthClients).values(client).run();
  return {
    client_id: client.id,
    client_id_issued_at: Math.floor(Date.parse(client.createdAt) / 1000),
    ...(client.clientName ? { client_name: client.clientName } : {}),
    redirect_uris: client.redirectUris,
    token_endpoint_auth_method: "none",
    grant_types:
      Array.isArray(grants) && grants.includes("refresh_token") ? ["authorization_code", "refresh_token"] : ["authorization_code"],
    response_types: ["code"],
  };
}
