import { and, eq } from "drizzle-orm";
import { agentProfiles } from "../db/schema";
import { appUrlOf, type Env, readConfig } from "../env";
import { type Logger, loggableError } from "../lib/log";
import type { ServiceContext } from "../service-context";

/**
 * The public reviews feed's place in the edge cache (profiles/feed.ts builds the feed): the testimonials, the
 * profiles and an erasure all drop it when what it shows changes, so it sits below those domains.
 */
export const feedPath = (slug: string) => `/api/public/reviews/${encodeURIComponent(slug)}`;

/** The feed's address on the configured origin (APP_URL), whichever host name a request came through. */
export const feedUrl = (env: Env, slug: string) => `${appUrlOf(readConfig(env))}${feedPath(slug)}`;

/**
 * The feed's cache key: its URL on the configured origin (the Cache API keys by URL). Not the request's host: a feed
 * read through two host names would be two entries, and a purge through one would leave the other serving.
 */
export const feedCacheKey = (env: Env, slug: string) => new Request(feedUrl(env, slug), { method: "GET" });

const warnPurge = (log: Logger) => (err: unknown) =>
  log.warn("reviews feed purge failed; it expires within a minute", { error: loggableError(err) });

/** Drops the feed at `slug` from this location's cache (other locations see a change within the minute). */
export function purgeFeedBySlug(ctx: ServiceContext, slug: string): void {
  ctx.defer(caches.default.delete(feedCacheKey(ctx.env, slug)).catch(warnPurge(ctx.log)));
}

/** Drops an agent's feed after a change, so the next read here is fresh at once. */
export function purgeFeed(ctx: ServiceContext, agentUserId: string): void {
  ctx.defer(
    (async () => {
      const profile = await ctx.db
        .select({ slug: agentProfiles.slug })
        .from(agentProfiles)
        .where(and(eq(agentProfiles.organizationId, ctx.organizationId), eq(agentProfiles.userId, agentUserId)))
        .get();
      if (profile) await caches.default.delete(feedCacheKey(ctx.env, profile.slug));
    })().catch(warnPurge(ctx.log)),
  );
}
