import type { z } from "zod";
import type { Env } from "../env";
import { createLogger, type Logger, loggableError } from "../lib/log";
import type { RetrySchedule } from "../lib/retry";

/**
 * The one skeleton of every queue consumer (src/queues.ts): each message is parsed by its queue's schema
 * (lib/queue-messages.ts), the parsed ones go to the queue's handler, and each message is then acked or retried on
 * its own (STYLE.md "Events and async work"): one bad message never fails its batch.
 *
 * - A body the schema refuses is logged and dead-lettered: acked, with the log line as its record. Retrying cannot
 *   make it parse, and none of our queues binds a producer of its dead-letter queue, so retries would only hold the
 *   message up to `max_retries` times before the platform dropped it or handed it to the dead-letter consumer, which
 *   could not read it either. The consumers acked such messages before this kit too.
 * - A message the handler settles neither way is acked when the handler returns.
 * - When the handler throws, what it left unsettled is retried on the queue's schedule; after the last retry
 *   (wrangler.toml `max_retries`) the platform moves it to the queue's dead-letter queue, where one is configured.
 */

/** A parsed message, as a handler gets it: settle it once, by `ack` or `retry`. */
export interface QueueMessage<Body> {
  readonly id: string;
  readonly body: Body;
  /** 1 on the first delivery. */
  readonly attempts: number;
  ack(): void;
  /** Again later: after `delaySeconds`, or on the queue's schedule when none is given. */
  retry(delaySeconds?: number): void;
}

export interface QueueSpec<Body> {
  /** The queue's message body; what it refuses is dead-lettered unread. */
  schema: z.ZodType<Body>;
  /** The queue's named retry schedule (lib/retry.ts). */
  retry: RetrySchedule;
}

export type QueueHandler<Body> = (messages: QueueMessage<Body>[], env: Env, log: Logger) => Promise<void>;

type Tracked<Body> = QueueMessage<Body> & { readonly settled: boolean };

function wrap<Body>(message: Message<unknown>, body: Body, schedule: RetrySchedule): Tracked<Body> {
  let settled = false;
  return {
    id: message.id,
    body,
    attempts: message.attempts,
    get settled() {
      return settled;
    },
    ack() {
      settled = true;
      message.ack();
    },
    retry(delaySeconds = schedule.delaySeconds(message.attempts)) {
      settled = true;
      message.retry({ delaySeconds });
    },
  };
}

/** The issues of a refused body, by path and kind: never the values, which may be anything. */
const issuesOf = (error: z.ZodError) =>
  error.issues.slice(0, 10).map((i) => ({ path: i.path.join("."), code: i.code, message: i.message }));

/** The queue handler of `spec`: parse, hand over, then ack or retry each message (see above). */
export function queueConsumer<Body>(spec: QueueSpec<Body>, handle: QueueHandler<Body>) {
  return async (batch: MessageBatch<unknown>, env: Env): Promise<void> => {
    const log = createLogger();
    const parsed: Tracked<Body>[] = [];
    for (const message of batch.messages) {
      const read = spec.schema.safeParse(message.body);
      if (read.success) parsed.push(wrap(message, read.data, spec.retry));
      else {
        log.error("queue message unreadable; dead-lettered", {
          queue: batch.queue,
          messageId: message.id,
          attempts: message.attempts,
          issues: issuesOf(read.error),
        });
        message.ack();
      }
    }
    if (parsed.length === 0) return;
    try {
      await handle(parsed, env, log);
    } catch (err) {
      const left = parsed.filter((m) => !m.settled);
      log.error("queue batch failed; its messages retried", {
        queue: batch.queue,
        messageIds: left.map((m) => m.id),
        schedule: spec.retry.name,
        error: loggableError(err),
      });
      for (const m of left) m.retry();
      return;
    }
    for (const m of parsed) if (!m.settled) m.ack();
  };
}
