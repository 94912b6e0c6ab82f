import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { verifyWebhook } from "../../src/webhooks/verify";
import { call, json } from "../helpers/client";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { openMailbox, type Mailbox } from "../helpers/receiver";
import { subscribe } from "../helpers/webhooks";

/**
 * The whole path with nothing faked: the API subscribes a real HTTP receiver on 127.0.0.1, an event goes through the
 * outbox and the `events` queue to the fan-out consumer, then through `webhook-deliveries` to the Worker's own
 * delivery consumer, which POSTs to the receiver over the network.
 */

/** Creates a contact through the API; answers the contact.created event it wrote (the payload id receivers see). */
async function createContact(owner: TestPrincipal, contact: Record<string, unknown>) {
  const body = { firstName: "Test", lastName: "Contact", email: `${crypto.randomUUID()}@e2e.test`, ...contact };
  const res = await call("POST", "/v1/contacts", { token: owner.token, body });
  expect(res.status).toBe(201);
  const created = (await json(res)).data as { id: string };
  const event = await (await tenantDb(owner.organizationId))
    .prepare(
      "SELECT id FROM outbox_events WHERE organization_id = ? AND type = 'contact.created' AND json_extract(data, '$.object.id') = ?",
    )
    .bind(owner.organizationId, created.id)
    .first<{ id: string }>();
  return { id: event!.id, contact: created };
}

const deliveriesOf = async (owner: TestPrincipal, id: string) =>
  (await json(await call("GET", `/v1/webhooks/${id}/deliveries`, { token: owner.token }))).data as { status: string; eventId: string }[];

const waitForCount = (box: Mailbox, n: number) =>
  vi.waitFor(async () => expect(await box.count()).toBe(n), { timeout: 20_000, interval: 200 });

describe("webhooks end to end", { timeout: 30_000 }, () => {
  it("a subscribed receiver gets a contact.created delivery whose signature verifies", async () => {
    const owner = await createPrincipal();
    const box = await openMailbox();
    const sub = await subscribe(owner, { url: box.url, events: ["contact.created", "contact.updated"] });
    const event = await createContact(owner, { firstName: "Grace", lastName: "Hopper", email: "grace@example.test", leadScore: 42 });
    await waitForCount(box, 1);
    const [req] = await box.received();
    expect(await verifyWebhook(sub.secret, req!.headers, req!.body)).toMatchObject({ ok: true });
    const payload = JSON.parse(req!.body);
    expect(payload).toMatchObject({
      id: event.id,
      event: "contact.created",
      data: { object: { firstName: "Grace" } },
      user: { id: owner.userId },
    });
    await vi.waitFor(async () => expect((await deliveriesOf(owner, sub.id)).map((d) => d.status)).toEqual(["delivered"]));
  });

  it("a filtered subscription receives only matching events; an unfiltered one receives all", async () => {
    const owner = await createPrincipal();
    const hot = await openMailbox();
    const all = await openMailbox();
    const filtered = await subscribe(owner, {
      url: hot.url,
      filters: { "contact.leadScore": { gte: 80 }, "contact.source": { in: ["WEBSITE", "REFERRAL"] } },
    });
    await subscribe(owner, { url: all.url });
    const matching = await createContact(owner, { leadScore: 85, source: "WEBSITE" });
    await createContact(owner, { leadScore: 95, source: "COLD_CALL" });
    await createContact(owner, { leadScore: 20, source: "REFERRAL" });
    await waitForCount(all, 3);
    await waitForCount(hot, 1);
    expect(JSON.parse((await hot.received())[0]!.body).id).toBe(matching.id);
    // Every event has been fanned out by now (the other receiver got all three): the filter held back two.
    expect((await deliveriesOf(owner, filtered.id)).map((d) => d.eventId)).toEqual([matching.id]);
  });

  it("an event the queue delivers twice reaches the receiver under one event id, one delivery per subscription", async () => {
    const owner = await createPrincipal();
    const box = await openMailbox();
    const sub = await subscribe(owner, { url: box.url });
    const { id } = await createContact(owner, { leadScore: 1 });
    // The outbox cron re-sending the same event, say.
    const row = await (await tenantDb(owner.organizationId))
      .prepare("SELECT id, type, organization_id, actor, occurred_at, data FROM outbox_events WHERE id = ?")
      .bind(id)
      .first<{ id: string; type: string; organization_id: string; actor: string; occurred_at: string; data: string }>();
    const event = {
      id: row!.id,
      type: row!.type,
      organizationId: row!.organization_id,
      actor: JSON.parse(row!.actor),
      occurredAt: row!.occurred_at,
      data: JSON.parse(row!.data),
    };
    await env.EVENTS.send(event, { contentType: "json" });
    await waitForCount(box, 1);
    await new Promise((r) => setTimeout(r, 2500)); // room for a second delivery, which must not come
    const received = await box.received();
    expect(new Set(received.map((r) => JSON.parse(r.body).id))).toEqual(new Set([event.id]));
    expect(await deliveriesOf(owner, sub.id)).toHaveLength(1);
  });

  it("another organization's events never reach the subscription; events it did not ask for neither", async () => {
    const owner = await createPrincipal();
    const other = await createPrincipal();
    const box = await openMailbox();
    await subscribe(owner, { url: box.url, events: ["contact.deleted"] });
    await createContact(other, { leadScore: 99 });
    await createContact(owner, { leadScore: 99 });
    const { contact } = await createContact(owner, { leadScore: 10 });
    expect((await call("DELETE", `/v1/contacts/${contact.id}`, { token: owner.token })).status).toBe(200);
    await waitForCount(box, 1);
    const payload = JSON.parse((await box.received())[0]!.body);
    expect(payload).toMatchObject({
      event: "contact.deleted",
      data: { object: { id: contact.id } },
      organization: { id: owner.organizationId },
    });
  });

  it("the test route sends a signed webhook.test delivery to the receiver", async () => {
    const owner = await createPrincipal();
    const box = await openMailbox();
    const sub = await subscribe(owner, { url: box.url });
    const res = await call("POST", `/v1/webhooks/${sub.id}/test`, { token: owner.token });
    expect(res.status).toBe(202);
    expect((await json(res)).data).toMatchObject({ event: "webhook.test", status: "pending", attempts: [] });
    await waitForCount(box, 1);
    const [req] = await box.received();
    expect(req!.headers["x-service-event"]).toBe("webhook.test");
    expect(await verifyWebhook(sub.secret, req!.headers, req!.body)).toMatchObject({ ok: true });
  });

  it("replays a stored event to a subscription that was created after it", async () => {
    const owner = await createPrincipal();
    const event = await createContact(owner, { leadScore: 5 });
    // Let the fan-out finish first (no subscription yet, so no delivery): the replay is then the only one.
    const shard = await tenantDb(owner.organizationId);
    const fannedOut = () =>
      shard
        .prepare("SELECT processed_at FROM processed_events WHERE consumer = 'webhook-fanout' AND event_id = ?")
        .bind(event.id)
        .first("processed_at");
    await vi.waitFor(async () => expect(await fannedOut()).toBeTruthy(), { timeout: 10_000, interval: 100 });
    const box = await openMailbox();
    const sub = await subscribe(owner, { url: box.url });
    const res = await call("POST", `/v1/webhooks/${sub.id}/events/${event.id}/replay`, { token: owner.token });
    expect(res.status).toBe(202);
    await waitForCount(box, 1);
    expect(JSON.parse((await box.received())[0]!.body).id).toBe(event.id);
  });
});
