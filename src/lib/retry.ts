/**
 * Every retry schedule of the Worker, one per purpose, by name: how long a failed piece of async work waits before its
 * next attempt. A queue consumer retries its messages on its queue's schedule (events/queue-consumer.ts); the
 * outbox backs off a failed send on `EVENT_SEND` in the row it keeps.
 */

/** The longest delay Queues accept for a retry (12 hours). */
export const MAX_QUEUE_DELAY_SECONDS = 43_200;

export interface RetrySchedule {
  readonly name: string;
  /** Seconds before the next attempt once attempt `attempts` (1-based) has failed, before jitter. */
  baseSeconds(attempts: number): number;
  /**
   * Seconds before the next attempt once attempt `attempts` (1-based: a message's `attempts`) has failed. `random`
   * (0 ≤ r < 1) picks the jitter; schedules without jitter ignore it.
   */
  delaySeconds(attempts: number, random?: () => number): number;
}

/**
 * `firstSeconds` after the first failure, times `factor` after each further one, at most `capSeconds`; then spread by
 * ± `jitter` (a fraction) so work that failed together does not come back together, never past Queues' maximum.
 */
function backoff(name: string, { firstSeconds, factor, capSeconds, jitter = 0 }: Backoff): RetrySchedule {
  const baseSeconds = (attempts: number) => Math.min(capSeconds, Math.round(firstSeconds * factor ** Math.max(0, attempts - 1)));
  return {
    name,
    baseSeconds,
    delaySeconds(attempts, random = Math.random) {
      const spread = jitter === 0 ? 1 : 1 - jitter + 2 * jitter * random();
      return Math.min(MAX_QUEUE_DELAY_SECONDS, Math.round(baseSeconds(attempts) * spread));
    },
  };
}

interface Backoff {
  firstSeconds: number;
  factor: number;
  capSeconds: number;
  jitter?: number;
}

/** The same wait whatever the attempt. */
const fixed = (name: string, seconds: number): RetrySchedule => ({ name, baseSeconds: () => seconds, delaySeconds: () => seconds });

/** A message of the `events` queue a consumer failed on: ~10 s, 20 s, 40 s … at most an hour, ± 25 %. */
export const EVENT_HANDLING = backoff("event-handling", { firstSeconds: 10, factor: 2, capSeconds: 3600, jitter: 0.25 });

/**
 * A webhook delivery the receiver did not take. The spec leaves count and schedule open (Payload structure, last
 * line), so: 1 minute, growing by half each time, capped at Queues' 12-hour maximum delay, with ± 20 % jitter so
 * receivers coming back from an outage are not hit by every retry at once. 20 retries (wrangler.toml
 * `max_retries = 20`) add up to about 2.9 days; after the last, the queue moves the message to the dead-letter queue.
 */
export const WEBHOOK_DELIVERY = backoff("webhook-delivery", {
  firstSeconds: 60,
  factor: 1.5,
  capSeconds: MAX_QUEUE_DELAY_SECONDS,
  jitter: 0.2,
});

/** An import chunk that failed (a D1 hiccup, a lost race): 2 s, 4 s, 8 s … at most a minute; the import's row says where it resumes. */
export const IMPORT_CHUNK = backoff("import-chunk", { firstSeconds: 2, factor: 2, capSeconds: 60 });

/** An organization export run that failed: a minute, doubling, at most an hour (its upload aborted; the next run starts again). */
export const EXPORT_RUN = backoff("export-run", { firstSeconds: 60, factor: 2, capSeconds: 3600 });

/**
 * A committed event the queue refused (events/outbox.ts): the cron sends it again after a minute, doubling, at most an
 * hour, until `MAX_SEND_ATTEMPTS` dead-letters it.
 */
export const EVENT_SEND = backoff("event-send", { firstSeconds: 60, factor: 2, capSeconds: 3600 });

/** A stored lead whose intake failed (leads/inbox.ts): the cron tries it again after a minute, doubling, at most an hour. */
export const LEAD_INTAKE = backoff("lead-intake", { firstSeconds: 60, factor: 2, capSeconds: 3600 });

/** Work of an organization that is moving to another shard (docs/decisions/0009-moving-an-organization.md): the move's final copy takes seconds. */
export const ORGANIZATION_MOVING = fixed("organization-moving", 15);

/** Messages of a queue bound in wrangler.toml with no consumer in src/queues.ts: kept, looked at again hourly. */
export const NO_CONSUMER = fixed("no-consumer", 3600);
