import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { DnsUnavailable, dohResolver, type DnsResolver } from "../../src/lib/dns";
import { classifyLiteral } from "../../src/lib/ip";
import { IPV4_SPECIAL, IPV6_SPECIAL } from "../../src/lib/special-purpose";
import { checkOutboundUrl, urlPolicyFor } from "../../src/lib/ssrf";
import { json } from "../helpers/client";
import { createPrincipal } from "../helpers/factories";
import { receiverUrl, setDnsAnswers } from "../helpers/receiver";

const production = urlPolicyFor("production");
const development = urlPolicyFor("development");
const fakeDns = (table: Record<string, string[]>): DnsResolver => ({ resolve: async (host) => table[host] ?? [] });
const noDns: DnsResolver = { resolve: async (host) => Promise.reject(new Error(`no DNS expected for ${host}`)) };
const codeOf = async (url: string, policy = production, dns = noDns) => (await checkOutboundUrl(url, policy, dns))?.code ?? "ok";

describe("webhook URL rules (SSRF)", () => {
  it.each([
    ["https://127.0.0.1/", "dotted loopback"],
    ["https://2130706433/", "decimal loopback"],
    ["https://0x7f000001/", "hex loopback"],
    ["https://0177.0.0.1/", "octal loopback"],
    ["https://127.1/", "short loopback"],
    ["https://0x7f.1/", "hex short loopback"],
    ["https://0/", "zero"],
    ["https://0.0.0.0/", "this network"],
    ["https://10.1.2.3/", "10/8"],
    ["https://172.16.5.4/", "172.16/12"],
    ["https://192.168.1.1/", "192.168/16"],
    ["https://100.64.0.1/", "carrier-grade NAT 100.64/10"],
    ["https://169.254.169.254/latest/meta-data/", "metadata"],
    ["https://2852039166/", "decimal metadata"],
    ["https://0xa9fea9fe/", "hex metadata"],
    ["https://0251.0376.0251.0376/", "octal metadata"],
    ["https://224.0.0.1/", "multicast"],
    ["https://255.255.255.255/", "broadcast"],
    ["https://[::1]/", "IPv6 loopback"],
    ["https://[0:0:0:0:0:0:0:1]/", "IPv6 loopback, long form"],
    ["https://[::]/", "IPv6 unspecified"],
    ["https://[::ffff:127.0.0.1]/", "IPv4-mapped loopback"],
    ["https://[::ffff:7f00:1]/", "IPv4-mapped loopback, hex"],
    ["https://[::ffff:169.254.169.254]/", "IPv4-mapped metadata"],
    ["https://[64:ff9b::a9fe:a9fe]/", "NAT64 metadata"],
    ["https://[2002:a9fe:a9fe::1]/", "6to4 metadata"],
    ["https://[::ffff:0:a9fe:a9fe]/", "IPv4-translated metadata"],
    ["https://[64:ff9b:1::a9fe:a9fe]/", "local-use NAT64"],
    ["https://localhost../", "localhost, two trailing dots"],
    ["https://[fe80::1]/", "IPv6 link-local"],
    ["https://[fd00::1]/", "IPv6 unique local"],
    ["https://[fd00:ec2::254]/", "IPv6 metadata (EC2)"],
    ["https://[ff02::1]/", "IPv6 multicast"],
    ["https://localhost/", "localhost"],
    ["https://api.localhost./", "a .localhost name, trailing dot"],
  ])("production refuses %s (%s) without asking DNS", async (url) => {
    expect(await codeOf(url)).toBe("blocked_address");
  });

  it.each([
    "2001:2::1",
    "2001:10::1",
    "2001:1f::1",
    "3fff::1",
    "3fff:fff::1",
    "5f00::1",
    "100:0:0:1::1",
    "2001:4:112::1",
    "2620:4f:8000::1",
    "2001:db8::1",
  ])("refuses %s, an IPv6 special-purpose address", async (address) => {
    expect(classifyLiteral(address)).toBe("blocked");
    expect(await codeOf(`https://[${address}]/`)).toBe("blocked_address");
  });

  it("refuses an address in every block of the IANA special-purpose registries, and the neighbours of some stay public", () => {
    for (const block of [...IPV4_SPECIAL, ...IPV6_SPECIAL]) {
      const base = block.prefix.split("/")[0]!;
      expect(classifyLiteral(base), `${block.prefix} ${block.name}`).not.toBe("public");
    }
    // Blocks that embed an IPv4 address are judged by it: a public one stays usable, a private one is refused.
    expect(classifyLiteral("::ffff:93.184.216.34")).toBe("public");
    expect(classifyLiteral("64:ff9b::93.184.216.34")).toBe("public");
    expect(classifyLiteral("2002:5db8:d822::1")).toBe("public");
    expect(classifyLiteral("2002:0a00:0001::1")).toBe("blocked");
    for (const outside of [
      "2001:200::1",
      "3fff:1000::1",
      "5f01::1",
      "2620:4f:8001::1",
      "192.0.1.1",
      "192.31.197.1",
      "100.128.0.1",
      "198.20.0.1",
    ]) {
      expect(classifyLiteral(outside), outside).toBe("public");
    }
  });

  it("classifies raw literals a URL parser never normalised (resolver answers, other parsers)", () => {
    for (const raw of [
      "2130706433",
      "0x7f000001",
      "0177.0.0.1",
      "127.1",
      "0x7f.0.0.1",
      "::1",
      "::ffff:127.0.0.1",
      "[::1]",
      "fe80::1%eth0",
    ]) {
      expect(classifyLiteral(raw), raw).not.toBe("public");
    }
    expect(classifyLiteral("2852039166")).toBe("blocked");
    expect(classifyLiteral("93.184.216.34")).toBe("public");
    expect(classifyLiteral("2606:4700:4700::1111")).toBe("public");
    expect(classifyLiteral("hooks.example.com")).toBeNull();
    expect(classifyLiteral("1.2.3.256")).toBeNull();
  });

  it("accepts HTTPS to public addresses; refuses plain HTTP, other schemes and credentials", async () => {
    expect(await codeOf("https://93.184.216.34/hook")).toBe("ok");
    expect(await codeOf("https://[2606:4700:4700::1111]:8443/hook")).toBe("ok");
    expect(await codeOf("http://93.184.216.34/hook")).toBe("https_required");
    expect(await codeOf("ftp://93.184.216.34/hook")).toBe("https_required");
    expect(await codeOf("https://user:pass@93.184.216.34/")).toBe("credentials_in_url");
    expect(await codeOf("https://token@93.184.216.34/")).toBe("credentials_in_url");
    expect(await codeOf("/relative")).toBe("invalid_url");
  });

  it("resolves names and refuses when any address is blocked or none exists", async () => {
    const dns = fakeDns({
      "ok.example": ["93.184.216.34", "2606:4700::1"],
      "mixed.example": ["93.184.216.34", "10.0.0.8"],
      "mapped.example": ["::ffff:10.0.0.1"],
      "loop.example": ["127.0.0.1"],
    });
    expect(await codeOf("https://ok.example/", production, dns)).toBe("ok");
    expect(await codeOf("https://mixed.example/", production, dns)).toBe("blocked_address");
    expect(await codeOf("https://mapped.example/", production, dns)).toBe("blocked_address");
    expect(await codeOf("https://loop.example/", production, dns)).toBe("blocked_address");
    expect(await codeOf("https://nowhere.example/", production, dns)).toBe("unresolvable_host");
  });

  it("development (DESIGN.md contract 6) also accepts loopback receivers over http, and nothing else private", async () => {
    expect(await codeOf("http://127.0.0.1:8787/hook", development)).toBe("ok");
    expect(await codeOf("http://localhost:3000/hook", development)).toBe("ok");
    expect(await codeOf("http://[::1]:3000/hook", development)).toBe("ok");
    expect(await codeOf("http://10.0.0.1/hook", development)).toBe("blocked_address");
    expect(await codeOf("http://169.254.169.254/", development)).toBe("blocked_address");
    expect(await codeOf("http://93.184.216.34/hook", development)).toBe("https_required");
    expect(await codeOf("https://loop.example/", development, fakeDns({ "loop.example": ["127.0.0.1"] }))).toBe("ok");
    expect(urlPolicyFor("staging")).toEqual(production);
  });
});

