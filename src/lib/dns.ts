import { fetchWithDeadline } from "./outbound";

/** Workers have no DNS API, so resolution sits behind this interface: DNS over HTTPS in production, a fake in tests. */
export interface DnsResolver {
  /** Every A and AAAA address of `host`; empty when the name does not exist. Throws `DnsUnavailable` on failure. */
  resolve(host: string): Promise<string[]>;
}

export class DnsUnavailable extends Error {}

interface DohAnswer {
  Status: number;
  Answer?: { type: number; data: string }[];
}

const RECORD = { A: 1, AAAA: 28 } as const;
const NXDOMAIN = 3;

/**
 * DNS over HTTPS, JSON flavour (`application/dns-json`, as Cloudflare and Google serve it). A and AAAA are asked
 * separately because the JSON API answers one type per query; CNAME links in the answer are skipped.
 */
export function dohResolver(
  fetchFn: typeof fetch = fetch,
  endpoint = "https://cloudflare-dns.com/dns-query",
  timeoutMs = 5000,
): DnsResolver {
  async function query(host: string, type: keyof typeof RECORD): Promise<string[]> {
    const url = `${endpoint}?name=${encodeURIComponent(host)}&type=${type}`;
    let body: DohAnswer;
    try {
      body = await fetchWithDeadline(fetchFn, url, { headers: { accept: "application/dns-json" } }, timeoutMs, async (res) => {
        if (!res.ok) throw new Error(`DoH answered ${res.status}`);
        return (await res.json()) as DohAnswer;
      });
    } catch (err) {
      throw new DnsUnavailable(`DNS lookup of ${host} failed: ${String(err)}`);
    }
    if (body.Status === NXDOMAIN) return [];
    if (body.Status !== 0) throw new DnsUnavailable(`DNS lookup of ${host} failed with status ${body.Status}`);
    return (body.Answer ?? []).filter((a) => a.type === RECORD[type]).map((a) => a.data);
  }
  return {
    async resolve(host) {
      const [a, aaaa] = await Promise.all([query(host, "A"), query(host, "AAAA")]);
      return [...a, ...aaaa];
    },
  };
}
