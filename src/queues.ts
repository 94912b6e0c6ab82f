import type { Env } from "./env";
import { createEventRouter } from "./events/consumers";
import { EVENT_CONSUMERS } from "./events/registry";
import { createDeliveryConsumer, markDeadDeliveries } from "./webhooks/delivery";
import { defaultWebhookDeps } from "./webhooks/transport";

const routeEvents = createEventRouter(EVENT_CONSUMERS);
const deliverWebhooks = createDeliveryConsumer(defaultWebhookDeps());

/** The queue consumers (loaded by the Worker's queue handler at its first batch, not at startup). */
export async function handleQueue(batch: MessageBatch<unknown>, env: Env): Promise<void> {
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
}
