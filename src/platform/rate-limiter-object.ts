import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";

export interface RateDecision {
  allowed: boolean;
  remaining: number;
  /** Seconds until the oldest counted request leaves the window (0 when allowed). */
  retryAfterSeconds: number;
  /** Seconds until the oldest counted request leaves the window and a unit of quota comes back, allowed or not (the `t` of the RateLimit field). */
  resetSeconds?: number;
}

/**
 * One object per (route bucket, client IP), created near the client that first uses it: a sliding-window log of
 * admitted requests, in memory. `consume` is synchronous, so the object's input gate serializes every call and 200
 * simultaneous requests on one key never admit more than the limit. It answers from memory and persists the log in
 * the background (`allowUnconfirmed`: the answer does not wait for the write to be flushed), so a burst from one
 * address is not queued behind 50 storage flushes. An object that restarts reloads what was persisted; at
 * worst the last hits before a crash are forgotten, a few extra requests for a rate limit, never a wrong answer.
 */
export class RateLimiterObject extends DurableObject<Env> {
  private hits: number[] = [];
  /** When the log is next written, and the alarm that empties it is set (one write for a burst of calls). */
  private flush: { windowMs: number } | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      this.hits = (await ctx.storage.get<number[]>("hits")) ?? [];
    });
  }

  consume(limit: number, windowSeconds: number): RateDecision {
    const now = Date.now();
    const windowMs = windowSeconds * 1000;
    this.hits = this.hits.filter((at) => at > now - windowMs);
    if (this.hits.length >= limit) {
      const wait = Math.max(1, Math.ceil((this.hits[0]! + windowMs - now) / 1000));
      return { allowed: false, remaining: 0, retryAfterSeconds: wait, resetSeconds: wait };
    }
    this.hits.push(now);
    this.persistSoon(windowMs);
    return {
      allowed: true,
      remaining: limit - this.hits.length,
      retryAfterSeconds: 0,
      resetSeconds: Math.max(1, Math.ceil((this.hits[0]! + windowMs - now) / 1000)),
    };
  }

  /**
   * Writes the log, and sets the alarm that empties it once a whole window has passed without an admitted request,
   * after the calls queued now have been answered: the calls of a burst share one write.
   */
  private persistSoon(windowMs: number): void {
    if (this.flush) return;
    this.flush = { windowMs };
    setTimeout(() => {
      const { windowMs: window } = this.flush!;
      this.flush = null;
      void this.ctx.storage.put("hits", this.hits, { allowUnconfirmed: true });
      void this.ctx.storage.setAlarm((this.hits.at(-1) ?? Date.now()) + window + 1000, { allowUnconfirmed: true });
    }, 0);
  }

  /** Set one window after the last admitted hit, so every hit is stale by the time it runs. */
  override async alarm(): Promise<void> {
    this.hits = [];
    await this.ctx.storage.delete("hits");
  }
}
