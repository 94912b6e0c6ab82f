/**
 * Retry schedule of a failed delivery. The spec leaves count and schedule open (Payload structure, last line), so:
 * 1 minute, growing by half each time, capped at Queues' 12-hour maximum delay, with ±20 % jitter so receivers
 * coming back from an outage are not hit by every retry at once. 20 retries (21 attempts, wrangler.toml
 * `max_retries = 20`) add up to about 2.9 days; after the last, the queue moves the message to the dead-letter queue.
 */
export const MAX_DELIVERY_RETRIES = 20;
export const MAX_QUEUE_DELAY_SECONDS = 43_200;

/** The delay before the next attempt once attempt `attempt` (1-based) has failed, before jitter. */
export const baseDelaySeconds = (attempt: number): number => Math.min(MAX_QUEUE_DELAY_SECONDS, Math.round(60 * 1.5 ** (attempt - 1)));

export function retryDelaySeconds(attempt: number, random: () => number = Math.random): number {
  return Math.min(MAX_QUEUE_DELAY_SECONDS, Math.round(baseDelaySeconds(attempt) * (0.8 + 0.4 * random())));
}

/** Whether the queue will give this message another attempt after `attempt` (its `message.attempts`) fails. */
export const hasRetryLeft = (attempt: number): boolean => attempt <= MAX_DELIVERY_RETRIES;
