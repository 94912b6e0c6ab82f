import type { Config } from "../env";
import { type DnsResolver, DnsUnavailable, dohResolver } from "../lib/dns";
import { fetchWithDeadline } from "../lib/outbound";
import { checkOutboundUrl, urlPolicyFor } from "../lib/ssrf";
import { type DocumentClient, readClientDocument } from "./client-document-rules";

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; MCP authorization 2025-11-25, client
 * registration): a client_id that is an https URL names a JSON document the client publishes there, with its name and
 * redirect URIs, so a client needs no registration. The document is fetched through the outbound guard the webhooks
 * use (lib/ssrf.ts: public addresses only; loopback too in development and tests), with a deadline, no redirect
 * followed, at most 5 KB read, and kept in the Cache API for as long as its Cache-Control allows, one day at most.
 *
 * The Cache API, as for the reviews feed (profiles/public-routes.ts), rather than a D1 row: a copy per location that
 * expires by itself, with no table, migration or cron to clear it; a location that has none fetches the document again.
 */

/** How a document is reached; tests replace a part (a resolver of their own, a fetch that never answers). */
export interface ClientDocumentDeps {
  resolver: DnsResolver;
  fetch: typeof fetch;
  timeoutMs: number;
}

/** The draft's section on response size: 5 kilobytes is ample for client metadata. */
export const MAX_DOCUMENT_BYTES = 5 * 1024;
const TIMEOUT_MS = 5000;
/** However long a document's Cache-Control says, it is fetched again after a day (the draft leaves the bound to us). */
export const MAX_CACHE_SECONDS = 86_400;
const CACHE_NAME = "oauth-client-documents";

export const defaultClientDocumentDeps = (overrides: Partial<ClientDocumentDeps> = {}): ClientDocumentDeps => ({
  resolver: overrides.resolver ?? dohResolver(),
  fetch: overrides.fetch ?? ((input, init) => fetch(input, init)),
  timeoutMs: overrides.timeoutMs ?? TIMEOUT_MS,
});

/** A document that cannot be used; the message names the problem (the error page and `error_description` show it). */
export class ClientDocumentRefused extends Error {}

/** A client_id that is a URL names a metadata document; every other one is configured or registered. */
export const isDocumentUrl = (clientId: string): boolean => /^https?:\/\//i.test(clientId);

/** The client whose client_id is the document URL `clientId`: from the cache, or fetched and checked. */
export async function loadClientDocument(config: Config, deps: ClientDocumentDeps, clientId: string): Promise<DocumentClient> {
  const refuse = (problem: string) =>
    new ClientDocumentRefused(
      `The application's client_id is the address of its metadata document, ${clientId}, which cannot be used: ${problem}.`,
    );
  const policy = urlPolicyFor(config.ENVIRONMENT);
  const problem = identifierProblem(clientId, policy.allowLoopback);
  if (problem) throw refuse(problem);
  const cached = await readCache(clientId);
  if (cached) return cached;

  let refusal: Awaited<ReturnType<typeof checkOutboundUrl>>;
  try {
    refusal = await checkOutboundUrl(clientId, policy, deps.resolver);
  } catch (err) {
    if (err instanceof DnsUnavailable) throw refuse("its host could not be resolved right now; try again");
    throw err;
  }
  if (refusal) throw refuse(`it is not an address this server fetches from (${refusal.message})`);
  const fetched = await fetchDocument(deps, clientId).catch((err: unknown) => {
    if (err instanceof ClientDocumentRefused) throw refuse(err.message);
    const name = (err as { name?: unknown } | null)?.name;
    if (name === "TimeoutError" || name === "AbortError") throw refuse(`it did not answer within ${deps.timeoutMs / 1000} seconds`);
    throw refuse(`it could not be fetched (${String(err).slice(0, 200)})`);
  });
  const outcome = readClientDocument(clientId, fetched.text);
  if ("problem" in outcome) throw refuse(outcome.problem);
  if (fetched.cacheSeconds > 0) await writeCache(clientId, outcome.client, fetched.cacheSeconds);
  return outcome.client;
}

/**
 * What the draft's section 3 asks of the URL itself: https (or, in development and tests, http to this machine, the
 * outbound guard's rule), a path beyond `/`, no fragment, no user or password, no `.` or `..` segment (the URL is
 * compared as written, never normalized, so a dot segment would make two names for one document).
 */
