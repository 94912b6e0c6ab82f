import { and, eq, lt, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { organizations, users, webhookDeliveries, webhookSubscriptions } from "../db/schema";
import type { Env } from "../env";
import type { EventConsumer } from "../events/consumers";
import type { DomainEvent } from "../events/event";
import { newId } from "../lib/ids";
import type { DeliveryMessage } from "../lib/queue-messages";
import type { QueuePort } from "../service-context";
import { chunkBySize, inJsonList } from "../lib/sql";
import { nowIso } from "../lib/time";
import { ENDPOINT_DISABLED, inCatalogue } from "./catalogue";
import { matchesFilters } from "./filters";
import { buildPayload } from "./payload";

/** A delivery to attempt, with the organization whose shard holds it (lib/queue-messages.ts). */
export type { DeliveryMessage };

/** Queue sendBatch takes at most 100 messages per call. */
export async function enqueueDeliveries(queue: QueuePort<DeliveryMessage>, deliveries: DeliveryMessage[]): Promise<void> {
  for (let i = 0; i < deliveries.length; i += 100) {
    await queue.sendBatch(
      deliveries.slice(i, i + 100).map(({ deliveryId, organizationId, chain }) => ({
        body: chain ? { deliveryId, organizationId, chain } : { deliveryId, organizationId },
        contentType: "json" as const,
      })),
    );
  }
}

type Candidate = { id: string; organizationId: string; events: string[]; filters: Parameters<typeof matchesFilters>[0] };

/**
 * The subscriptions an event goes to: those that asked for it and whose filters hold; `webhook.endpoint_disabled`
 * goes to every other enabled endpoint of the organization, subscribed or not, and never to the one it is about.
 */
function recipientsOf(event: DomainEvent, subscriptions: Candidate[]): Candidate[] {
  const object = (event.data as { object?: unknown }).object;
  const mine = subscriptions.filter((s) => s.organizationId === event.organizationId);
  if (event.type === ENDPOINT_DISABLED) return mine.filter((s) => s.id !== (object as { id?: unknown } | null)?.id);
  return mine.filter((s) => s.events.includes(event.type) && matchesFilters(s.filters, event.type, object));
}

/** Delivery rows per insert statement are one JSON parameter; D1 takes values up to 2 MB, so stay well under. */
const INSERT_CHUNK_BYTES = 512 * 1024;

/**
 * One delivery per enabled subscription of each event's organization that asked for the event and whose filters
 * hold, for a whole queue batch of events in three D1 round trips: subscriptions and payload parties together, then
 * the inserts with the read of what is pending. The (subscription, event) pair is unique, so a redelivered event adds
 * no second delivery; whatever is still pending is (re)sent, which covers a consumer that died between the insert
 * and the send.
 */
export async function fanOutEvents(env: Env, db: Db, events: DomainEvent[]): Promise<string[]> {
  const candidates = events.filter((e) => inCatalogue(e.type));
  if (candidates.length === 0) return [];
  const orgIds = [...new Set(candidates.map((e) => e.organizationId))];
  const userIds = [...new Set(candidates.flatMap((e) => (e.actor.userId ? [e.actor.userId] : [])))];
  const [subscriptions, orgs, actors] = await db.batch([
    db
      .select({
        id: webhookSubscriptions.id,
        organizationId: webhookSubscriptions.organizationId,
        events: webhookSubscriptions.events,
        filters: webhookSubscriptions.filters,
      })
      .from(webhookSubscriptions)
      .where(and(inJsonList(webhookSubscriptions.organizationId, orgIds), eq(webhookSubscriptions.enabled, true))),
    db.select({ id: organizations.id, name: organizations.name }).from(organizations).where(inJsonList(organizations.id, orgIds)),
    db
      .select({ id: users.id, organizationId: users.organizationId, name: users.name, email: users.email })
      .from(users)
      .where(inJsonList(users.id, userIds)),
  ]);

  const now = nowIso();
  const rows: string[] = [];
  for (const event of candidates) {
    const matching = recipientsOf(event, subscriptions);
    if (matching.length === 0) continue;
    const actor = actors.find((u) => u.id === event.actor.userId && u.organizationId === event.organizationId);
    const body = buildPayload(event, {
      organization: orgs.find((o) => o.id === event.organizationId) ?? { id: event.organizationId, name: "" },
      user: actor ? { id: actor.id, name: actor.name, email: actor.email } : null,
    });
    for (const s of matching) rows.push(JSON.stringify([newId(), event.organizationId, s.id, event.id, event.type, body]));
  }
  if (rows.length === 0) return [];

  const statements: BatchItem<"sqlite">[] = chunkBySize(rows, INSERT_CHUNK_BYTES).map((chunk) =>
    // Columns in table order: id, organization_id, subscription_id, event_id, event, body, status, attempt_count,
    // last_status_code, last_error, next_attempt_at, delivered_at, created_at, updated_at, chain.
    db
      .insert(webhookDeliveries)
      .select(
        sql`SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]'),
                   'pending', 0, NULL, NULL, NULL, NULL, ${now}, ${now}, 0
            FROM json_each(${`[${chunk.join(",")}]`})
            -- A subscription deleted since it was read gets no delivery (none may outlive it).
            WHERE EXISTS (SELECT 1 FROM ${webhookSubscriptions} s WHERE s.id = json_extract(value, '$[2]'))`,
      )
      .onConflictDoNothing(),
  );
  // The inserts and the read of what is pending go to D1 as one batch: one round trip, read after write.
  statements.push(
    db
      .select({ deliveryId: webhookDeliveries.id, organizationId: webhookDeliveries.organizationId, chain: webhookDeliveries.chain })
      .from(webhookDeliveries)
      .where(
        and(
          inJsonList(
            webhookDeliveries.eventId,
            candidates.map((e) => e.id),
          ),
          eq(webhookDeliveries.status, "pending"),
        ),
      ),
  );
  const results = await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  const pending = results.at(-1) as DeliveryMessage[];
  await enqueueDeliveries(env.WEBHOOK_DELIVERIES, pending);
  return pending.map((d) => d.deliveryId);
}

/** One event's fan-out (tests and benchmarks). */
export const fanOutEvent = (env: Env, db: Db, event: DomainEvent): Promise<string[]> => fanOutEvents(env, db, [event]);

/**
 * Cron pass, on one shard (`db`): a delivery still `pending` long after it was written lost its queue message (the send failed after the
 * insert, or the isolate died between the two); it is queued again. A consumer attempt moves a delivery out of
 * `pending` within seconds, so ten minutes leaves no doubt; a duplicate message would only be a duplicate delivery,
 * which receivers handle by event id anyway.
 */
export async function resendStalledDeliveries(
  env: Env,
  db: Db,
  { now = new Date(), stalledSeconds = 600, max = 500 } = {},
): Promise<number> {
  const cutoff = new Date(now.getTime() - stalledSeconds * 1000).toISOString();
  const stalled = await db
    .select({ deliveryId: webhookDeliveries.id, organizationId: webhookDeliveries.organizationId, chain: webhookDeliveries.chain })
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.status, "pending"), lt(webhookDeliveries.updatedAt, cutoff)))
    .limit(max);
  if (stalled.length === 0) return 0;
  // Touched first (at the pass's time, which the next pass measures from), so it leaves them alone while this send is on its way.
  await db
    .update(webhookDeliveries)
    .set({ updatedAt: nowIso(now) })
    .where(
      and(
        inJsonList(
          webhookDeliveries.id,
          stalled.map((r) => r.deliveryId),
        ),
        eq(webhookDeliveries.status, "pending"),
      ),
    );
  await enqueueDeliveries(env.WEBHOOK_DELIVERIES, stalled);
  return stalled.length;
}

/** The events-queue consumer that turns domain events into webhook deliveries (docs/decisions/0004-webhook-delivery.md). */
export const webhookFanout: EventConsumer = {
  name: "webhook-fanout",
  accepts: inCatalogue,
  handle: async (events, { env, db }) => void (await fanOutEvents(env, db, events)),
};
