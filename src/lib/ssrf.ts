import { classifyLiteral } from "./ip";
import { DnsUnavailable, type DnsResolver } from "./dns";

/**
 * Where the Worker may send a request to an address someone else chose: a webhook's receiver (DESIGN.md contract 6), an
 * OAuth client's metadata document (oauth/client-documents.ts). HTTPS to public addresses only; no credentials in the
 * URL; and in local environments, loopback servers (`http://127.0.0.1`, `http://localhost`) as well.
 */
export interface UrlPolicy {
  allowLoopback: boolean;
  /**
   * When DNS cannot be asked at all, accept an HTTPS name unverified instead of failing. Only in development, where
   * a laptop may be offline; the delivery-time check and the fetch itself still apply. Elsewhere a DNS outage fails
   * closed (503), so nothing is ever accepted unchecked in production.
   */
  acceptNamesWhenDnsIsDown: boolean;
}

/** Development and the test suite run their servers on this machine; staging and production never reach it. */
export const urlPolicyFor = (environment: string): UrlPolicy => ({
  allowLoopback: environment === "development" || environment === "test",
  acceptNamesWhenDnsIsDown: environment === "development",
});

export type UrlRefusal = {
  code: "invalid_url" | "https_required" | "credentials_in_url" | "blocked_address" | "unresolvable_host";
  message: string;
};

const refuse = (code: UrlRefusal["code"], message: string): UrlRefusal => ({ code, message });

const isLocalhostName = (host: string) => host === "localhost" || host.endsWith(".localhost");

/**
 * Null when `raw` is an acceptable outbound URL; otherwise why not. Names are resolved and every address must pass,
 * so a name with one private address among public ones is refused (it could be the one a fetch picks).
 * Checked at subscribe time and again before each delivery (DNS may have changed since).
 */
export async function checkOutboundUrl(raw: string, policy: UrlPolicy, resolver: DnsResolver): Promise<UrlRefusal | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse("invalid_url", "Must be an absolute URL");
  }
  if (url.username || url.password) return refuse("credentials_in_url", "The URL must not carry a user name or password");
  if (url.protocol !== "https:" && url.protocol !== "http:") return refuse("https_required", "The URL must use HTTPS");

  const host = url.hostname.toLowerCase().replace(/\.+$/, "");
  let kinds = [classifyLiteral(host) ?? (isLocalhostName(host) ? "loopback" : null)];
  if (kinds[0] === null) {
    let addresses: string[];
    try {
      addresses = await resolver.resolve(host);
    } catch (err) {
      if (!(err instanceof DnsUnavailable && policy.acceptNamesWhenDnsIsDown)) throw err;
      return url.protocol === "https:" ? null : refuse("https_required", "The URL must use HTTPS");
    }
    if (addresses.length === 0) return refuse("unresolvable_host", `${host} does not resolve to an address`);
    kinds = addresses.map((a) => classifyLiteral(a) ?? "blocked");
  }
  const loopback = kinds.every((k) => k === "loopback");
  if (kinds.some((k) => k === "blocked") || (kinds.some((k) => k === "loopback") && !(loopback && policy.allowLoopback))) {
    return refuse("blocked_address", "The URL must point to a public address, not a private, loopback, link-local or metadata one");
  }
  if (url.protocol !== "https:" && !loopback) return refuse("https_required", "The URL must use HTTPS");
  return null;
}
