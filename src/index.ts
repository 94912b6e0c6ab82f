import { createApp } from "./app";
import { createDb } from "./db/client";
import type { Env } from "./env";
import { createEventRouter } from "./events/consumers";
import { resendUnsentEvents } from "./events/outbox";
import { EVENT_CONSUMERS } from "./events/registry";

export { EnvelopeSigner } from "./signatures/envelope-signer";
export { RateLimiterObject as RateLimiter } from "./platform/rate-limiter-object";

const app = createApp();
const routeEvents = createEventRouter(EVENT_CONSUMERS);

export default {
  fetch: app.fetch,

  async queue(batch: MessageBatch<unknown>, env: Env): Promise<void> {
    switch (batch.queue) {
      case "events":
        return routeEvents(batch, env);
      default:
        // webhook-deliveries and its dead-letter queue get their consumers with the webhooks issue; until then no
        // producer writes to them, and anything that arrives waits for its consumer rather than being lost.
        console.error(JSON.stringify({ level: "warn", msg: "no consumer for queue", queue: batch.queue, count: batch.messages.length }));
        batch.retryAll({ delaySeconds: 3600 });
    }
  },

  async scheduled(_controller: ScheduledController, env: Env, ctx: ExecutionContext): Promise<void> {
    ctx.waitUntil(resendUnsentEvents(env, createDb(env.DB)));
  },
} satisfies ExportedHandler<Env>;
