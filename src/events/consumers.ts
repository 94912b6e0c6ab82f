import { and, eq, isNull, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { outboxEvents, processedEvents } from "../db/schema";
import { inJsonList } from "../lib/sql";
import type { Env } from "../env";
import { nowIso } from "../lib/time";
import { type EventEnvelope, EventEnvelopeSchema } from "./envelope";
import { loggableError } from "../lib/log";
import { OrganizationMoving } from "../lib/errors";
import { MOVING_RETRY_SECONDS, organizationsOfIds, routeToShards } from "../shards/tenants";

export interface EventConsumer {
  /** Stable name: the idempotency record is kept per (consumer, event id). */
  name: string;
  accepts(type: string): boolean;
  /**
   * Handles the events of one queue batch that this consumer accepts and has claimed, in one go (one fan-out query
   * for 25 events, not 25). When it throws, the events are handled again one at a time, so one bad event fails
   * alone and the rest are done.
   */
  handle(events: EventEnvelope[], deps: { env: Env; db: Db }): Promise<void>;
}

/** A claim older than this without `processedAt` belongs to a consumer that died mid-way. */
const STALE_CLAIM_MS = 5 * 60 * 1000;

/** Exponential backoff with jitter for a message's next attempt: ~10 s, 20 s, 40 s … capped at one hour. */
export function retryDelaySeconds(attempts: number): number {
  const base = Math.min(3600, 10 * 2 ** Math.max(0, attempts - 1));
  return Math.round(base * (0.75 + Math.random() * 0.5));
}

/**
 * Claims `eventIds` for `consumer` in one statement: the ids it may handle now; the rest are done already or being
 * handled by another delivery of the same message (busy, when `processedAt` is still null).
 */
async function claim(db: Db, consumer: string, eventIds: string[]): Promise<{ claimed: Set<string>; busy: Set<string> }> {
  const now = nowIso();
  const staleBefore = new Date(Date.now() - STALE_CLAIM_MS).toISOString();
  const won = await db
    .insert(processedEvents)
    .select(sql`SELECT ${consumer}, value, ${now}, NULL FROM json_each(${JSON.stringify(eventIds)}) WHERE true`)
    .onConflictDoUpdate({
      target: [processedEvents.consumer, processedEvents.eventId],
      set: { claimedAt: now },
      setWhere: sql`${processedEvents.processedAt} IS NULL AND ${processedEvents.claimedAt} < ${staleBefore}`,
    })
    .returning({ eventId: processedEvents.eventId });
  const claimed = new Set(won.map((r) => r.eventId));
  const others = eventIds.filter((id) => !claimed.has(id));
  if (others.length === 0) return { claimed, busy: new Set() };
  const open = await db
    .select({ eventId: processedEvents.eventId })
    .from(processedEvents)
    .where(and(eq(processedEvents.consumer, consumer), inJsonList(processedEvents.eventId, others), isNull(processedEvents.processedAt)));
  return { claimed, busy: new Set(open.map((r) => r.eventId)) };
}

const markDone = (db: Db, consumer: string, eventIds: string[]) =>
  db
    .update(processedEvents)
    .set({ processedAt: nowIso() })
    .where(and(eq(processedEvents.consumer, consumer), inJsonList(processedEvents.eventId, eventIds)));

const releaseClaims = (db: Db, consumer: string, eventIds: string[]) =>
  db
    .delete(processedEvents)
    .where(and(eq(processedEvents.consumer, consumer), inJsonList(processedEvents.eventId, eventIds), isNull(processedEvents.processedAt)));

/**
 * Runs every consumer on the events it accepts, once per (consumer, event id) however often the queue delivers them.
 * Answers the ids that must be retried: a consumer failed on them, or another delivery of them is still being handled.
 */
export async function dispatchEvents(consumers: EventConsumer[], events: EventEnvelope[], env: Env, db: Db): Promise<Set<string>> {
  const retry = new Set<string>();
  for (const consumer of consumers) {
    const mine = events.filter((e) => consumer.accepts(e.type));
    if (mine.length === 0) continue;
    const { claimed, busy } = await claim(
      db,
      consumer.name,
      mine.map((e) => e.id),
    );
    for (const id of busy) retry.add(id);
    const todo = mine.filter((e) => claimed.has(e.id));
    if (todo.length === 0) continue;
    try {
      await consumer.handle(todo, { env, db });
      await markDone(
        db,
        consumer.name,
        todo.map((e) => e.id),
      ).run();
      continue;
    } catch (err) {
      if (todo.length === 1) {
        await fail(db, consumer, todo[0]!, err);
        retry.add(todo[0]!.id);
        continue;
      }
    }
    // The batch failed: one event at a time, so only the events that fail are retried.
    for (const event of todo) {
      try {
        await consumer.handle([event], { env, db });
        await markDone(db, consumer.name, [event.id]).run();
      } catch (err) {
        await fail(db, consumer, event, err);
        retry.add(event.id);
      }
    }
  }
  return retry;
}

async function fail(db: Db, consumer: EventConsumer, event: EventEnvelope, err: unknown): Promise<void> {
  console.error(
    JSON.stringify({
      level: "error",
      msg: "event consumer failed",
      consumer: consumer.name,
      eventId: event.id,
      type: event.type,
      error: loggableError(err),
    }),
  );
  await releaseClaims(db, consumer.name, [event.id]).run();
}

/** What a message says: an event id with its organization (events/outbox.ts), or a whole envelope (a test, an older version). */
interface Addressed {
  message: Message<unknown>;
  id: string | null;
  organizationId: string | null;
  envelope?: EventEnvelope;
}

const stringOf = (v: unknown): string | null => (typeof v === "string" && v.length > 0 && v.length <= 100 ? v : null);

function addressOf(message: Message<unknown>): Addressed {
  const body = message.body as { id?: unknown; organizationId?: unknown } | null;
  const legacy = EventEnvelopeSchema.safeParse(message.body);
  return {
    message,
    id: stringOf(body?.id),
    organizationId: stringOf(body?.organizationId),
    envelope: legacy.success ? legacy.data : undefined,
  };
}

/**
 * The organizations of id-only messages queued before messages named one: each shard is asked for the ids it holds
 * (one query per shard for the batch), so such a message is handled where its event lives.
 */
async function findOrganizations(env: Env, items: Addressed[]): Promise<void> {
  const lost = items.filter((a) => a.organizationId === null && a.id !== null);
  const orgOf = await organizationsOfIds(
    env,
    outboxEvents,
    outboxEvents,
    lost.map((a) => a.id!),
  );
  for (const a of lost) a.organizationId = orgOf.get(a.id!) ?? null;
}

/**
 * The stored events of a batch of messages, in one D1 round trip, marked sent on the way: a write that published
 * without marking them (events/outbox.ts `deferPublish`) is confirmed here, so the cron does not send them again.
 */
async function loadEvents(db: Db, ids: string[]): Promise<Map<string, EventEnvelope>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .update(outboxEvents)
    .set({ sentAt: sql`COALESCE(${outboxEvents.sentAt}, ${nowIso()})`, nextAttemptAt: null })
    .where(inJsonList(outboxEvents.id, ids))
    .returning({
      id: outboxEvents.id,
      type: outboxEvents.type,
      organizationId: outboxEvents.organizationId,
      actor: outboxEvents.actor,
      occurredAt: outboxEvents.occurredAt,
      data: outboxEvents.data,
    });
  return new Map(rows.map((r) => [r.id, r]));
}

