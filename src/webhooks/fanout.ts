import { and, eq, lt } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { webhookDeliveries, webhookSubscriptions } from "../db/schema";
import type { Env } from "../env";
import type { EventConsumer } from "../events/consumers";
import type { EventEnvelope } from "../events/envelope";
import { newId } from "../lib/ids";
import { inJsonList } from "../lib/sql";
import { nowIso } from "../lib/time";
import { isWebhookEvent } from "./events";
import { matchesFilters } from "./filters";
import { buildPayload, loadParties } from "./payload";

export interface DeliveryMessage {
  deliveryId: string;
}

/** Queue sendBatch takes at most 100 messages per call. */
export async function enqueueDeliveries(env: Env, deliveryIds: string[]): Promise<void> {
  for (let i = 0; i < deliveryIds.length; i += 100) {
    await env.WEBHOOK_DELIVERIES.sendBatch(deliveryIds.slice(i, i + 100).map((deliveryId) => ({ body: { deliveryId } satisfies DeliveryMessage, contentType: "json" as const })));
  }
}

/**
 * One delivery per enabled subscription of the event's organization that asked for the event and whose filters
 * hold. The (subscription, event) pair is unique, so a redelivered event adds no second delivery; whatever is still
 * pending is (re)sent, which covers a consumer that died between the insert and the send.
 */
export async function fanOutEvent(env: Env, db: Db, event: EventEnvelope): Promise<string[]> {
  const subscriptions = await db
    .select({ id: webhookSubscriptions.id, events: webhookSubscriptions.events, filters: webhookSubscriptions.filters })
    .from(webhookSubscriptions)
    .where(and(eq(webhookSubscriptions.organizationId, event.organizationId), eq(webhookSubscriptions.enabled, true)));
  const object = (event.data as { object?: unknown }).object;
  const matching = subscriptions.filter((s) => s.events.includes(event.type) && matchesFilters(s.filters, event.type, object));
  if (matching.length === 0) return [];

  const body = buildPayload(event, await loadParties(db, event.organizationId, event.actor.userId ?? null));
  const now = nowIso();
  const inserts = matching.map((s) =>
    db
      .insert(webhookDeliveries)
      .values({ id: newId(), organizationId: event.organizationId, subscriptionId: s.id, eventId: event.id, event: event.type, body, status: "pending", createdAt: now, updatedAt: now })
      .onConflictDoNothing(),
  );
  const pending = db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.eventId, event.id), eq(webhookDeliveries.organizationId, event.organizationId), eq(webhookDeliveries.status, "pending")));
  // The inserts and the read of what is pending go to D1 as one batch: one round trip, read after write.
  const statements: BatchItem<"sqlite">[] = [...inserts, pending];
  const results = await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  const ids = (results.at(-1) as { id: string }[]).map((r) => r.id);
  await enqueueDeliveries(env, ids);
  return ids;
}

/**
 * Cron pass: a delivery still `pending` long after it was written lost its queue message (the send failed after the
 * insert, or the isolate died between the two); it is queued again. A consumer attempt moves a delivery out of
 * `pending` within seconds, so ten minutes leaves no doubt; a duplicate message would only be a duplicate delivery,
 * which receivers handle by event id anyway.
 */
export async function resendStalledDeliveries(env: Env, db: Db, { stalledSeconds = 600, max = 500 } = {}): Promise<number> {
  const cutoff = new Date(Date.now() - stalledSeconds * 1000).toISOString();
  const stalled = await db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.status, "pending"), lt(webhookDeliveries.updatedAt, cutoff)))
    .limit(max);
  const ids = stalled.map((r) => r.id);
  if (ids.length === 0) return 0;
  // Touched first, so the next pass leaves them alone while this send is on its way.
  await db.update(webhookDeliveries).set({ updatedAt: nowIso() }).where(and(inJsonList(webhookDeliveries.id, ids), eq(webhookDeliveries.status, "pending")));
  await enqueueDeliveries(env, ids);
  return ids.length;
}

/** The events-queue consumer that turns domain events into webhook deliveries (issue 4, Fan-out). */
export const webhookFanout: EventConsumer = {
  name: "webhook-fanout",
  accepts: isWebhookEvent,
  handle: async (event, { env, db }) => void (await fanOutEvent(env, db, event)),
};
