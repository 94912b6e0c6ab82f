import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { createDb } from "../../src/db/client";
import worker from "../../src/index";
import { createDeliveryConsumer } from "../../src/webhooks/delivery";
import type { DeliveryMessage } from "../../src/webhooks/fanout";
import { fanOutEvents } from "../../src/webhooks/fanout";
import { fetchTransport } from "../../src/webhooks/transport";
import { call, json } from "../helpers/client";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { type Mailbox, openMailbox } from "../helpers/receiver";
import { capturingEnv, contactEvent, subscribe } from "../helpers/webhooks";

/**
 * POST /v1/webhooks/{id}/recover (issue 32): every event the endpoint failed since a moment is sent once more, on a
 * new retry chain; delivered ones are not, an older chain's messages are dropped, a second recover sends nothing twice.
 */
const consumer = createDeliveryConsumer({ resolver: { resolve: async () => [] }, transport: fetchTransport() });

/** `n` contact.created deliveries to `owner`'s one subscription, fanned out without queueing, in event order. */
async function deliveriesFor(owner: TestPrincipal, n: number) {
  const { env: capture, sent } = capturingEnv();
  const events = Array.from({ length: n }, (_, i) =>
    contactEvent(owner, "contact.created", { id: crypto.randomUUID(), firstName: `N${i}` }),
  );
  await fanOutEvents(capture, createDb(await tenantDb(owner.organizationId)), events);
  const db = await tenantDb(owner.organizationId);
  const eventOf = new Map<string, string>();
  for (const m of sent)
    eventOf.set(
      m.deliveryId,
      (await db.prepare("SELECT event_id FROM webhook_deliveries WHERE id = ?").bind(m.deliveryId).first<{ event_id: string }>())!.event_id,
    );
  return events.map((e) => ({ eventId: e.id, message: sent.find((m) => eventOf.get(m.deliveryId) === e.id)! }));
}

async function attempt(body: DeliveryMessage, attempts: number) {
  const batch = createMessageBatch("webhook-deliveries", [{ id: `m-${crypto.randomUUID()}`, timestamp: new Date(), attempts, body }]);
  await consumer(batch, env);
  return getQueueResult(batch, createExecutionContext());
}

async function deadLetter(body: DeliveryMessage) {
  await worker.queue(
    createMessageBatch("webhook-deliveries-dlq", [{ id: `d-${crypto.randomUUID()}`, timestamp: new Date(), attempts: 1, body }]),
    env,
  );
}

const recover = async (owner: TestPrincipal, id: string, body: unknown) => {
  const res = await call("POST", `/v1/webhooks/${id}/recover`, { token: owner.token, body });
  return { status: res.status, body: await json(res) };
};

const statusOf = async (owner: TestPrincipal, deliveryId: string) =>
  (await (
    await tenantDb(owner.organizationId)
  )
    .prepare("SELECT status FROM webhook_deliveries WHERE id = ?")
    .bind(deliveryId)
    .first<{ status: string }>())!.status;

/** The event ids `box` received, with how often each came. */
async function receivedTimes(box: Mailbox): Promise<Record<string, number>> {
  const times: Record<string, number> = {};
  for (const r of await box.received()) times[r.headers["webhook-id"]!] = (times[r.headers["webhook-id"]!] ?? 0) + 1;
  return times;
}

async function settle(box: Mailbox, n: number) {
  await vi.waitFor(async () => expect(await box.count()).toBeGreaterThanOrEqual(n), { timeout: 20_000, interval: 100 });
  await new Promise((r) => setTimeout(r, 1500));
  expect(await box.count()).toBe(n);
}

