import { and, asc, count, eq, gt, gte, inArray, or, sql } from "drizzle-orm";
import { webhookDeliveries } from "../db/schema";
import { Conflict } from "../lib/errors";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { enabledWebhook } from "./deliveries";
import { type DeliveryReach, ENDPOINT_DISABLED, TEST_EVENT } from "./catalogue";
import { inJsonList } from "../lib/sql";
import { enqueueDeliveries } from "./fanout";
import { RECOVER_BATCH } from "./limits";

/**
 * POST /v1/webhooks/{id}/recover (what Svix calls recover): every delivery of this endpoint since `since` that has
 * not succeeded — dead, failed, or still retrying on its first chain — is sent once more, on a new retry chain
 * (db/webhooks.ts `chain`): a message of its old chain is dropped when it comes, so no delivery sends twice at once.
 * What a recover has queued is in flight until that chain ends: a second recover leaves it alone (and answers 409
 * when there was nothing else to send); delivered ones are never sent again. One statement takes the deliveries, so
 * recovers racing each other share them out and each is queued once. Only deliveries of events the subscription
 * still carries are sent (one narrowed since keeps its older ones unsent), and the caller must reach every event it holds.
 */
export async function recoverWebhook(
  ctx: ServiceContext,
  id: string,
  since: string,
  reach: DeliveryReach,
): Promise<{ since: string; queued: number; hasMore: boolean }> {
  const sub = await enabledWebhook(ctx, id);
  reach(sub.events);
  const d = webhookDeliveries;
  // Only what the subscription still carries (catalogue.ts `carries`): the events the caller was just checked for.
  const window = and(
    eq(d.organizationId, ctx.organizationId),
    eq(d.subscriptionId, id),
    gte(d.createdAt, since),
    inJsonList(d.event, [...sub.events, TEST_EVENT, ENDPOINT_DISABLED]),
  );
  const unsent = or(inArray(d.status, ["failed", "dead"]), and(eq(d.status, "retrying"), eq(d.chain, 0)));
  const { db } = ctx;
  const oldestUnsent = db.select({ id: d.id }).from(d).where(and(window, unsent)).orderBy(asc(d.createdAt), asc(d.id)).limit(RECOVER_BATCH);
  const [taken, [left], [inFlight]] = await db.batch([
    db
      .update(d)
      .set({ status: "pending", chain: sql`${d.chain} + 1`, nextAttemptAt: null, updatedAt: nowIso() })
      .where(inArray(d.id, oldestUnsent))
      .returning({ deliveryId: d.id, organizationId: d.organizationId, chain: d.chain }),
    db.select({ n: count() }).from(d).where(and(window, unsent)),
    db
      .select({ n: count() })
      .from(d)
      .where(and(window, gt(d.chain, 0), inArray(d.status, ["pending", "retrying"]))),
  ]);
  if (taken.length === 0 && (inFlight?.n ?? 0) > 0) {
    throw new Conflict("A recovery of this window is still being sent; follow it in the delivery log", "recovery_in_flight");
  }
  // A send that fails leaves them pending: the cron's stalled-delivery pass queues them (fanout.ts), chain and all.
  await enqueueDeliveries(ctx.queues.webhookDeliveries, taken);
  return { since, queued: taken.length, hasMore: (left?.n ?? 0) > 0 };
}
