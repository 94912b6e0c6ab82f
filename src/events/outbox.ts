import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { outboxEvents } from "../db/schema";
import type { Statement } from "../db/write";
import { newId } from "../lib/ids";
import { createLogger, type Logger, loggableError } from "../lib/log";
import type { EventMessage } from "../lib/queue-messages";
import { EVENT_SEND } from "../lib/retry";
import { chunkBySize, inJsonList } from "../lib/sql";
import { addSeconds, nowIso } from "../lib/time";
import type { QueuePort, ServiceContext } from "../service-context";
import type { DomainEvent } from "./event";

/** The `events` queue, as the outbox sends to it: an event's id and organization a message (lib/queue-messages.ts). */
type EventQueue = QueuePort<EventMessage>;

/** A new event of the acting context; write it with `stageEvents` (or `commit`) in the batch of the change it records. */
export function newEvent(ctx: Pick<ServiceContext, "organizationId" | "actor">, type: string, data: Record<string, unknown>): DomainEvent {
  return {
    id: newId(),
    type,
    organizationId: ctx.organizationId,
    actor: { type: ctx.actor.type, userId: ctx.actor.userId ?? null },
    occurredAt: nowIso(),
    data,
  };
}

/** How long after it is written an unsent event is left to the publish that follows the commit before the cron takes it. */
const RESEND_GRACE_SECONDS = 30;
/** Events per insert statement are passed as one JSON parameter; D1 takes values up to 2 MB, so stay well under. */
const STAGE_CHUNK_BYTES = 512 * 1024;

/**
 * The outbox inserts of `events`, for the change's own batch: one statement per chunk of events (the chunk is one
 * JSON parameter, so their number never meets D1's limit of 100 bound values). `onlyIf` stages an event only while a
 * condition on its JSON (`json_extract(event, '$.data.object.id')`) holds when the statement runs: the write that
 * marks it done follows in the same batch, so of concurrent batches only the first stages it (a cron's notices).
 * `ifAbsent`: an event whose id is already there is left as it is, and each statement answers the ids it did write
 * (events written again from another database: events/directory-outbox.ts).
 */
export function stageEvents(
  db: Db,
  events: DomainEvent[],
  { onlyIf, ifAbsent = false }: { onlyIf?: (event: SQL) => SQL; ifAbsent?: boolean } = {},
): Statement[] {
  const rows = events.map((event) =>
    JSON.stringify({
      ...event,
      actor: { type: event.actor.type, userId: event.actor.userId ?? null },
      due: nowIso(addSeconds(new Date(event.occurredAt), RESEND_GRACE_SECONDS)),
    }),
  );
  return chunkBySize(rows, STAGE_CHUNK_BYTES).map((chunk) => {
    // Columns in table order: id, organization_id, type, actor, occurred_at, data, sent_at, send_attempts,
    // next_attempt_at, last_error, dead_at.
    const insert = db.insert(outboxEvents).select(
      sql`SELECT json_extract(value, '$.id'), json_extract(value, '$.organizationId'), json_extract(value, '$.type'), json_extract(value, '$.actor'),
                 json_extract(value, '$.occurredAt'), json_extract(value, '$.data'), NULL, 0, json_extract(value, '$.due'), NULL, NULL
          FROM json_each(${`[${chunk.join(",")}]`}) AS staged WHERE ${onlyIf ? onlyIf(sql`staged.value`) : sql`true`}`,
    );
    return ifAbsent ? insert.onConflictDoNothing().returning({ id: outboxEvents.id }) : insert;
  });
}

/** The outbox insert of one event. */
export const stageEvent = (db: Db, event: DomainEvent): Statement => stageEvents(db, [event])[0]!;

/** Queues take at most 100 messages per sendBatch; id-only messages are far under its 256 KB. */
const MAX_BATCH_MESSAGES = 100;
/** Failed sends of one event before it is dead-lettered (kept, logged, no longer re-sent). */
export const MAX_SEND_ATTEMPTS = 10;

const sendIds = (queue: EventQueue, events: EventMessage[]) =>
  queue.sendBatch(events.map(({ id, organizationId }) => ({ body: { id, organizationId }, contentType: "json" as const })));

/** The wait after each failed send, by the row's `send_attempts` before it (index 0: the first failure), on `EVENT_SEND`. */
const SEND_DELAYS = JSON.stringify(Array.from({ length: MAX_SEND_ATTEMPTS }, (_, n) => EVENT_SEND.delaySeconds(n + 1)));

/**
 * A failed send of `ids`: each row is pushed back on `EVENT_SEND` (1 minute, doubling, at most an hour) or, at the
 * last attempt, dead-lettered with a log line an operator can act on. One statement for the whole list.
 */