describe("DNS over HTTPS client", () => {
  const doh = () => dohResolver(fetch, `${receiverUrl()}/dns-query`);

  it("asks for A and AAAA in the JSON protocol and returns the addresses, skipping CNAME links", async () => {
    await setDnsAnswers({
      "hooks.customer.test/A": {
        Status: 0,
        Answer: [
          { name: "hooks.customer.test", type: 5, TTL: 60, data: "edge.customer.test." },
          { name: "edge.customer.test", type: 1, TTL: 60, data: "93.184.216.34" },
        ],
      },
      "hooks.customer.test/AAAA": { Status: 0, Answer: [{ name: "hooks.customer.test", type: 28, TTL: 60, data: "2606:4700::6810:84e5" }] },
    });
    expect(await doh().resolve("hooks.customer.test")).toEqual(["93.184.216.34", "2606:4700::6810:84e5"]);
    expect(await doh().resolve("missing.customer.test")).toEqual([]);
  });

  it("fails loudly on SERVFAIL or an unreachable server, so no URL is accepted unchecked", async () => {
    await setDnsAnswers({ "broken.customer.test/A": { Status: 2 }, "broken.customer.test/AAAA": { Status: 2 } });
    await expect(doh().resolve("broken.customer.test")).rejects.toBeInstanceOf(DnsUnavailable);
    // A server that cannot be reached, as workerd's fetch reports it (a real refused port would make workerd print the
    // failure as an uncaught exception even though it is caught).
    const unreachable: typeof fetch = async () => Promise.reject(new Error("Network connection lost."));
    await expect(dohResolver(unreachable, "https://dns.invalid/dns-query").resolve("a.test")).rejects.toBeInstanceOf(DnsUnavailable);
  });
});

