import { fetchWithDeadline } from "../lib/outbound";
import { dohResolver, type DnsResolver } from "../lib/dns";

export interface OutboundWebhook {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** How a delivery leaves the Worker: `fetch` in production, a fake receiver in tests. Throws on network failure. */
export interface WebhookTransport {
  send(request: OutboundWebhook): Promise<{ status: number }>;
}

/** Spec: Delivery 4 and Limits, the receiver has 30 seconds. */
export const DELIVERY_TIMEOUT_MS = 30_000;

/**
 * POST with `redirect: "manual"`: a 3xx is the receiver's answer (not a 2xx, so retried), never a hop to a host the
 * URL check did not see. The response body is discarded unread; only the status counts.
 */
export function fetchTransport(fetchFn: typeof fetch = fetch, timeoutMs = DELIVERY_TIMEOUT_MS): WebhookTransport {
  return {
    async send({ url, headers, body }) {
      return fetchWithDeadline(fetchFn, url, { method: "POST", headers, body }, timeoutMs, async (res) => {
        await res.body?.cancel();
        return { status: res.status };
      });
    },
  };
}

/** What the webhook code reaches the outside world through; replaced as a whole or in part by tests. */
export interface WebhookDeps {
  resolver: DnsResolver;
  transport: WebhookTransport;
}

export const defaultWebhookDeps = (overrides: Partial<WebhookDeps> = {}): WebhookDeps => ({
  resolver: overrides.resolver ?? dohResolver(),
  transport: overrides.transport ?? fetchTransport(),
});