describe("recover", { timeout: 60_000 }, () => {
  it("re-sends once exactly the events that failed since then: retrying and dead ones, not delivered or older ones", async () => {
    const owner = await createPrincipal();
    const box = await openMailbox({ script: [500, 500, 500, 500], fallback: 200 });
    const sub = await subscribe(owner, { url: box.url });
    const [older, retrying, dead, alsoRetrying, delivered] = await deliveriesFor(owner, 5);
    for (const d of [older, retrying, dead, alsoRetrying, delivered]) await attempt(d!.message, 1);
    await deadLetter(dead!.message);
    await deadLetter(older!.message);
    const db = await tenantDb(owner.organizationId);
    await db
      .prepare("UPDATE webhook_deliveries SET created_at = ? WHERE id = ?")
      .bind(new Date(Date.now() - 2 * 86_400_000).toISOString(), older!.message.deliveryId)
      .run();
    expect([
      await statusOf(owner, retrying!.message.deliveryId),
      await statusOf(owner, dead!.message.deliveryId),
      await statusOf(owner, delivered!.message.deliveryId),
    ]).toEqual(["retrying", "dead", "delivered"]);

    const since = new Date(Date.now() - 3_600_000).toISOString();
    const first = await recover(owner, sub.id, { since });
    expect(first).toMatchObject({ status: 202, body: { data: { since, queued: 3, hasMore: false } } });
    await settle(box, 5 + 3);
    expect(await receivedTimes(box)).toEqual({
      [older!.eventId]: 1,
      [retrying!.eventId]: 2,
      [dead!.eventId]: 2,
      [alsoRetrying!.eventId]: 2,
      [delivered!.eventId]: 1,
    });
    for (const d of [retrying, dead, alsoRetrying]) expect(await statusOf(owner, d!.message.deliveryId)).toBe("delivered");
    expect(await statusOf(owner, older!.message.deliveryId)).toBe("dead");

    // The queue's own retry of the old chain comes later: dropped, not sent.
    expect((await attempt(retrying!.message, 2)).explicitAcks).toHaveLength(1);
    expect(await box.count()).toBe(8);
    // Nothing left to recover in the window: nothing is sent again.
    expect(await recover(owner, sub.id, { since })).toMatchObject({ status: 202, body: { data: { queued: 0 } } });
    await settle(box, 8);
  });

  it("a second recover while the first is still sending sends nothing twice; the old chain's dead letter leaves the new chain alone", async () => {
    const owner = await createPrincipal();
    const box = await openMailbox({ fallback: 500 });
    const sub = await subscribe(owner, { url: box.url });
    const made = await deliveriesFor(owner, 3);
    for (const d of made) await attempt(d.message, 1);
    const since = new Date(Date.now() - 60_000).toISOString();
    const answers = await Promise.all(Array.from({ length: 5 }, () => recover(owner, sub.id, { since })));
    expect(answers.map((a) => a.status).sort()).toEqual([202, 409, 409, 409, 409]);
    expect(answers.find((a) => a.status === 202)!.body.data.queued).toBe(3);
    expect(answers.find((a) => a.status === 409)!.body.error).toMatchObject({ code: "recovery_in_flight" });
    await settle(box, 3 + 3);
    expect(Object.values(await receivedTimes(box))).toEqual([2, 2, 2]);
    // Later still (the recovered ones retrying on their new chain): the same.
    expect((await recover(owner, sub.id, { since })).status).toBe(409);
    // The old chain ends in the dead-letter queue: the delivery stays with its new chain.
    await deadLetter(made[0]!.message);
    expect(await statusOf(owner, made[0]!.message.deliveryId)).toBe("retrying");
  });

  it("refuses a since in the future or beyond the 30 days kept, a disabled webhook, and another organization's webhook", async () => {
    const owner = await createPrincipal();
    const sub = await subscribe(owner, { url: (await openMailbox()).url });
    for (const since of [
      new Date(Date.now() + 3_600_000).toISOString(),
      new Date(Date.now() - 31 * 86_400_000).toISOString(),
      "yesterday",
    ]) {
      const res = await recover(owner, sub.id, { since });
      expect(res.status, since).toBe(422);
      expect(res.body.error.errors[0].field).toBe("since");
    }
    expect((await recover(owner, sub.id, {})).status).toBe(422);
    expect((await recover(owner, sub.id, { since: new Date(Date.now() - 29 * 86_400_000).toISOString() })).status).toBe(202);
    expect((await recover(await createPrincipal(), sub.id, { since: new Date().toISOString() })).status).toBe(404);
    await call("PATCH", `/v1/webhooks/${sub.id}`, { token: owner.token, body: { enabled: false } });
    const off = await recover(owner, sub.id, { since: new Date(Date.now() - 60_000).toISOString() });
    expect(off.status).toBe(409);
    expect(off.body.error.code).toBe("webhook_disabled");
  });
});
