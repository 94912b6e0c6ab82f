import type { Db } from "../db/client";
import { eq } from "drizzle-orm";
import { oauthClients, oauthCodes } from "../db/schema";
import type { Config } from "../env";
import { sha256Hex, toBase64Url } from "../lib/crypto";
import { addSeconds, nowIso } from "../lib/time";
import { type ClientDocumentDeps, ClientDocumentRefused } from "./client-documents";
import { type KnownClient, findClient, redirectMatches } from "./clients";
import { issuerOf, mcpServerUrlOf } from "./metadata";
import { DEFAULT_PERMISSIONS, isPermission, PERMISSION_NAMES, type Permission } from "../platform/permissions";

/** An authorization code lives this long: the client exchanges it straight after the redirect. */
export const CODE_TTL_SECONDS = 60;
const MAX_STATE = 1000;
const MAX_SCOPE = 1000;

/** A verified authorization request (GET /oauth/authorize): known client, registered redirect, S256 challenge. */
export interface AuthorizationRequest {
  client: KnownClient;
  redirectUri: string;
  state?: string;
  codeChallenge: string;
  permissions: Permission[];
}

export type AuthorizationQuery = Partial<
  Record<
    "client_id" | "redirect_uri" | "response_type" | "code_challenge" | "code_challenge_method" | "state" | "scope" | "resource",
    string
  >
>;

/**
 * What an authorization request amounts to. Until the client and its redirect URI are verified, a problem is shown on
 * an error page and never sent anywhere (RFC 6749 section 4.1.2.1); after that it goes back to a configured client
 * (OAUTH_CLIENTS) as a redirect. A registered client's redirect URI is whatever anyone registered, and a document
 * client's whatever anyone published, so redirecting an error there, before any user approved the client, would make
 * this origin an open redirector (RFC 9700 section 4.11.2): their errors are shown on the error page too. Their only
 * redirects follow the user's decision (code, or access_denied) or a session holder's request.
 */
export type AuthorizationOutcome =
  | { kind: "refused"; message: string }
  | { kind: "redirect-error"; redirectUri: string; state?: string; error: string; description: string }
  | { kind: "valid"; request: AuthorizationRequest };

export async function readAuthorizationRequest(
  db: Db,
  config: Config,
  documents: ClientDocumentDeps,
  q: AuthorizationQuery,
): Promise<AuthorizationOutcome> {
  let client: KnownClient | null;
  try {
    client = await findClient(db, config, documents, q.client_id);
  } catch (err) {
    if (err instanceof ClientDocumentRefused) return { kind: "refused", message: err.message };
    throw err;
  }
  if (!client)
    return {
      kind: "refused",
      message: q.client_id
        ? "This application is not registered with this service."
        : "The request names no application (client_id is missing).",
    };
  if (!redirectMatches(client, q.redirect_uri)) {
    return {
      kind: "refused",
      message: !q.redirect_uri
        ? "The request names no address to return to (redirect_uri is missing)."
        : client.kind === "document"
          ? `The address this application asked to return to is not among the redirect_uris of its metadata document (${client.clientId}).`
          : "The address this application asked to return to is not registered for it.",
    };
  }
  const redirectUri = q.redirect_uri!;
  const state = q.state;
  const fail = (error: string, description: string): AuthorizationOutcome =>
    client.kind !== "configured"
      ? {
          kind: "refused",
          message: `${description} (${error}). This application ${client.kind === "registered" ? "registered itself with this service" : "describes itself in a document of its own"}, so the problem is shown here instead of being sent to its address.`,
        }
      : { kind: "redirect-error", redirectUri, ...(state === undefined ? {} : { state: state.slice(0, MAX_STATE) }), error, description };
  if (state !== undefined && state.length > MAX_STATE) return fail("invalid_request", `state is longer than ${MAX_STATE} characters`);
  if (q.response_type === undefined) return fail("invalid_request", "response_type is required");
  if (q.response_type !== "code") return fail("unsupported_response_type", 'response_type must be "code"');
  if (q.code_challenge === undefined) return fail("invalid_request", "code_challenge is required (PKCE, RFC 7636)");
  if (q.code_challenge_method === undefined) return fail("invalid_request", 'code_challenge_method is required and must be "S256"');
  if (q.code_challenge_method !== "S256") return fail("invalid_request", 'code_challenge_method must be "S256"; "plain" is not accepted');
  if (!/^[A-Za-z0-9_-]{43}$/.test(q.code_challenge))
    return fail("invalid_request", "code_challenge must be the base64url SHA-256 of the code verifier (43 characters)");
  if (!isOurResource(config, q.resource)) return fail("invalid_target", `resource must be ${mcpServerUrlOf(config)}`);
  const permissions = parseScope(q.scope);
  if (!permissions) return fail("invalid_scope", `scope must list permissions separated by spaces, out of: ${PERMISSION_NAMES.join(", ")}`);
  return {
    kind: "valid",
    request: { client, redirectUri, ...(state === undefined ? {} : { state }), codeChallenge: q.code_challenge, permissions },
  };
}

/** RFC 8707: tokens are issued for the MCP server only; an absent resource means it too. */
export const isOurResource = (config: Config, resource: string | undefined): boolean =>
  resource === undefined || resource.replace(/\/+$/, "") === mcpServerUrlOf(config).replace(/\/+$/, "");

/** Space-separated permissions; absent or empty asks for all but the explicit-only ones (contacts:erase). Null when one is unknown. */
function parseScope(scope: string | undefined): Permission[] | null {
  if (scope !== undefined && scope.length > MAX_SCOPE) return null;
  const asked = (scope ?? "").split(" ").filter(Boolean);
  if (asked.length === 0) return [...DEFAULT_PERMISSIONS];
  if (!asked.every(isPermission)) return null;
  return PERMISSION_NAMES.filter((p) => asked.includes(p));
}

/** The redirect back to the client, with `iss` (RFC 9207) so a client talking to several servers knows which answered. */
export function redirectBack(config: Config, redirectUri: string, params: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [key, value] of Object.entries({ ...params, iss: issuerOf(config) }))
    if (value !== undefined) url.searchParams.set(key, value);
  return url.toString();
}

/** Stores a code for `request`, approved by `userId` of `organizationId`; returns the raw code (only its SHA-256 is kept). */
export async function issueCode(db: Db, request: AuthorizationRequest, who: { userId: string; organizationId: string }): Promise<string> {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const code = toBase64Url(bytes);
  const now = new Date();
  const insert = db.insert(oauthCodes).values({
    codeHash: await sha256Hex(code),
    clientId: request.client.clientId,
    redirectUri: request.redirectUri,
    codeChallenge: request.codeChallenge,
    userId: who.userId,
    organizationId: who.organizationId,
    permissions: request.permissions,
    createdAt: nowIso(now),
    expiresAt: nowIso(addSeconds(now, CODE_TTL_SECONDS)),
  });
  // A registered client in use is kept (the cron deletes the ones unused for CLIENT_IDLE_DAYS).
  if (request.client.kind === "registered")
    await db.batch([
      insert,
      db
        .update(oauthClients)
        .set({ lastUsedAt: nowIso(now) })
        .where(eq(oauthClients.id, request.client.clientId)),
    ]);
  else await insert.run();
  return code;
}