/** The messages of one shard: events read in one query, every consumer run, each message acked or retried. */
async function handleOnShard(consumers: EventConsumer[], items: Addressed[], env: Env, db: Db): Promise<void> {
  let stored: Map<string, EventEnvelope>;
  try {
    stored = await loadEvents(db, [...new Set(items.flatMap((a) => (a.id ? [a.id] : [])))]);
  } catch (err) {
    // The shard refused (an organization of the batch is being fenced for its move) or is down: every message waits.
    const moving = OrganizationMoving.raisedBy(err);
    console.error(
      JSON.stringify({
        level: moving ? "warn" : "error",
        msg: "events not read from their shard; retried",
        eventIds: items.map((a) => a.id),
        error: loggableError(err),
      }),
    );
    for (const { message } of items) message.retry({ delaySeconds: moving ? MOVING_RETRY_SECONDS : retryDelaySeconds(message.attempts) });
    return;
  }
  const events = new Map<string, EventEnvelope>();
  // An envelope in the message body is used only when its event is not stored (a test, or an event outside the outbox).
  const eventOf = items.map((a) => (a.id && stored.get(a.id)) ?? a.envelope);
  for (const event of eventOf) if (event) events.set(event.id, event);
  let retry: Set<string>;
  try {
    retry = await dispatchEvents(consumers, [...events.values()], env, db);
  } catch (err) {
    console.error(
      JSON.stringify({ level: "error", msg: "event dispatch failed", eventIds: [...events.keys()], error: loggableError(err) }),
    );
    retry = new Set(events.keys());
  }
  for (const [i, { message, id }] of items.entries()) {
    const event = eventOf[i];
    if (!event) {
      // Retrying cannot help a message that names no stored event; log it and let it go.
      console.error(
        JSON.stringify({ level: "error", msg: "event message names no stored event; dropped", messageId: message.id, eventId: id }),
      );
      message.ack();
    } else if (retry.has(event.id)) message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
    else message.ack();
  }
}

/**
 * The `events` queue handler: messages carry event ids and their organization; the organizations are looked up in
 * the directory once per batch and each shard's events are read from its outbox in one query. Each message
 * is acked or retried on its own; one bad message never fails the batch. An organization that is moving waits (a
 * retry, not a dead letter); one the directory no longer knows has no data left to react to, so its message goes.
 */
export function createEventRouter(consumers: EventConsumer[]) {
  return async (batch: MessageBatch<unknown>, env: Env): Promise<void> => {
    const items = batch.messages.map(addressOf);
    await findOrganizations(env, items);
    const { byShard, fenced, unknown } = await routeToShards(env, items, (a) => a.organizationId ?? a.envelope?.organizationId ?? null);
    for (const { message, id, organizationId, envelope } of unknown) {
      const msg = id || envelope ? "event message of no known organization; dropped" : "event message names no event; dropped";
      console.error(JSON.stringify({ level: "warn", msg, messageId: message.id, eventId: id, organizationId }));
      message.ack();
    }
    for (const { message } of fenced) message.retry({ delaySeconds: MOVING_RETRY_SECONDS });
    await Promise.all(byShard.map(({ shard, items }) => handleOnShard(consumers, items, env, shard.db)));
  };
}
