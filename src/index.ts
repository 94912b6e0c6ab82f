import { purgeTrash } from "./trash/service";
import { createApp } from "./app";
import { pruneStaleListTotals } from "./crm/list-totals";
import { createDb } from "./db/client";
import { noteOverdueObligations } from "./documents/obligations";
import type { Env } from "./env";
import { createEventRouter } from "./events/consumers";
import { resendUnsentEvents } from "./events/outbox";
import { EVENT_CONSUMERS } from "./events/registry";
import { pruneOAuth } from "./oauth/prune";
import { pruneIdempotencyKeys } from "./platform/idempotency";
import { expireSurveys, sendDueSurveys } from "./reputation/surveys";
import { sweepOverdueEnvelopes } from "./signatures/expiry";
import { sendDueReminders } from "./signatures/reminders";
import { createDeliveryConsumer, markDeadDeliveries } from "./webhooks/delivery";
import { resendStalledDeliveries } from "./webhooks/fanout";
import { defaultWebhookDeps } from "./webhooks/transport";

export { EnvelopeSigner } from "./signatures/envelope-signer";
export { RateLimiterObject as RateLimiter } from "./platform/rate-limiter-object";

const app = createApp();
const routeEvents = createEventRouter(EVENT_CONSUMERS);
const deliverWebhooks = createDeliveryConsumer(defaultWebhookDeps());

export default {
  fetch: app.fetch,

  async queue(batch: MessageBatch<unknown>, env: Env): Promise<void> {
    switch (batch.queue) {
      case "events":
        return routeEvents(batch, env);
      case "webhook-deliveries":
        return deliverWebhooks(batch, env);
      case "webhook-deliveries-dlq":
        return markDeadDeliveries(batch, env);
      default:
        // A queue bound in wrangler.toml without a consumer here: keep its messages rather than lose them.
        console.error(JSON.stringify({ level: "warn", msg: "no consumer for queue", queue: batch.queue, count: batch.messages.length }));
        batch.retryAll({ delaySeconds: 3600 });
    }
  },

  async scheduled(_controller: ScheduledController, env: Env, ctx: ExecutionContext): Promise<void> {
    const db = createDb(env.DB);
    ctx.waitUntil(Promise.all([resendUnsentEvents(env, db), resendStalledDeliveries(env, db), pruneStaleListTotals(env.DB), pruneIdempotencyKeys(db), sweepOverdueEnvelopes(env, db), sendDueReminders(env, db), noteOverdueObligations(db), sendDueSurveys(env, db), expireSurveys(db), pruneOAuth(db), purgeTrash(env, db)]));
  },
} satisfies ExportedHandler<Env>;
