// The public reviews feed (issue 8): a cache hit beside a cache miss and beside the floor, in one run, with the D1
// round trips of each counted (the goal for a hit is 0).
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { expect, it } from "vitest";
import { createApp } from "../src/app";
import { feedCacheKey } from "../src/reputation/feed-cache";
import { createPrincipal } from "../test/helpers/factories";
import { publishedProfile } from "../test/helpers/profiles";
import { publishedTestimonial } from "../test/helpers/testimonials";
import { countAllD1, countDurableObjectCalls, measureInterleaved, printTable } from "./harness";

it("GET /api/public/reviews/{slug}: cache hit, cache miss and the floor", async () => {
  const owner = await createPrincipal();
  for (let i = 0; i < 20; i++)
    await publishedTestimonial(owner, {
      rating: (i % 5) + 1,
      body: `Review number ${i}, with a few words of praise.`,
      displayName: `Client ${i}`,
      permissionToPublishName: true,
    });
  const slug = await publishedProfile(owner);
  const d1 = countAllD1();
  const limiter = countDurableObjectCalls(env.RATE_LIMITER);
  const app = createApp();
  const benchEnv = { ...env, ...d1.dbs, RATE_LIMITER: limiter.namespace };
  let ip = 0;
  const get = async (path: string) => {
    const ctx = createExecutionContext();
    // A fresh client address each time keeps the per-IP limit out of the figures (each is its own object).
    const res = await app.fetch(
      new Request(`http://bench.test${path}`, { headers: { "cf-connecting-ip": `10.5.${(ip >> 8) & 255}.${ip++ & 255}` } }),
      benchEnv,
      ctx,
    );
    await res.arrayBuffer();
    await waitOnExecutionContext(ctx);
    return res;
  };
  const key = feedCacheKey(benchEnv, slug);
  const hit = async () => {
    const res = await get(`/api/public/reviews/${slug}`);
    if (res.headers.get("x-cache") !== "HIT") throw new Error(`expected a hit, got ${res.headers.get("x-cache")}`);
  };
  const miss = async () => {
    await caches.default.delete(key);
    const res = await get(`/api/public/reviews/${slug}`);
    if (res.headers.get("x-cache") !== "MISS") throw new Error(`expected a miss, got ${res.headers.get("x-cache")}`);
  };
  const floor = async () => (await exports.default.fetch(new Request("http://bench.test/__floor"))).arrayBuffer();

  await get(`/api/public/reviews/${slug}`);
  const counted: Record<string, { d1: number; limiter: number }> = {};
  for (const [name, fn] of [
    ["hit", hit],
    ["miss", miss],
  ] as const) {
    await fn();
    d1.reset();
    limiter.reset();
    await fn();
    counted[name] = { d1: d1.trips(), limiter: limiter.calls() };
  }
  expect(counted.hit).toEqual({ d1: 0, limiter: 0 });

  const [base, hitFigure, missFigure] = await measureInterleaved([
    { name: "floor: Worker fetch, no binding (unknown route, 404)", fn: floor },
    { name: "feed, cache hit (20 reviews)", fn: hit },
    { name: "feed, cache miss (built from D1, then cached)", fn: miss },
  ]);
  printTable("public reviews feed", [base!, hitFigure!, missFigure!], base);
  console.log(
    `per request: hit ${counted.hit!.d1} D1 round trips, ${counted.hit!.limiter} limiter calls; miss ${counted.miss!.d1} D1 round trip(s), ${counted.miss!.limiter} limiter call(s)`,
  );
});
