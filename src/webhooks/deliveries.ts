import { and, count, desc, eq, inArray, sql } from "drizzle-orm";
import { inJsonList } from "../lib/sql";
import { outboxEvents, webhookDeliveries, webhookSubscriptions } from "../db/schema";
import { expectRow, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { Conflict, NotFound } from "../lib/errors";
import { newId } from "../lib/ids";
import { decodeNewestFirstCursor as decodeCursor, olderThan, paginate } from "../crm/pagination";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { carries, type DeliveryReach, TEST_EVENT } from "./catalogue";
import { enqueueDeliveries } from "./fanout";
import { buildPayload, loadParties } from "./payload";
import type { Delivery } from "./schemas";
import { findWebhook, toWebhook } from "./service";

type DeliveryRow = typeof webhookDeliveries.$inferSelect;
type Status = Delivery["status"];

/** Attempts embedded per delivery: the newest; `attemptCount` has how many there were (replays add more). */
export const EMBEDDED_ATTEMPTS = 25;

interface AttemptRow {
  delivery_id: string;
  attempt: number;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  next_attempt_at: string | null;
  attempted_at: string;
}

async function withAttempts(ctx: ServiceContext, rows: DeliveryRow[]): Promise<Delivery[]> {
  if (rows.length === 0) return [];
  const attempts = await ctx.db.all<AttemptRow>(sql`
    SELECT delivery_id, attempt, status_code, duration_ms, error, next_attempt_at, attempted_at FROM (
      SELECT a.*, ROW_NUMBER() OVER (PARTITION BY a.delivery_id ORDER BY a.attempt DESC) AS n
      FROM webhook_delivery_attempts a
      WHERE a.organization_id = ${ctx.organizationId} AND ${inJsonList(
        sql`a.delivery_id`,
        rows.map((r) => r.id),
      )}
    ) WHERE n <= ${EMBEDDED_ATTEMPTS} ORDER BY attempt`);
  return rows.map(({ organizationId: _, body: __, chain: ___, ...d }) => ({
    ...d,
    attempts: attempts
      .filter((a) => a.delivery_id === d.id)
      .map((a) => ({
        attempt: a.attempt,
        statusCode: a.status_code,
        durationMs: a.duration_ms,
        error: a.error,
        nextAttemptAt: a.next_attempt_at,
        attemptedAt: a.attempted_at,
      })),
  }));
}

/** GET /v1/webhooks/{id}/deliveries: the delivery log, newest first, each delivery with every attempt. */
export async function listDeliveries(ctx: ServiceContext, subscriptionId: string, q: { limit: number; cursor?: string; status?: Status }) {
  await findWebhook(ctx, subscriptionId);
  const after = decodeCursor(q.cursor);
  const scope = and(
    eq(webhookDeliveries.organizationId, ctx.organizationId),
    eq(webhookDeliveries.subscriptionId, subscriptionId),
    q.status ? eq(webhookDeliveries.status, q.status) : undefined,
  );
  const page = after ? and(scope, olderThan(webhookDeliveries.createdAt, webhookDeliveries.id, after)) : scope;
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(webhookDeliveries)
      .where(page)
      .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
      .limit(q.limit + 1),
    ctx.db.select({ n: count() }).from(webhookDeliveries).where(scope),
  ]);
  const { page: items, pagination } = paginate(rows, q.limit, total?.n ?? 0, (r) => ({ at: r.createdAt, id: r.id }));
  return { data: await withAttempts(ctx, items), pagination };
}

/**
 * Null when the (subscription, event) pair already has a delivery: it was made since the caller looked. Guarded on the
 * subscription still existing, so a delivery never outlives a subscription deleted meanwhile (`StaleWrite`: the
 * caller's retry then answers 404).
 */
async function insertAndSend(ctx: ServiceContext, row: DeliveryRow): Promise<Delivery | null> {
  const [, inserted] = (await commit(ctx, [
    expectRow(
      ctx.db,
      webhookSubscriptions,
      and(eq(webhookSubscriptions.organizationId, ctx.organizationId), eq(webhookSubscriptions.id, row.subscriptionId)),
    ),
    ctx.db.insert(webhookDeliveries).values(row).onConflictDoNothing().returning({ id: webhookDeliveries.id }),
  ])) as [unknown, { id: string }[]];
  if (inserted.length === 0) return null;
  await enqueueDeliveries(ctx.queues.webhookDeliveries, [{ deliveryId: row.id, organizationId: ctx.organizationId }]);
  return (await withAttempts(ctx, [row]))[0]!;
}

const newDelivery = (ctx: ServiceContext, subscriptionId: string, eventId: string, event: string, body: string): DeliveryRow => {
  const now = nowIso();
  return {
    id: newId(),
    organizationId: ctx.organizationId,
    subscriptionId,
    eventId,
    event,
    body,
    status: "pending",
    attemptCount: 0,
    lastStatusCode: null,
    lastError: null,
    nextAttemptAt: null,
    deliveredAt: null,
    createdAt: now,
    updatedAt: now,
    chain: 0,
  };
};

/** The subscription, which must be on: a send to a disabled one is refused (409 webhook_disabled). */
export async function enabledWebhook(ctx: ServiceContext, id: string) {
  const sub = await findWebhook(ctx, id);
  if (!sub.enabled) throw new Conflict("The webhook is disabled; enable it first", "webhook_disabled");
  return sub;
}

