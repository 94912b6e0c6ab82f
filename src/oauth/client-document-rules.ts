import { jsonIssues } from "../lib/json-bounds";
import { oneLineText } from "../lib/validation";
import { isAbsoluteWithoutFragment, isHttpsOrLoopback, MAX_CLIENT_NAME, MAX_REDIRECT_URI, MAX_REDIRECT_URIS } from "./uris";

/** What a metadata document tells about its client, once checked (client-documents.ts fetches it). */
export interface DocumentClient {
  clientName: string | null;
  redirectUris: string[];
}

/** Token endpoint methods that rest on a secret shared with the server: a public document cannot hold one. */
const SHARED_SECRET_METHODS = new Set(["client_secret_basic", "client_secret_post", "client_secret_jwt"]);

/**
 * The rules a client metadata document must meet (draft-ietf-oauth-client-id-metadata-document, section 4 and its
 * security considerations; the fields are RFC 7591's): a JSON object whose `client_id` is the URL it was fetched from,
 * compared as written; `redirect_uris` absolute URIs, which the request's redirect URI must be among (authorize.ts);
 * a public client: `token_endpoint_auth_method` absent or `none`, never a `client_secret_*` method, `client_secret`
 * or `client_secret_expires_at`. `client_name`, shown on the pages, is one line of visible text; `client_uri` and
 * `logo_uri`, when given, are URLs (neither is shown or fetched). A registration's other rules apply as well: only
 * https or loopback redirects, a grant and response type of the code flow.
 */
export function readClientDocument(clientId: string, text: string): { client: DocumentClient } | { problem: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { problem: "it is not JSON" };
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return { problem: "it is not a JSON object" };
  const doc = parsed as Record<string, unknown>;
  const unreadable = jsonIssues(doc);
  if (unreadable.length > 0) return { problem: `${unreadable[0]!.field.toWellFormed() || "the document"}: ${unreadable[0]!.message}` };
  if (doc.client_id === undefined) return { problem: "it has no client_id" };
  if (doc.client_id !== clientId)
    return {
      problem: `its client_id is ${JSON.stringify(String(doc.client_id).slice(0, 200))}, not the address it was fetched from; the two must be equal, character for character`,
    };

  const uris = doc.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > MAX_REDIRECT_URIS)
    return { problem: `redirect_uris must list 1 to ${MAX_REDIRECT_URIS} URIs` };
  const bad = uris.find(
    (u) => typeof u !== "string" || u.length > MAX_REDIRECT_URI || !isAbsoluteWithoutFragment(u) || !isHttpsOrLoopback(u),
  );
  if (bad !== undefined)
    return {
      problem: `redirect URI ${JSON.stringify(String(bad).slice(0, 200))} is not an absolute https URI, or http to a loopback address (127.0.0.1, localhost, [::1]), without a fragment`,
    };

  const method = doc.token_endpoint_auth_method;
  if (typeof method === "string" && SHARED_SECRET_METHODS.has(method))
    return {
      problem: `token_endpoint_auth_method is ${method}, which needs a shared secret, and a public document cannot hold one; use "none"`,
    };
  if (method !== undefined && method !== "none")
    return { problem: 'token_endpoint_auth_method must be "none": only public clients with PKCE are accepted' };
  if (doc.client_secret !== undefined || doc.client_secret_expires_at !== undefined)
    return { problem: "it carries a client_secret, which a document anyone can read must not" };

  const grants = doc.grant_types;
  if (grants !== undefined && (!Array.isArray(grants) || !grants.includes("authorization_code")))
    return { problem: 'grant_types must include "authorization_code"' };
  const responses = doc.response_types;
  if (responses !== undefined && (!Array.isArray(responses) || !responses.includes("code")))
    return { problem: 'response_types must include "code"' };
  const name = doc.client_name;
  if (name !== undefined && (typeof name !== "string" || !oneLineText(MAX_CLIENT_NAME).safeParse(name).success))
    return { problem: `client_name must be one line of 1 to ${MAX_CLIENT_NAME} visible characters, without control characters` };
  for (const field of ["client_uri", "logo_uri"] as const) {
    const value = doc[field];
    if (
      value !== undefined &&
      (typeof value !== "string" || value.length > MAX_REDIRECT_URI || !/^https?:\/\//i.test(value) || !URL.canParse(value))
    )
      return { problem: `${field} must be an http or https URL` };
  }
  return { client: { clientName: typeof name === "string" ? name.trim() : null, redirectUris: [...new Set(uris as string[])] } };
}
