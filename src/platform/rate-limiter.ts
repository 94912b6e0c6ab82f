import type { Env } from "../env";
import type { RateDecision, RateLimiterObject } from "./rate-limiter-object";

/**
 * The rate limiter as the app sees it (`c.get("rateLimiter")`): a port with the Durable Object behind it in
 * production and a stand-in in tests. The per-route rules and the middleware are rate-limit.ts.
 */
export interface RateRule {
  limit: number;
  windowSeconds: number;
}

export type { RateDecision };

export interface RateLimiter {
  consume(key: string, rule: RateRule): Promise<RateDecision>;
}

/** The limiter object of one key, typed (env.ts binds it bare). */
export function rateLimiterObject(env: Env, key: string): DurableObjectStub<RateLimiterObject> {
  const namespace = env.RATE_LIMITER as DurableObjectNamespace<RateLimiterObject>;
  return namespace.get(namespace.idFromName(key));
}

/** One Durable Object per key, so a key's count lives in exactly one place. */
export function durableObjectRateLimiter(env: Env): RateLimiter {
  return {
    consume: (key, rule) => rateLimiterObject(env, key).consume(rule.limit, rule.windowSeconds),
  };
}
