/**
 * The shape of a redirect URI, whoever declared it: a registration (clients.ts) or a metadata document
 * (client-documents.ts). Matching a request's redirect URI against a client's list is clients.ts `redirectMatches`.
 */

export const MAX_REDIRECT_URI = 2000;
export const MAX_REDIRECT_URIS = 10;
/** A client's name is shown on the sign-in and consent pages: one line of visible text, at most this long. */
export const MAX_CLIENT_NAME = 100;
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** Absolute, without a fragment (RFC 6749 section 3.1.2) and without credentials. */
export function isAbsoluteWithoutFragment(uri: string): boolean {
  if (uri.includes("#")) return false;
  try {
    const url = new URL(uri);
    return url.username === "" && url.password === "";
  } catch {
    return false;
  }
}

/** https anywhere, plain http only to this machine (RFC 8252 section 7.3; OAuth 2.1 section 2.3.1). */
export function isHttpsOrLoopback(uri: string): boolean {
  const url = new URL(uri);
  return url.protocol === "https:" || (url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname));
}
