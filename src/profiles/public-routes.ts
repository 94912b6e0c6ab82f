import { OpenAPIHono, z } from "@hono/zod-openapi";
import { openCors } from "../platform/cors";
import { RateLimited } from "../lib/errors";
import { API, apiError, apiJson } from "../platform/api-family";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { clientIp, RATE_LIMITS } from "../platform/rate-limit";
import { defineRoute } from "../platform/route";
import { openPublicKey } from "../platform/session";
import { buildFeed, FEED_TTL_SECONDS } from "./feed";
import { feedCacheKey } from "../reputation/feed-cache";
import { WIDGET_SCRIPT } from "./widget";

const tags = ["Reviews (public)"];
const SlugParam = z.object({
  agentSlug: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "agentSlug", in: "path" } }),
});

const Review = z.object({
  id: z.string(),
  rating: z.int(),
  headline: z.string().nullable(),
  body: z.string(),
  category: z.string(),
  publishedAt: z.string().nullable(),
  author: z
    .object({ name: z.string().optional(), location: z.string().optional(), photoUrl: z.string().optional() })
    .openapi({ description: "Only the fields the author consented to publish" }),
});
export const ReviewsFeed = z
  .object({
    agent: z.object({ slug: z.string(), displayName: z.string(), headline: z.string().nullable(), photoUrl: z.string().nullable() }),
    branding: z.object({ brokerage: z.string() }),
    aggregate: z.object({ totalReviews: z.int(), averageRating: z.number().nullable(), ratingDistribution: z.record(z.string(), z.int()) }),
    reviews: z.array(Review).openapi({ description: "At most 50: featured first, then by sort order, newest first" }),
    jsonLd: z
      .record(z.string(), z.unknown())
      .openapi({ description: "schema.org RealEstateAgent with AggregateRating and Review, for the embedding page" }),
  })
  .openapi("ReviewsFeed");

const CACHE_HEADER = {
  "X-Cache": { description: "HIT when served from the edge cache, MISS when built", schema: { type: "string" as const, example: "HIT" } },
};

const feed = defineRoute(API, {
  operationId: "getReviewsFeed",
  method: "get",
  path: "/api/public/reviews/{agentSlug}",
  security: [],
  tags,
  summary: "An agent's public reviews feed",
  description:
    "No authentication: the slug of a PUBLISHED profile is the capability. CORS-enabled (`Access-Control-Allow-Origin: *`) for the embeddable widget (`/widget/reviews.js`) and cached at the edge for one minute; a change is purged from the local cache at once. Unknown, unpublished and deleted profiles answer the same 404. The per-IP limit (300 a minute) counts requests that miss the cache.",
  request: { params: SlugParam },
  responses: {
    200: apiJson("The feed", ReviewsFeed, CACHE_HEADER),
    404: apiError("No published profile at this slug"),
    429: apiError("Too many requests from this address (rate_limited)"),
  },
});

const preflight = defineRoute(API, {
  operationId: "preflightReviewsFeed",
  method: "options",
  path: "/api/public/reviews/{agentSlug}",
  security: [],
  tags,
  summary: "CORS preflight of the reviews feed",
  request: { params: SlugParam },
  responses: { 204: { description: "Any origin may GET the feed" } },
});

const widget = defineRoute(API, {
  operationId: "getReviewsWidget",
  method: "get",
  path: "/widget/reviews.js",
  security: [],
  tags,
  summary: "The embeddable reviews widget",
  description:
    'A dependency-free script defining `<reviews-widget agent="slug">`. Load it from this API (a script element whose src is `/widget/reviews.js` on this host) on any site, then place the element where the reviews go.',
  responses: { 200: { description: "The script", content: { "text/javascript": { schema: z.string() } } } },
});

export const reviewRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook });
// Every answer of the feed carries the CORS headers (errors too, so the widget can read them), and preflights are
// answered here.
reviewRoutes.use("/api/public/reviews/*", openCors(["GET", "OPTIONS"], ["accept", "content-type"]));
reviewRoutes
  .openapi(feed, async (c) => {
    const { agentSlug } = c.req.valid("param");
    const key = feedCacheKey(c.env, agentSlug);
    const cached = await caches.default.match(key);
    // A hit touches neither D1 nor the rate limiter's Durable Object.
    if (cached)
      return new Response(cached.body, { status: 200, headers: { ...Object.fromEntries(cached.headers), "x-cache": "HIT" } }) as never;

    const rule = RATE_LIMITS["public-reviews:get"];
    const decision = await c.get("rateLimiter").consume(`public-reviews:get:${clientIp(c.req.header("cf-connecting-ip"))}`, rule);
    if (!decision.allowed) throw new RateLimited(decision.retryAfterSeconds);
    // The slug's organization from the directory, with its shard opened; unknown there is the same 404.
    const organizationId = await openPublicKey(c, "agent_slug", agentSlug);
    const body = organizationId && (await buildFeed(c.get("db"), organizationId, agentSlug));
    if (!body) return c.json({ error: "not_found", message: "No published profile at this address" }, 404);
    const json = JSON.stringify(body);
    const headers = {
      "content-type": "application/json",
      "cache-control": `public, max-age=${FEED_TTL_SECONDS}`,
      "access-control-allow-origin": "*",
    };
    c.executionCtx.waitUntil(caches.default.put(key, new Response(json, { headers })));
    return new Response(json, { status: 200, headers: { ...headers, "x-cache": "MISS" } }) as never;
  })
  .openapi(preflight, (c) => c.body(null, 204) as never)
  .openapi(
    widget,
    (c) =>
      c.body(WIDGET_SCRIPT, 200, {
        "content-type": "text/javascript; charset=utf-8",
        "cache-control": "public, max-age=300",
        "x-content-type-options": "nosniff",
      }) as never,
  );
