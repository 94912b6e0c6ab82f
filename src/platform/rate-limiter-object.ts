import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";

export interface RateDecision {
  allowed: boolean;
  remaining: number;
  /** Seconds until the oldest counted request leaves the window (0 when allowed). */
  retryAfterSeconds: number;
}

/**
 * One object per (route bucket, client IP): a sliding-window log of admitted requests in SQLite storage.
 * `consume` runs synchronous SQL only and never awaits, so the object's input gate serializes every call: 200
 * simultaneous requests on one key can never admit more than the limit.
 */
export class RateLimiterObject extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS hits (at INTEGER NOT NULL)");
  }

  consume(limit: number, windowSeconds: number): RateDecision {
    const now = Date.now();
    const windowMs = windowSeconds * 1000;
    this.sql.exec("DELETE FROM hits WHERE at <= ?", now - windowMs);
    const { n, oldest } = this.sql.exec<{ n: number; oldest: number | null }>("SELECT COUNT(*) AS n, MIN(at) AS oldest FROM hits").one();
    if (n >= limit) {
      const retryAfterSeconds = Math.max(1, Math.ceil(((oldest ?? now) + windowMs - now) / 1000));
      return { allowed: false, remaining: 0, retryAfterSeconds };
    }
    this.sql.exec("INSERT INTO hits (at) VALUES (?)", now);
    // Empty the log once a whole window has passed without an admitted request.
    void this.ctx.storage.setAlarm(now + windowMs + 1000);
    return { allowed: true, remaining: limit - n - 1, retryAfterSeconds: 0 };
  }

  /** Set one window after the last admitted hit, so every row is stale by the time it runs. */
  override async alarm(): Promise<void> {
    this.sql.exec("DELETE FROM hits");
  }
}
