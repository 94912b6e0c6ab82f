import { createRoute, z } from "@hono/zod-openapi";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { clientIp, RATE_LIMITS, rateLimit } from "../../src/platform/rate-limit";
import { durableObjectRateLimiter, rateLimiterObject } from "../../src/platform/rate-limiter";
import { call, json } from "../helpers/client";
import { createPrincipal } from "../helpers/factories";
import { testApp } from "../helpers/test-app";

const stub = (key: string) => rateLimiterObject(env, key);

describe("RateLimiter Durable Object", () => {
  it("admits exactly the limit out of 200 simultaneous requests on one key", async () => {
    const limiter = durableObjectRateLimiter(env);
    const key = `exact:${crypto.randomUUID()}`;
    const decisions = await Promise.all(Array.from({ length: 200 }, () => limiter.consume(key, { limit: 37, windowSeconds: 60 })));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(37);
    const refused = decisions.filter((d) => !d.allowed);
    expect(refused).toHaveLength(163);
    for (const d of refused) expect(d.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    for (const d of refused) expect(d.retryAfterSeconds).toBeLessThanOrEqual(60);
  });

  it("keeps keys apart", async () => {
    const limiter = durableObjectRateLimiter(env);
    const rule = { limit: 1, windowSeconds: 60 };
    expect((await limiter.consume(`a:${crypto.randomUUID()}`, rule)).allowed).toBe(true);
    expect((await limiter.consume(`b:${crypto.randomUUID()}`, rule)).allowed).toBe(true);
  });

  it("admits again once the window has passed", async () => {
    const key = `window:${crypto.randomUUID()}`;
    const s = stub(key);
    expect((await s.consume(1, 60)).allowed).toBe(true);
    expect((await s.consume(1, 60)).allowed).toBe(false);
    // Age the logged hit past the window, as if a minute had gone by.
    await runInDurableObject(s, (instance) => {
      const limiter = instance as unknown as { hits: number[] };
      limiter.hits = limiter.hits.map((at) => at - 61_000);
    });
    expect((await s.consume(1, 60)).allowed).toBe(true);
  });

  it("clears its log with the alarm set one window after the last admitted hit", async () => {
    const s = stub(`alarm:${crypto.randomUUID()}`);
    await s.consume(5, 60);
    // The log is written, and the alarm set, just after the calls of the moment are answered.
    await new Promise((r) => setTimeout(r, 20));
    expect(await runDurableObjectAlarm(s)).toBe(true);
    expect(await runInDurableObject(s, (_, state) => state.storage.get("hits"))).toBeUndefined();
    // The next request starts a fresh window.
    expect((await s.consume(1, 60)).allowed).toBe(true);
  });
});

describe("rateLimit middleware", () => {
  function limitedApp() {
    const t = testApp();
    // The sign-link GET bucket of the documents spec: 60 requests per IP per minute.
    t.app.openapi(
      createRoute({
        method: "get",
        path: "/api/public/probe/{token}",
        middleware: [rateLimit("public-sign:get")],
        request: { params: z.object({ token: z.string() }) },
        responses: { 200: { description: "ok" } },
      }),
      (c) => c.json({ state: "active" }, 200),
    );
    return t;
  }

  it("answers 429 {error: rate_limited} with Retry-After past the spec's limit, per client IP", async () => {
    const t = limitedApp();
    const ip = `198.51.100.${Math.floor(Math.random() * 250)}`;
    const limit = RATE_LIMITS["public-sign:get"].limit;
    expect(limit).toBe(60);
    const statuses = await Promise.all(
      Array.from({ length: limit + 15 }, () =>
        t.fetch("GET", "/api/public/probe/abc", { headers: { "cf-connecting-ip": ip } }).then((r) => r.status),
      ),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(limit);
    const refused = await t.fetch("GET", "/api/public/probe/abc", { headers: { "cf-connecting-ip": ip } });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ error: "rate_limited" });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // Another address is unaffected.
    expect((await t.fetch("GET", "/api/public/probe/abc", { headers: { "cf-connecting-ip": "203.0.113.9" } })).status).toBe(200);
  });
});

describe("the spec's public limits", () => {
  it("are wired with the documents spec's counts", () => {
    expect(RATE_LIMITS["public-sign:get"]).toEqual({ limit: 60, windowSeconds: 60 });
    expect(RATE_LIMITS["public-sign:post"]).toEqual({ limit: 30, windowSeconds: 60 });
    expect(RATE_LIMITS["public-clickwrap:get"]).toEqual({ limit: 120, windowSeconds: 60 });
    expect(RATE_LIMITS["public-clickwrap:post"]).toEqual({ limit: 60, windowSeconds: 60 });
  });
});

describe("the address a per-address limit counts", () => {
  it("counts an IPv6 address by its /64, spellings of one address alike, and an IPv4-mapped address as its IPv4", async () => {
    expect(clientIp("2001:db8:1:2::1")).toBe(clientIp("2001:0DB8:0001:0002:ffff:0:0:9"));
    expect(clientIp("2001:db8:1:2::1")).toBe("2001:db8:1:2::/64");
    expect(clientIp("2001:db8:1:3::1")).not.toBe(clientIp("2001:db8:1:2::1"));
    expect(clientIp("::ffff:203.0.113.7")).toBe("203.0.113.7");
    expect(clientIp(" 203.0.113.7 ")).toBe("203.0.113.7");
    expect(clientIp(undefined)).toBe("unknown");
  });

  it("rotating addresses inside one /64 does not escape the public limit", async () => {
    const owner = await createPrincipal();
    const res = await call("POST", "/api/clickwrap", { token: owner.token, body: { key: "v6", title: "T", body: "B" } });
    const { id } = await json(res);
    const statuses: number[] = [];
    // Every request from another address of 2001:db8:77:0::/64.
    for (let n = 0; n < 61; n++)
      statuses.push(
        (await call("POST", `/api/public/clickwrap/${id}`, { headers: { "cf-connecting-ip": `2001:db8:77:0:${(n + 1).toString(16)}::1` } }))
          .status,
      );
    expect(statuses.slice(0, 60).every((s) => s === 200)).toBe(true);
    expect(statuses[60]).toBe(429);
  });
});
