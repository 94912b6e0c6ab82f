/**
 * How often a failed delivery is tried again: on the `WEBHOOK_DELIVERY` schedule (lib/retry.ts), 20 retries (21
 * attempts, wrangler.toml `max_retries = 20`); after the last, the queue moves the message to the dead-letter queue.
 */
export const MAX_DELIVERY_RETRIES = 20;

/** Whether the queue will give this message another attempt after `attempt` (its `message.attempts`) fails. */
export const hasRetryLeft = (attempt: number): boolean => attempt <= MAX_DELIVERY_RETRIES;
