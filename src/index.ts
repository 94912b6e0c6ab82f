import { createApp } from "./app";
import type { Env } from "./env";

export { EnvelopeSigner } from "./signatures/envelope-signer";
export { RateLimiterObject as RateLimiter } from "./platform/rate-limiter-object";

const app = createApp();

/**
 * The Worker. Only the app's router is built at startup: route groups, queue consumers and cron passes load at their
 * first use, since every new isolate in every location pays the startup before its first answer.
 */
export default {
  fetch: app.fetch,

  async queue(batch: MessageBatch<unknown>, env: Env): Promise<void> {
    const { handleQueue } = await import("./queues");
    return handleQueue(batch, env);
  },

  async scheduled(_controller: ScheduledController, env: Env, ctx: ExecutionContext): Promise<void> {
    const { runCron } = await import("./cron");
    ctx.waitUntil(runCron(env));
  },
} satisfies ExportedHandler<Env>;
