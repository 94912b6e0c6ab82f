import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import { withDeferred } from "../../src/lib/deferred";
import { systemContext } from "../../src/shards/tenants";

// Work with no request (cron, queue consumers, scripts) had a default `defer` that dropped what it was given
// (issue 29): a deferred publish could vanish silently. It now passes a deferral that runs the work.
describe("deferred work outside a request", () => {
  it("systemContext takes no default deferral: a caller must name one (npm run typecheck fails on a call without)", () => {
    const db = createDb(env.DB_SHARD_0);
    // @ts-expect-error: the deferral is required
    const forgotten = () => systemContext(env, db, "org", "test");
    expect(forgotten).toBeTypeOf("function");
    const ran: string[] = [];
    const ctx = systemContext(env, db, "org", "test", (work) => void work.then(() => ran.push("kept")));
    ctx.defer(Promise.resolve());
    return Promise.resolve().then(() => expect(ran).toEqual(["kept"]));
  });

  it("withDeferred settles after everything deferred, and what that deferred in turn, even when the run throws", async () => {
    const done: string[] = [];
    const later = (name: string, ms: number) => new Promise<void>((resolve) => setTimeout(() => resolve(void done.push(name)), ms));
    const result = await withDeferred(async (defer) => {
      defer(later("publish", 20).then(() => defer(later("follow-up", 10))));
      return "answer";
    });
    expect(result).toBe("answer");
    expect(done).toEqual(["publish", "follow-up"]);

    done.length = 0;
    await expect(
      withDeferred(async (defer) => {
        defer(later("publish", 10));
        defer(later("failed send", 5).then(() => Promise.reject(new Error("send failed"))));
        throw new Error("step failed");
      }),
    ).rejects.toThrow("step failed");
    expect(done).toEqual(["failed send", "publish"]);
  });
});
