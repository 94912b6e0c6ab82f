import { and, eq, isNull, sql } from "drizzle-orm";
import { createDb, type Db } from "../db/client";
import { processedEvents } from "../db/schema";
import type { Env } from "../env";
import { nowIso } from "../lib/time";
import { type EventEnvelope, EventEnvelopeSchema } from "./envelope";
import { loggableError } from "../lib/log";

export interface EventConsumer {
  /** Stable name: the idempotency record is kept per (consumer, event id). */
  name: string;
  accepts(type: string): boolean;
  handle(event: EventEnvelope, deps: { env: Env; db: Db }): Promise<void>;
}

/** A claim older than this without `processedAt` belongs to a consumer that died mid-way. */
const STALE_CLAIM_MS = 5 * 60 * 1000;

/** Exponential backoff with jitter for a message's next attempt: ~10 s, 20 s, 40 s … capped at one hour. */
export function retryDelaySeconds(attempts: number): number {
  const base = Math.min(3600, 10 * 2 ** Math.max(0, attempts - 1));
  return Math.round(base * (0.75 + Math.random() * 0.5));
}

type Claim = "claimed" | "done" | "busy";

async function claim(db: Db, consumer: string, eventId: string): Promise<Claim> {
  const now = nowIso();
  const staleBefore = new Date(Date.now() - STALE_CLAIM_MS).toISOString();
  const won = await db
    .insert(processedEvents)
    .values({ consumer, eventId, claimedAt: now })
    .onConflictDoUpdate({
      target: [processedEvents.consumer, processedEvents.eventId],
      set: { claimedAt: now },
      setWhere: sql`${processedEvents.processedAt} IS NULL AND ${processedEvents.claimedAt} < ${staleBefore}`,
    })
    .returning({ eventId: processedEvents.eventId })
    .get();
  if (won) return "claimed";
  const row = await db
    .select({ processedAt: processedEvents.processedAt })
    .from(processedEvents)
    .where(and(eq(processedEvents.consumer, consumer), eq(processedEvents.eventId, eventId)))
    .get();
  return row?.processedAt ? "done" : "busy";
}

const markDone = (db: Db, consumer: string, eventId: string) =>
  db
    .update(processedEvents)
    .set({ processedAt: nowIso() })
    .where(and(eq(processedEvents.consumer, consumer), eq(processedEvents.eventId, eventId)));

const releaseClaim = (db: Db, consumer: string, eventId: string) =>
  db
    .delete(processedEvents)
    .where(and(eq(processedEvents.consumer, consumer), eq(processedEvents.eventId, eventId), isNull(processedEvents.processedAt)));

/**
 * Runs every consumer that accepts an event, once per (consumer, event id) however often the queue delivers it.
 * Returns "retry" when some consumer failed or another delivery of the same event is still being handled.
 */
export async function dispatchEvent(consumers: EventConsumer[], event: EventEnvelope, env: Env, db: Db): Promise<"ok" | "retry"> {
  let outcome: "ok" | "retry" = "ok";
  for (const consumer of consumers.filter((c) => c.accepts(event.type))) {
    const state = await claim(db, consumer.name, event.id);
    if (state === "done") continue;
    if (state === "busy") {
      outcome = "retry";
      continue;
    }
    try {
      await consumer.handle(event, { env, db });
      await markDone(db, consumer.name, event.id).run();
    } catch (err) {
      console.error(JSON.stringify({ level: "error", msg: "event consumer failed", consumer: consumer.name, eventId: event.id, type: event.type, error: loggableError(err) }));
      await releaseClaim(db, consumer.name, event.id).run();
      outcome = "retry";
    }
  }
  return outcome;
}

/** The `events` queue handler: each message is acked or retried on its own; one bad message never fails the batch. */
export function createEventRouter(consumers: EventConsumer[]) {
  return async (batch: MessageBatch<unknown>, env: Env): Promise<void> => {
    const db = createDb(env.DB);
    for (const message of batch.messages) {
      const parsed = EventEnvelopeSchema.safeParse(message.body);
      if (!parsed.success) {
        // Retrying a malformed envelope cannot help; log it and let it go.
        console.error(JSON.stringify({ level: "error", msg: "malformed event envelope dropped", messageId: message.id }));
        message.ack();
        continue;
      }
      try {
        const outcome = await dispatchEvent(consumers, parsed.data, env, db);
        if (outcome === "ok") message.ack();
        else message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
      } catch (err) {
        console.error(JSON.stringify({ level: "error", msg: "event dispatch failed", eventId: parsed.data.id, error: loggableError(err) }));
        message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
      }
    }
  };
}
