import { and, asc, isNull, lt, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { outboxEvents } from "../db/schema";
import type { Env } from "../env";
import { newId } from "../lib/ids";
import { inJsonList } from "../lib/sql";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../platform/context";
import type { EventEnvelope } from "./envelope";
import { loggableError } from "../lib/log";

/** A new event of the acting context; write it with `stageEvent` in the same batch as the change it records. */
export function newEvent(ctx: Pick<ServiceContext, "organizationId" | "actor">, type: string, data: Record<string, unknown>): EventEnvelope {
  return {
    id: newId(),
    type,
    organizationId: ctx.organizationId,
    actor: { type: ctx.actor.type, userId: ctx.actor.userId ?? null },
    occurredAt: nowIso(),
    data,
  };
}

/** The outbox insert for `event`, to put in the verb's `db.batch([...])`. */
export function stageEvent(db: Db, event: EventEnvelope) {
  return db.insert(outboxEvents).values({ ...event, actor: { type: event.actor.type, userId: event.actor.userId ?? null } });
}

/** Queues take at most 100 messages and 256 KB per sendBatch; chunks stay under both (with room for overhead). */
const MAX_BATCH_MESSAGES = 100;
const MAX_BATCH_BYTES = 240 * 1024;

function chunksForQueue(events: EventEnvelope[]): EventEnvelope[][] {
  const chunks: EventEnvelope[][] = [];
  let current: EventEnvelope[] = [];
  let bytes = 0;
  for (const event of events) {
    const size = JSON.stringify(event).length + 100;
    if (current.length > 0 && (current.length === MAX_BATCH_MESSAGES || bytes + size > MAX_BATCH_BYTES)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(event);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * Sends committed events to the `events` queue and marks them sent, chunk by chunk; a chunk that fails stays unsent
 * for the cron pass to send later, without holding back the others.
 */
export async function publishEvents(env: Env, db: Db, events: EventEnvelope[]): Promise<void> {
  for (const chunk of chunksForQueue(events)) {
    const ids = chunk.map((e) => e.id);
    try {
      await env.EVENTS.sendBatch(chunk.map((body) => ({ body, contentType: "json" as const })));
    } catch (err) {
      console.error(JSON.stringify({ level: "warn", msg: "event send failed; cron will re-send", ids, error: loggableError(err) }));
      continue;
    }
    await db
      .update(outboxEvents)
      .set({ sentAt: nowIso(), sendAttempts: sql`${outboxEvents.sendAttempts} + 1` })
      .where(inJsonList(outboxEvents.id, ids));
  }
}

/** After committing a batch that staged `events`: publish them without holding up the response. */
export function deferPublish(ctx: ServiceContext, events: EventEnvelope[]): void {
  if (events.length > 0) ctx.defer(publishEvents(ctx.env, ctx.db, events));
}

/**
 * Cron pass: events written but not sent (the isolate died between commit and send, or the send failed) go out
 * again. Only rows older than `graceSeconds`, so a send still in flight is not raced; duplicates are harmless since
 * consumers are idempotent on the event id.
 */
export async function resendUnsentEvents(env: Env, db: Db, { graceSeconds = 30, max = 500 } = {}): Promise<number> {
  const cutoff = new Date(Date.now() - graceSeconds * 1000).toISOString();
  const rows = await db
    .select()
    .from(outboxEvents)
    .where(and(isNull(outboxEvents.sentAt), lt(outboxEvents.occurredAt, cutoff)))
    .orderBy(asc(outboxEvents.occurredAt))
    .limit(max)
    .all();
  await publishEvents(env, db, rows.map(({ id, type, organizationId, actor, occurredAt, data }) => ({ id, type, organizationId, actor, occurredAt, data })));
  return rows.length;
}