describe("subscribe route under each environment", () => {
  async function subscribeIn(environment: string, url: string) {
    const owner = await createPrincipal();
    const app = createApp({ webhooks: { resolver: dohResolver(fetch, `${receiverUrl()}/dns-query`) } });
    const res = await app.fetch(
      new Request("http://api.test/v1/webhooks", {
        method: "POST",
        headers: { authorization: `Bearer ${owner.token}`, "content-type": "application/json" },
        body: JSON.stringify({ url, events: ["contact.created"] }),
      }),
      // A production config must name a real mailer (src/env.ts); subscribing sends no mail.
      { ...env, ENVIRONMENT: environment, EMAIL_PROVIDER: "resend", EMAIL_API_KEY: "re_test" },
      createExecutionContext(),
    );
    return { status: res.status, body: await json(res) };
  }

  it("production refuses loopback and names that resolve privately with a 422 on url", async () => {
    await setDnsAnswers({
      "internal.customer.test/A": { Status: 0, Answer: [{ name: "internal.customer.test", type: 1, TTL: 60, data: "192.168.0.10" }] },
    });
    for (const url of ["http://127.0.0.1:8787/hook", "https://[::ffff:127.0.0.1]/", "https://internal.customer.test/hook"]) {
      const { status, body } = await subscribeIn("production", url);
      expect(status, url).toBe(422);
      expect(body.error.errors, url).toEqual([{ field: "url", code: "blocked_address", message: expect.any(String) }]);
    }
    await setDnsAnswers({
      "public.customer.test/A": { Status: 0, Answer: [{ name: "public.customer.test", type: 1, TTL: 60, data: "93.184.216.34" }] },
    });
    expect((await subscribeIn("production", "https://public.customer.test/hook")).status).toBe(201);
  });

  it("development accepts http://127.0.0.1 and http://localhost; DNS outages are a 503 outside development", async () => {
    expect((await subscribeIn("development", "http://127.0.0.1:8787/hook")).status).toBe(201);
    expect((await subscribeIn("development", "http://localhost:8787/hook")).status).toBe(201);
    await setDnsAnswers({ "flaky.customer.test/A": { Status: 2 }, "flaky.customer.test/AAAA": { Status: 2 } });
    const { status, body } = await subscribeIn("production", "https://flaky.customer.test/hook");
    expect(status).toBe(503);
    expect(body).toMatchObject({ success: false, error: { status: 503 } });
    // An offline development machine can still subscribe an HTTPS name, unverified; plain http stays refused.
    expect((await subscribeIn("development", "https://flaky.customer.test/hook")).status).toBe(201);
    expect((await subscribeIn("development", "http://flaky.customer.test/hook")).status).toBe(422);
    expect((await subscribeIn("test", "https://flaky.customer.test/hook")).status).toBe(503);
  });
});