/** POST /v1/webhooks/{id}/test: a `webhook.test` event through the real path (queue, signature, retries, log). */
export async function sendTestEvent(ctx: ServiceContext, id: string): Promise<Delivery> {
  return withRetries(async () => {
    const sub = await enabledWebhook(ctx, id);
    const event = {
      id: newId(),
      type: TEST_EVENT,
      occurredAt: nowIso(),
      data: { object: { webhook: toWebhook(sub), message: "This is a test delivery." } },
    };
    const body = buildPayload(event, await loadParties(ctx.db, ctx.organizationId, ctx.actor.userId ?? null));
    return (await insertAndSend(ctx, newDelivery(ctx, id, event.id, TEST_EVENT, body)))!; // a new event id: no conflict
  });
}

/** States a delivery can be replayed from: its retry chain has ended. Replaying one still in flight would start a second chain. */
const SETTLED: Status[] = ["delivered", "failed", "dead"];
const inFlight = () =>
  new Conflict("This delivery is still being attempted; replay it once it is delivered, failed or dead", "delivery_in_flight");

/** Sends a stored delivery again: same body and event id, a fresh signature, and a fresh retry schedule. */
async function requeue(ctx: ServiceContext, row: DeliveryRow): Promise<Delivery> {
  if (!SETTLED.includes(row.status as Status)) throw inFlight();
  const updatedAt = nowIso();
  // Conditional on the settled state, so two replays racing each other start one chain, not two.
  const moved = await ctx.db
    .update(webhookDeliveries)
    .set({ status: "pending", nextAttemptAt: null, updatedAt })
    .where(
      and(
        eq(webhookDeliveries.organizationId, ctx.organizationId),
        eq(webhookDeliveries.id, row.id),
        inArray(webhookDeliveries.status, SETTLED),
      ),
    )
    .returning({ id: webhookDeliveries.id });
  if (moved.length === 0) throw inFlight();
  await enqueueDeliveries(ctx.queues.webhookDeliveries, [{ deliveryId: row.id, organizationId: ctx.organizationId, chain: row.chain }]);
  return (await withAttempts(ctx, [{ ...row, status: "pending", nextAttemptAt: null, updatedAt }]))[0]!;
}

/**
 * POST /v1/webhooks/{id}/deliveries/{deliveryId}/replay: any delivery, dead ones included. Its event's object goes to
 * the subscription's URL again: the caller must reach that event and every event the subscription holds.
 */
export async function replayDelivery(ctx: ServiceContext, id: string, deliveryId: string, reach: DeliveryReach): Promise<Delivery> {
  const sub = await enabledWebhook(ctx, id);
  reach(sub.events);
  const row = await ctx.db
    .select()
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.organizationId, ctx.organizationId),
        eq(webhookDeliveries.subscriptionId, id),
        eq(webhookDeliveries.id, deliveryId),
      ),
    )
    .get();
  if (!row) throw new NotFound("Delivery");
  reach([row.event]);
  if (!carries(sub.events, row.event)) throw notSubscribed(row.event);
  return requeue(ctx, row);
}

const notSubscribed = (event: string) => new Conflict(`The webhook does not subscribe to ${event}`, "event_not_subscribed");

/**
 * POST /v1/webhooks/{id}/events/{eventId}/replay: the event's delivery to this webhook again, or, when it never had
 * one (it predates the subscription, or a filter held it back), a first one built from the stored event.
 * Filters are not applied: replay is an explicit request. The webhook must subscribe to the event's name, and the
 * caller reach it and every other event the subscription holds.
 */
export async function replayEvent(ctx: ServiceContext, id: string, eventId: string, reach: DeliveryReach): Promise<Delivery> {
  return withRetries(() => replayEventOnce(ctx, id, eventId, reach));
}

async function replayEventOnce(ctx: ServiceContext, id: string, eventId: string, reach: DeliveryReach): Promise<Delivery> {
  const sub = await enabledWebhook(ctx, id);
  reach(sub.events);
  const existingDelivery = () =>
    ctx.db
      .select()
      .from(webhookDeliveries)
      .where(
        and(
          eq(webhookDeliveries.organizationId, ctx.organizationId),
          eq(webhookDeliveries.subscriptionId, id),
          eq(webhookDeliveries.eventId, eventId),
        ),
      )
      .get();
  const existing = await existingDelivery();
  if (existing) {
    reach([existing.event]);
    if (!carries(sub.events, existing.event)) throw notSubscribed(existing.event);
    return requeue(ctx, existing);
  }
  const event = await ctx.db
    .select()
    .from(outboxEvents)
    .where(and(eq(outboxEvents.organizationId, ctx.organizationId), eq(outboxEvents.id, eventId)))
    .get();
  if (!event) throw new NotFound("Event");
  if (!sub.events.includes(event.type)) throw notSubscribed(event.type);
  const body = buildPayload(event, await loadParties(ctx.db, ctx.organizationId, event.actor.userId));
  // The fan-out (or a second replay) may have made this delivery since the read above: then replay that one.
  return (await insertAndSend(ctx, newDelivery(ctx, id, event.id, event.type, body))) ?? requeue(ctx, (await existingDelivery())!);
}