async function recordFailedSends(db: Db, log: Logger, ids: string[], error: string): Promise<void> {
  const rows = await db.all<{ id: string; organization_id: string; type: string; send_attempts: number; dead_at: string | null }>(sql`
    UPDATE outbox_events SET
      send_attempts = send_attempts + 1,
      last_error = ${error.slice(0, 500)},
      dead_at = CASE WHEN send_attempts + 1 >= ${MAX_SEND_ATTEMPTS} THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END,
      next_attempt_at = CASE WHEN send_attempts + 1 >= ${MAX_SEND_ATTEMPTS} THEN NULL
        ELSE strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+' || json_extract(${SEND_DELAYS}, '$[' || min(send_attempts, ${MAX_SEND_ATTEMPTS - 1}) || ']') || ' seconds') END
    WHERE ${inJsonList(sql`id`, ids)} AND sent_at IS NULL
    RETURNING id, organization_id, type, send_attempts, dead_at`);
  for (const r of rows) {
    const fields = { eventId: r.id, organizationId: r.organization_id, type: r.type, attempts: r.send_attempts, error };
    if (r.dead_at) log.error("event dead-lettered: no more re-sends", fields);
    else log.warn("event send failed; cron will re-send", fields);
  }
}

/**
 * Sends committed events to the `events` queue and marks them sent. When a batch send fails, its events are sent one
 * by one, so one event the queue refuses holds back only itself; failures are backed off per event.
 */
export async function publishEvents(queue: EventQueue, db: Db, events: EventMessage[], log: Logger = createLogger()): Promise<void> {
  for (let i = 0; i < events.length; i += MAX_BATCH_MESSAGES) {
    const chunk = events.slice(i, i + MAX_BATCH_MESSAGES);
    const sent: string[] = [];
    const failed: { id: string; error: string }[] = [];
    try {
      await sendIds(queue, chunk);
      sent.push(...chunk.map((e) => e.id));
    } catch (err) {
      if (chunk.length === 1) failed.push({ id: chunk[0]!.id, error: loggableError(err) });
      else {
        for (const event of chunk) {
          try {
            await sendIds(queue, [event]);
            sent.push(event.id);
          } catch (one) {
            failed.push({ id: event.id, error: loggableError(one) });
          }
        }
      }
    }
    if (sent.length > 0) {
      await db
        .update(outboxEvents)
        .set({ sentAt: nowIso(), nextAttemptAt: null, sendAttempts: sql`${outboxEvents.sendAttempts} + 1` })
        .where(inJsonList(outboxEvents.id, sent));
    }
    for (const f of failed) await recordFailedSends(db, log, [f.id], f.error);
  }
}

/**
 * Sends freshly committed events and leaves the sent mark to the consumer, which sets it when it reads the rows
 * (events/consumers.ts): a write then costs no D1 round trip after its batch. Only failures are written here. Should
 * the queue hold a message past the re-send grace, the cron sends it again; consumers are idempotent on the event id.
 */
async function sendCommitted(queue: EventQueue, db: Db, events: EventMessage[], log: Logger): Promise<void> {
  for (let i = 0; i < events.length; i += MAX_BATCH_MESSAGES) {
    const chunk = events.slice(i, i + MAX_BATCH_MESSAGES);
    try {
      await sendIds(queue, chunk);
    } catch {
      // One by one, marking each as `publishEvents` does, so one refused event holds back only itself.
      await publishEvents(queue, db, chunk, log);
    }
  }
}

/**
 * After committing a batch that staged `events`: publish them without holding up the response. `markSent: false`
 * (the single-trip writes) sends without the D1 write that marks them sent; the consumer marks them instead.
 */
export function deferPublish(
  ctx: Pick<ServiceContext, "queues" | "db" | "defer" | "log">,
  events: DomainEvent[],
  { markSent = true } = {},
): void {
  if (events.length === 0) return;
  const refs = events.map(({ id, organizationId }) => ({ id, organizationId }));
  const queue = ctx.queues.events;
  const work = markSent ? publishEvents(queue, ctx.db, refs, ctx.log) : sendCommitted(queue, ctx.db, refs, ctx.log);
  ctx.defer(work.catch((err) => ctx.log.error("event publish failed; cron will re-send", { error: loggableError(err) })));
}

/** Rows one organization may take of one cron pass, so another's backlog or poison rows never hold it back. */
const PER_ORGANIZATION_PER_PASS = 100;
/** Due rows a pass looks at, earliest first (an index range), before sharing them out per organization. */
const SCAN_PER_PASS = 20_000;

/**
 * Cron pass, on one shard (`db`): events that are due and still unsent (the isolate died between commit and send, or a send failed) go
 * out, earliest due first and at most `PER_ORGANIZATION_PER_PASS` per organization. A row is due
 * `RESEND_GRACE_SECONDS` after it was written, so a publish still in flight is not raced, and after a failed send
 * when its backoff ends; dead rows are never due; "due" is judged at the pass's `now` (DESIGN.md contract 12). Duplicates are harmless: consumers are idempotent on the event id.
 */
export async function resendUnsentEvents(queue: EventQueue, db: Db, { now = new Date(), max = 500 } = {}): Promise<number> {
  const due = await db.all<{ id: string; organizationId: string }>(sql`
    SELECT id, organization_id AS organizationId FROM (
      SELECT id, organization_id, next_attempt_at, ROW_NUMBER() OVER (PARTITION BY organization_id ORDER BY next_attempt_at) AS n
      FROM (SELECT id, organization_id, next_attempt_at FROM outbox_events WHERE next_attempt_at <= ${nowIso(now)} ORDER BY next_attempt_at LIMIT ${SCAN_PER_PASS})
    ) WHERE n <= ${PER_ORGANIZATION_PER_PASS} ORDER BY next_attempt_at LIMIT ${max}`);
  await publishEvents(queue, db, due);
  return due.length;
}
