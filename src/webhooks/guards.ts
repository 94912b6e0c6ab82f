import type { Env } from "../env";
import { readConfig } from "../env";
import { AppError, NotConfigured, Validation } from "../lib/errors";
import { DnsUnavailable, type DnsResolver } from "../lib/dns";
import { checkOutboundUrl, urlPolicyFor } from "../lib/ssrf";

/** DNS over HTTPS did not answer: the URL can be neither accepted nor refused yet. */
export class DnsLookupFailed extends AppError {
  readonly status = 503;
  readonly code = "dns_unavailable";
}

/** The AES key material for subscription secrets; a deployment without it cannot store or sign with one. */
export function masterKey(env: Env): string {
  const key = readConfig(env).WEBHOOK_SECRET_KEY;
  if (!key) throw new NotConfigured("WEBHOOK_SECRET_KEY");
  return key;
}

/** 422 on `url` unless the URL is one a webhook may point to under this deployment's policy (ssrf.ts). */
export async function assertDeliverableUrl(env: Env, url: string, resolver: DnsResolver): Promise<void> {
  let refusal;
  try {
    refusal = await checkOutboundUrl(url, urlPolicyFor(readConfig(env).ENVIRONMENT), resolver);
  } catch (err) {
    if (err instanceof DnsUnavailable) throw new DnsLookupFailed("Could not resolve the URL's host right now; try again");
    throw err;
  }
  if (refusal) throw new Validation([{ field: "url", path: ["url"], code: refusal.code, message: refusal.message }]);
}
