import { and, eq, isNull, sql } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../db/client";
import { outboxEvents, processedEvents } from "../db/schema";
import { inJsonList } from "../lib/sql";
import type { Env } from "../env";
import { nowIso } from "../lib/time";
import { type DomainEvent, DomainEventSchema } from "./event";
import { createLogger, type Logger, loggableError } from "../lib/log";
import { OrganizationMoving } from "../lib/errors";
import { EventMessageSchema } from "../lib/queue-messages";
import { EVENT_HANDLING, ORGANIZATION_MOVING } from "../lib/retry";
import { organizationsOfIds, routeToShards } from "../shards/tenants";
import { type QueueMessage, queueConsumer } from "./queue-consumer";

export interface EventConsumer {
  /** Stable name: the idempotency record is kept per (consumer, event id). */
  name: string;
  accepts(type: string): boolean;
  /**
   * Handles the events of one queue batch that this consumer accepts and has claimed, in one go (one fan-out query
   * for 25 events, not 25). When it throws, the events are handled again one at a time, so one bad event fails
   * alone and the rest are done.
   */
  handle(events: DomainEvent[], deps: { env: Env; db: Db }): Promise<void>;
}

/** A claim older than this without `processedAt` belongs to a consumer that died mid-way. */
const STALE_CLAIM_MS = 5 * 60 * 1000;

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
export async function dispatchEvents(
  consumers: EventConsumer[],
  events: DomainEvent[],
  env: Env,
  db: Db,
  log: Logger = createLogger(),
): Promise<Set<string>> {
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
        await fail(db, log, consumer, todo[0]!, err);
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
        await fail(db, log, consumer, event, err);
        retry.add(event.id);
      }
    }
  }
  return retry;
}

async function fail(db: Db, log: Logger, consumer: EventConsumer, event: DomainEvent, err: unknown): Promise<void> {
  log.error("event consumer failed", { consumer: consumer.name, eventId: event.id, type: event.type, error: loggableError(err) });
  await releaseClaims(db, consumer.name, [event.id]).run();
}

/**
 * The body of an `events` message: an event id with its organization (events/outbox.ts; the id only, when queued
 * before messages named one), or a whole event (a test, an older version).
 */
const EventQueueBodySchema = z.union([DomainEventSchema, EventMessageSchema]);
type EventQueueBody = z.infer<typeof EventQueueBodySchema>;

interface Addressed {
  message: QueueMessage<EventQueueBody>;
  id: string;
  organizationId: string | null;
  event?: DomainEvent;
}

const addressOf = (message: QueueMessage<EventQueueBody>): Addressed => ({
  message,
  id: message.body.id,
  organizationId: message.body.organizationId ?? null,
  event: "type" in message.body ? message.body : undefined,
});

/**
 * The organizations of id-only messages queued before messages named one: each shard is asked for the ids it holds
 * (one query per shard for the batch), so such a message is handled where its event lives.
 */
async function findOrganizations(env: Env, items: Addressed[]): Promise<void> {
  const lost = items.filter((a) => a.organizationId === null);
  const orgOf = await organizationsOfIds(
    env,
    outboxEvents,
    outboxEvents,
    lost.map((a) => a.id),
  );
  for (const a of lost) a.organizationId = orgOf.get(a.id) ?? null;
}

/**
 * The stored events of a batch of messages, in one D1 round trip, marked sent on the way: a write that published
 * without marking them (events/outbox.ts `deferPublish`) is confirmed here, so the cron does not send them again.
 */
async function loadEvents(db: Db, ids: string[]): Promise<Map<string, DomainEvent>> {
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
async function handleOnShard(consumers: EventConsumer[], items: Addressed[], env: Env, db: Db, log: Logger): Promise<void> {
  let stored: Map<string, DomainEvent>;
  try {
    stored = await loadEvents(db, [...new Set(items.map((a) => a.id))]);
  } catch (err) {
    // The shard refused (an organization of the batch is being fenced for its move) or is down: every message waits.
    const moving = OrganizationMoving.raisedBy(err);
    log[moving ? "warn" : "error"]("events not read from their shard; retried", {
      eventIds: items.map((a) => a.id),
      error: loggableError(err),
    });
    for (const { message } of items) message.retry(moving ? ORGANIZATION_MOVING.delaySeconds(message.attempts) : undefined);
    return;
  }
  const events = new Map<string, DomainEvent>();
  // A whole event in the message body is used only when its event is not stored (a test, or an event outside the outbox).
  const eventOf = items.map((a) => stored.get(a.id) ?? a.event);
  for (const event of eventOf) if (event) events.set(event.id, event);
  let retry: Set<string>;
  try {
    retry = await dispatchEvents(consumers, [...events.values()], env, db, log);
  } catch (err) {
    log.error("event dispatch failed", { eventIds: [...events.keys()], error: loggableError(err) });
    retry = new Set(events.keys());
  }
  for (const [i, { message, id }] of items.entries()) {
    const event = eventOf[i];
    if (!event) {
      // Retrying cannot help a message that names no stored event; log it and let it go.
      log.error("event message names no stored event; dropped", { messageId: message.id, eventId: id });
      message.ack();
    } else if (retry.has(event.id)) message.retry();
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
  return queueConsumer({ schema: EventQueueBodySchema, retry: EVENT_HANDLING }, async (messages, env, log) => {
    const items = messages.map(addressOf);
    await findOrganizations(env, items);
    const { byShard, fenced, unknown } = await routeToShards(env, items, (a) => a.organizationId ?? a.event?.organizationId ?? null);
    for (const { message, id, organizationId } of unknown) {
      log.warn("event message of no known organization; dropped", { messageId: message.id, eventId: id, organizationId });
      message.ack();
    }
    for (const { message } of fenced) message.retry(ORGANIZATION_MOVING.delaySeconds(message.attempts));
    await Promise.all(byShard.map(({ shard, items }) => handleOnShard(consumers, items, env, shard.db, log)));
  });
}