function identifierProblem(clientId: string, allowLoopback: boolean): string | null {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return "it is not a URL";
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && allowLoopback)) return "it must use https";
  if (clientId.includes("#")) return "it must not have a fragment (#…)";
  if (url.username || url.password) return "it must not carry a user name or password";
  const path = clientId.replace(/^https?:\/\/[^/?#]*/i, "").split("?")[0]!;
  if (path === "" || path === "/") return "it must have a path (the document's own address, not the site's root)";
  if (path.split("/").some((segment) => /^(\.|%2e){1,2}$/i.test(segment))) return "its path must not have . or .. segments";
  return null;
}

/** GET without following a redirect (the document must be at the client_id itself), reading at most MAX_DOCUMENT_BYTES. */
async function fetchDocument(deps: ClientDocumentDeps, url: string): Promise<{ text: string; cacheSeconds: number }> {
  return fetchWithDeadline(deps.fetch, url, { headers: { accept: "application/json" } }, deps.timeoutMs, async (res) => {
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new ClientDocumentRefused(
        res.status >= 300 && res.status < 400
          ? `it answered a redirect (HTTP ${res.status}), and redirects are not followed`
          : `it answered HTTP ${res.status}, not 200`,
      );
    }
    const tooBig = `it is larger than ${MAX_DOCUMENT_BYTES / 1024} KB`;
    if (Number(res.headers.get("content-length") ?? 0) > MAX_DOCUMENT_BYTES) {
      await res.body?.cancel();
      throw new ClientDocumentRefused(tooBig);
    }
    // Read chunk by chunk and stop past the bound: a document without Content-Length may be endless.
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = res.body?.getReader();
    for (;;) {
      const chunk = reader ? await reader.read() : { done: true as const };
      if (chunk.done) break;
      size += chunk.value.byteLength;
      if (size > MAX_DOCUMENT_BYTES) {
        await reader!.cancel();
        throw new ClientDocumentRefused(tooBig);
      }
      chunks.push(chunk.value);
    }
    const bytes = new Uint8Array(size);
    let at = 0;
    for (const chunk of chunks) {
      bytes.set(chunk, at);
      at += chunk.byteLength;
    }
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
    } catch {
      throw new ClientDocumentRefused("it is not UTF-8 text, so not JSON");
    }
    return { text, cacheSeconds: cacheSecondsOf(res.headers) };
  });
}

/**
 * How long the answer may be reused (RFC 9111): its `max-age` less its `Age`, at most a day; nothing for `no-store` or
 * `no-cache` (we do not revalidate), or without `max-age` (no guessing from other headers).
 */
export function cacheSecondsOf(headers: Headers): number {
  const directives = (headers.get("cache-control") ?? "")
    .toLowerCase()
    .split(",")
    .map((d) => d.trim());
  if (directives.some((d) => d === "no-store" || d === "no-cache" || d.startsWith("no-cache="))) return 0;
  const maxAge = directives.map((d) => /^max-age="?(\d+)"?$/.exec(d)?.[1]).find((v) => v !== undefined);
  if (maxAge === undefined) return 0;
  const age = Number(headers.get("age") ?? 0);
  return Math.max(0, Math.min(MAX_CACHE_SECONDS, Number(maxAge) - (Number.isFinite(age) ? age : 0)));
}

/** The cache's key is the URL; the entry keeps the client_id as written, since the key is the URL normalized. */
interface CacheEntry {
  clientId: string;
  client: DocumentClient;
  expiresAt: number;
}

async function readCache(clientId: string): Promise<DocumentClient | null> {
  try {
    const hit = await (await caches.open(CACHE_NAME)).match(new Request(clientId));
    const entry = hit ? ((await hit.json()) as CacheEntry) : null;
    return entry && entry.clientId === clientId && entry.expiresAt > Date.now() ? entry.client : null;
  } catch {
    return null; // A cache that fails is a miss: the document is fetched.
  }
}

async function writeCache(clientId: string, client: DocumentClient, seconds: number): Promise<void> {
  const entry: CacheEntry = { clientId, client, expiresAt: Date.now() + seconds * 1000 };
  const headers = { "content-type": "application/json", "cache-control": `max-age=${seconds}` };
  await (await caches.open(CACHE_NAME)).put(new Request(clientId), new Response(JSON.stringify(entry), { headers })).catch(() => undefined); // Not kept: fetched again next time.
}
