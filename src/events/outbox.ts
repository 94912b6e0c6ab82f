import { and, asc, inArray, isNull, lt, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { outboxEvents } from "../db/schema";
import type { Env } from "../env";
import { newId } from "../lib/ids";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../platform/context";
import type { EventEnvelope } from "./envelope";

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

/** Sends committed events to the `events` queue and marks them sent; what fails here the cron pass sends later. */
export async function publishEvents(env: Env, db: Db, events: EventEnvelope[]): Promise<void> {
  if (events.length === 0) return;
  try {
    await env.EVENTS.sendBatch(events.map((body) => ({ body, contentType: "json" as const })));
  } catch (err) {
    console.error(JSON.stringify({ level: "warn", msg: "event send failed; cron will re-send", ids: events.map((e) => e.id), error: String(err) }));
    return;
  }
  await db
    .update(outboxEvents)
    .set({ sentAt: nowIso(), sendAttempts: sql`${outboxEvents.sendAttempts} + 1` })
    .where(inArray(outboxEvents.id, events.map((e) => e.id)));
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
  // Queue sendBatch takes at most 100 messages per call.
  for (let i = 0; i < rows.length; i += 100) {
    const chunk = rows.slice(i, i + 100).map(({ id, type, organizationId, actor, occurredAt, data }) => ({ id, type, organizationId, actor, occurredAt, data }));
    await publishEvents(env, db, chunk);
  }
  return rows.length;
}
