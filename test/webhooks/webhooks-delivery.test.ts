import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  getQueueResult,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { createDb } from "../../src/db/client";
import worker from "../../src/index";
import { MAX_DELIVERY_RETRIES } from "../../src/webhooks/backoff";
import { WEBHOOK_DELIVERY } from "../../src/lib/retry";
import { createDeliveryConsumer, USER_AGENT } from "../../src/webhooks/delivery";
import { fanOutEvent } from "../../src/webhooks/fanout";
import { fetchTransport, type WebhookTransport } from "../../src/webhooks/transport";
import { verifyWebhook } from "../../src/webhooks/verify";
import { createApiKey } from "../helpers/api-keys";
import { call, json } from "../helpers/client";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { droppedFetch } from "../helpers/outbound";
import { openMailbox } from "../helpers/receiver";
import { capturingEnv, contactEvent, subscribe } from "../helpers/webhooks";

const noDns = { resolve: async () => [] };
const consumer = createDeliveryConsumer({ resolver: noDns, transport: fetchTransport() });

/** Fans a contact.created event out without queueing, so each attempt below is driven by hand. */
async function deliveryFor(owner: TestPrincipal, url: string) {
  const sub = await subscribe(owner, { url });
  const { env: capture, sent } = capturingEnv();
  const event = contactEvent(owner, "contact.created", { id: crypto.randomUUID(), firstName: "Ada", leadScore: 90 });
  await fanOutEvent(capture, createDb(await tenantDb(owner.organizationId)), event);
  expect(sent).toHaveLength(1);
  return { sub, event, message: sent[0]! };
}

/** One queue delivery of `body` as attempt `attempts`: what the consumer did with it, and the delay it asked for. */
async function attempt(body: unknown, attempts: number, run = consumer) {
  const batch = createMessageBatch("webhook-deliveries", [{ id: `msg-${attempts}`, timestamp: new Date(), attempts, body }]);
  // The harness records retries but not their delay, so watch the call itself.
  const retry = vi.spyOn(batch.messages[0]!, "retry");
  await run(batch, env);
  const result = await getQueueResult(batch, createExecutionContext());
  return {
    acked: result.explicitAcks.length === 1,
    retried: result.retryMessages.length === 1,
    delay: retry.mock.calls[0]?.[0]?.delaySeconds,
  };
}

async function log(owner: TestPrincipal, subId: string) {
  return (await json(await call("GET", `/v1/webhooks/${subId}/deliveries`, { token: owner.token }))).data;
}

describe("webhook delivery", () => {
  it("POSTs the spec's headers with a signature that verifies, and the spec's payload", async () => {
    const owner = await createPrincipal();
    const box = await openMailbox();
    const { sub, event, message } = await deliveryFor(owner, box.url);
    expect(await attempt(message, 1)).toMatchObject({ acked: true, retried: false });
    const [req] = await box.received();
    expect(req!.method).toBe("POST");
    expect(req!.headers).toMatchObject({
      "content-type": "application/json",
      "user-agent": USER_AGENT,
      "x-service-event": "contact.created",
      "x-service-delivery": message.deliveryId,
      "x-service-timestamp": expect.stringMatching(/^\d{10}$/),
      "x-service-signature": expect.stringMatching(/^sha256=[0-9a-f]{64}$/),
    });
    expect(await verifyWebhook(sub.secret, req!.headers, req!.body)).toMatchObject({ ok: true });
    expect(await verifyWebhook("whsec_wrong-secret-value", req!.headers, req!.body)).toEqual({ ok: false, reason: "signature_mismatch" });
    expect(JSON.parse(req!.body)).toEqual({
      id: event.id,
      event: "contact.created",
      apiVersion: expect.stringMatching(/^\d{4}-\d{2}$/),
      createdAt: event.occurredAt,
      data: { object: event.data.object, previousAttributes: null, changes: null },
      organization: { id: owner.organizationId, name: `Org ${owner.organizationId}` },
      user: { id: owner.userId, name: "Test Agent", email: `${owner.userId}@example.test` },
    });
    const [delivery] = await log(owner, sub.id);
    expect(delivery).toMatchObject({
      status: "delivered",
      attemptCount: 1,
      lastStatusCode: 200,
      attempts: [{ attempt: 1, statusCode: 200, error: null, nextAttemptAt: null }],
    });
  });

  it("retries 500, 500 with growing backoff, then 200: three attempts, fresh signatures, one event id, delivered", async () => {
    const owner = await createPrincipal();
    const box = await openMailbox({ script: [500, 500] });
    const { sub, event, message } = await deliveryFor(owner, box.url);
    const first = await attempt(message, 1);
    const second = await attempt(message, 2);
    const third = await attempt(message, 3);
    expect([first.retried, second.retried, third.acked]).toEqual([true, true, true]);
    expect(first.delay).toBeGreaterThanOrEqual(48);
    expect(first.delay).toBeLessThanOrEqual(72);
    expect(second.delay).toBeGreaterThanOrEqual(72);
    expect(second.delay).toBeLessThanOrEqual(108);

    const received = await box.received();
    expect(received).toHaveLength(3);
    expect(new Set(received.map((r) => JSON.parse(r.body).id))).toEqual(new Set([event.id]));
    for (const r of received) expect(await verifyWebhook(sub.secret, r.headers, r.body)).toMatchObject({ ok: true });

    const [delivery] = await log(owner, sub.id);
    expect(delivery.status).toBe("delivered");
    expect(delivery.attempts.map((a: { statusCode: number }) => a.statusCode)).toEqual([500, 500, 200]);
    expect(delivery.attempts[0].error).toBe("receiver answered 500");
    expect(delivery.attempts[0].nextAttemptAt).not.toBeNull();
    expect(delivery.attempts.every((a: { durationMs: number }) => a.durationMs >= 0)).toBe(true);
  });

  it("after the last retry the queue dead-letters it; the DLQ consumer marks it dead; replay delivers it", async () => {
    const owner = await createPrincipal();
    const attempts = MAX_DELIVERY_RETRIES + 1;
    const box = await openMailbox({ script: Array(attempts).fill(500), fallback: 200 });
    const { sub, event, message } = await deliveryFor(owner, box.url);
    const delays: number[] = [];
    for (let n = 1; n <= attempts; n++) {
      const r = await attempt(message, n);
      expect(r.retried).toBe(true); // the final retry is what sends it to the dead-letter queue (max_retries)
      delays.push(r.delay!);
    }
    expect(delays.slice(0, -1).every((d, i) => d >= WEBHOOK_DELIVERY.baseSeconds(i + 1) * 0.8 - 1 && d <= 43_200)).toBe(true);
    const total = delays.slice(0, -1).reduce((a, b) => a + b, 0);
    expect(total / 86_400).toBeGreaterThan(2.2);
    expect(total / 86_400).toBeLessThan(3.5);

    const dlq = createMessageBatch("webhook-deliveries-dlq", [{ id: "dead-1", timestamp: new Date(), attempts: 1, body: message }]);
    await worker.queue(dlq, env);
    expect((await getQueueResult(dlq, createExecutionContext())).explicitAcks).toEqual(["dead-1"]);
    const [dead] = await log(owner, sub.id);
    expect(dead).toMatchObject({ status: "dead", attemptCount: attempts, nextAttemptAt: null });
    expect(dead.attempts.at(-1).nextAttemptAt).toBeNull();

    const replay = await call("POST", `/v1/webhooks/${sub.id}/deliveries/${dead.id}/replay`, { token: owner.token });
    expect(replay.status).toBe(202);
    expect((await json(replay)).data).toMatchObject({ id: dead.id, status: "pending", eventId: event.id });
    // The replay goes through the real queue to the Worker's own consumer, and the receiver now answers 200.
    await vi.waitFor(async () => expect((await log(owner, sub.id))[0].status).toBe("delivered"), { timeout: 15_000, interval: 200 });
    const received = await box.received();
    expect(received).toHaveLength(attempts + 1);
    expect(new Set(received.map((r) => JSON.parse(r.body).id))).toEqual(new Set([event.id]));
  });

  it("a 410 turns the subscription off and stops retrying", async () => {
    const owner = await createPrincipal();
    const box = await openMailbox({ fallback: 410 });
    const { sub, message } = await deliveryFor(owner, box.url);
    expect(await attempt(message, 1)).toMatchObject({ acked: true, retried: false });
    const read = await json(await call("GET", `/v1/webhooks/${sub.id}`, { token: owner.token }));
    expect(read.data).toMatchObject({ enabled: false, disabledReason: expect.stringContaining("410") });
    expect((await log(owner, sub.id))[0]).toMatchObject({ status: "failed", lastStatusCode: 410 });
    // Turned off, it gets no more fan-out.
    const { env: capture, sent } = capturingEnv();
    await fanOutEvent(capture, createDb(await tenantDb(owner.organizationId)), contactEvent(owner, "contact.created", { id: "c2" }));
    expect(sent).toEqual([]);
  });

  it("does not follow redirects: a 302 is a failed attempt, retried", async () => {
    const owner = await createPrincipal();
    const target = await openMailbox();
    const box = await openMailbox({ fallback: 302, location: target.url });
    const { message } = await deliveryFor(owner, box.url);
    expect(await attempt(message, 1)).toMatchObject({ retried: true });
    expect(await box.count()).toBe(1);
    expect(await target.count()).toBe(0);
  });

  it("logs a timeout or network error as a failed attempt without a status, and never logs the secret", async () => {
    const owner = await createPrincipal();
    const { sub, message } = await deliveryFor(owner, "http://127.0.0.1:9/never");
    const slow: WebhookTransport = { send: () => Promise.reject(new DOMException("The operation timed out.", "TimeoutError")) };
    const spy = vi.spyOn(console, "error");
    expect(await attempt(message, 1, createDeliveryConsumer({ resolver: noDns, transport: slow }))).toMatchObject({ retried: true });
    // The real transport over a fetch that fails as workerd's does when the connection drops.
    expect(
      await attempt(message, 2, createDeliveryConsumer({ resolver: noDns, transport: fetchTransport(droppedFetch, 2000) })),
    ).toMatchObject({ retried: true });
    const attempts = (await log(owner, sub.id))[0].attempts;
    expect(attempts.map((a: { statusCode: null; error: string }) => [a.statusCode, a.error.split(":")[0]])).toEqual([
      [null, "no answer within 30 s"],
      [null, "network error"],
    ]);
    expect(JSON.stringify(spy.mock.calls)).not.toContain(sub.secret);
    expect(JSON.stringify(await log(owner, sub.id))).not.toContain(sub.secret);
  });

  it("re-checks the URL before sending: an address that became private is refused, not fetched", async () => {
    const owner = await createPrincipal();
    const transport: WebhookTransport = { send: vi.fn(async () => ({ status: 200 })) };
    const { sub, message } = await deliveryFor(owner, "http://127.0.0.1:9/hook");
    await (await tenantDb(owner.organizationId))
      .prepare("UPDATE webhook_subscriptions SET url = ? WHERE id = ?")
      .bind("https://rebound.example.test/hook", sub.id)
      .run();
    const rebound = createDeliveryConsumer({ resolver: { resolve: async () => ["10.0.0.7"] }, transport });
    expect(await attempt(message, 1, rebound)).toMatchObject({ retried: true });
    expect(transport.send).not.toHaveBeenCalled();
    expect((await log(owner, sub.id))[0].lastError).toMatch(/^refused before sending/);
  });

  it("refuses to replay a delivery still being attempted (409), so two retry chains never run at once", async () => {
    const owner = await createPrincipal();
    const box = await openMailbox({ script: [500], fallback: 200 });
    const { sub, message } = await deliveryFor(owner, box.url);
    expect((await attempt(message, 1)).retried).toBe(true);
    const [retrying] = await log(owner, sub.id);
    expect(retrying.status).toBe("retrying");
    const res = await call("POST", `/v1/webhooks/${sub.id}/deliveries/${retrying.id}/replay`, { token: owner.token });
    expect(res.status).toBe(409);
    expect((await json(res)).error).toMatchObject({ type: "conflict_error", detail: expect.stringContaining("still being attempted") });
    expect((await attempt(message, 2)).acked).toBe(true);
    expect((await call("POST", `/v1/webhooks/${sub.id}/deliveries/${retrying.id}/replay`, { token: owner.token })).status).toBe(202);
  });

  it("lists a full page of 100 deliveries with their attempts", async () => {
    const owner = await createPrincipal();
    const sub = await subscribe(owner, { url: (await openMailbox()).url });
    const now = Date.now();
    const rows = Array.from({ length: 101 }, (_, i) => [crypto.randomUUID(), new Date(now - i * 1000).toISOString()] as const);
    const db = await tenantDb(owner.organizationId);
    await db.batch(
      rows.map(([id, at]) =>
        db
          .prepare(
            "INSERT INTO webhook_deliveries (id, organization_id, subscription_id, event_id, event, body, status, attempt_count, created_at, updated_at) VALUES (?, ?, ?, ?, 'contact.created', '{}', 'delivered', 1, ?, ?)",
          )
          .bind(id, owner.organizationId, sub.id, crypto.randomUUID(), at, at),
      ),
    );
    const res = await call("GET", `/v1/webhooks/${sub.id}/deliveries?limit=100`, { token: owner.token });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.data).toHaveLength(100);
    expect(body.pagination).toMatchObject({ hasMore: true, total: 101 });
  });

  it("embeds the 25 newest attempts of a delivery replayed many times; attemptCount counts them all", async () => {
    const owner = await createPrincipal();
    const sub = await subscribe(owner, { url: (await openMailbox()).url });
    const id = crypto.randomUUID();
    const at = new Date().toISOString();
    const db = await tenantDb(owner.organizationId);
    await db.batch([
      db
        .prepare(
          "INSERT INTO webhook_deliveries (id, organization_id, subscription_id, event_id, event, body, status, attempt_count, created_at, updated_at) VALUES (?, ?, ?, ?, 'contact.created', '{}', 'failed', 60, ?, ?)",
        )
        .bind(id, owner.organizationId, sub.id, crypto.randomUUID(), at, at),
      ...Array.from({ length: 60 }, (_, i) =>
        db
          .prepare(
            "INSERT INTO webhook_delivery_attempts (id, organization_id, delivery_id, attempt, status_code, duration_ms, attempted_at) VALUES (?, ?, ?, ?, 500, 3, ?)",
          )
          .bind(crypto.randomUUID(), owner.organizationId, id, i + 1, at),
      ),
    ]);
    const [delivery] = (await json(await call("GET", `/v1/webhooks/${sub.id}/deliveries`, { token: owner.token }))).data;
    expect(delivery.attemptCount).toBe(60);
    expect(delivery.attempts.map((a: { attempt: number }) => a.attempt)).toEqual(Array.from({ length: 25 }, (_, i) => 36 + i));
  });

  it("the cron re-queues a delivery whose queue message was lost, and it is delivered", async () => {
    const owner = await createPrincipal();
    const box = await openMailbox();
    // Fanned out with a capturing queue: the delivery row exists, its message never reached the real queue.
    const { sub, event } = await deliveryFor(owner, box.url);
    await (await tenantDb(owner.organizationId))
      .prepare("UPDATE webhook_deliveries SET updated_at = ? WHERE subscription_id = ?")
      .bind(new Date(Date.now() - 20 * 60_000).toISOString(), sub.id)
      .run();
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    await vi.waitFor(async () => expect(await box.count()).toBe(1), { timeout: 15_000, interval: 200 });
    expect(JSON.parse((await box.received())[0]!.body).id).toBe(event.id);
    await vi.waitFor(async () => expect((await log(owner, sub.id))[0].status).toBe("delivered"), { timeout: 15_000, interval: 200 });
  });
});

// Issue 40 (found by the adversarial pass): a key holding webhooks:manage alone narrowed the owner's failing contact
// subscription to an event it may read and pointed it at its own receiver; the contact deliveries still being
// retried then went there. A delivery is sent only while the subscription carries its event.
describe("deliveries in flight when a subscription is narrowed and redirected", () => {
  it("are not sent to the new URL: they fail as no longer carried, and cannot be replayed or recovered there", async () => {
    const owner = await createPrincipal();
    const failing = await openMailbox({ fallback: 500 });
    const { sub, message } = await deliveryFor(owner, failing.url);
    expect(await attempt(message, 1)).toMatchObject({ retried: true });
    const key = await createApiKey(owner.token, ["webhooks:manage"]);
    const thief = await openMailbox();
    const moved = await call("PATCH", `/v1/webhooks/${sub.id}`, {
      token: key.key,
      body: { events: ["webhook.endpoint_disabled"], url: thief.url },
    });
    expect(moved.status).toBe(200);
    expect(await attempt(message, 2)).toMatchObject({ acked: true, retried: false });
    expect(await thief.count()).toBe(0);
    const [delivery] = await log(owner, sub.id);
    expect(delivery).toMatchObject({
      event: "contact.created",
      status: "failed",
      lastError: "the subscription no longer carries contact.created",
    });
    // Neither the owner nor the key sends it there by hand.
    const replay = await call("POST", `/v1/webhooks/${sub.id}/deliveries/${delivery.id}/replay`, { token: owner.token });
    expect(replay.status).toBe(409);
    expect((await json(replay)).error).toMatchObject({ code: "event_not_subscribed" });
    const recover = await call("POST", `/v1/webhooks/${sub.id}/recover`, {
      token: owner.token,
      body: { since: new Date(Date.now() - 60_000).toISOString() },
    });
    expect((await json(recover)).data?.queued ?? 0).toBe(0);
    expect(await thief.count()).toBe(0);
  });
});

describe("webhook delivery across shards (issue 24)", () => {
  it("names the organization in each message, and handles a batch holding deliveries of organizations on both shards", async () => {
    const owners = [await createPrincipal({ shard: 0 }), await createPrincipal({ shard: 1 })];
    const box = await openMailbox();
    const made = await Promise.all(owners.map((owner) => deliveryFor(owner, box.url)));
    for (const [i, { message }] of made.entries()) expect(message).toMatchObject({ organizationId: owners[i]!.organizationId });
    const batch = createMessageBatch(
      "webhook-deliveries",
      made.map(({ message }, i) => ({ id: `both-${i}`, timestamp: new Date(), attempts: 1, body: message })),
    );
    await consumer(batch, env);
    expect((await getQueueResult(batch, createExecutionContext())).explicitAcks.sort()).toEqual(["both-0", "both-1"]);
    for (const [i, owner] of owners.entries()) expect((await log(owner, made[i]!.sub.id))[0].status).toBe("delivered");
  });

  it("retries, without sending, the delivery of an organization a move has fenced", async () => {
    const owner = await createPrincipal();
    const transport: WebhookTransport = { send: vi.fn(async () => ({ status: 200 })) };
    const { sub, message } = await deliveryFor(owner, (await openMailbox()).url);
    await env.DB.prepare("UPDATE organization_shards SET fenced_at = ? WHERE organization_id = ?")
      .bind(new Date().toISOString(), owner.organizationId)
      .run();
    const r = await attempt(message, 1, createDeliveryConsumer({ resolver: noDns, transport }));
    await env.DB.prepare("UPDATE organization_shards SET fenced_at = NULL WHERE organization_id = ?").bind(owner.organizationId).run();
    expect(r).toMatchObject({ acked: false, retried: true });
    expect(r.delay).toBeGreaterThan(0);
    expect(transport.send).not.toHaveBeenCalled();
    expect((await log(owner, sub.id))[0]).toMatchObject({ status: "pending", attemptCount: 0 });
  });

  it("acks and drops a delivery of an organization the directory no longer knows", async () => {
    const transport: WebhookTransport = { send: vi.fn(async () => ({ status: 200 })) };
    const quiet = vi.spyOn(console, "warn").mockImplementation(() => {});
    const r = await attempt(
      { deliveryId: crypto.randomUUID(), organizationId: crypto.randomUUID() },
      1,
      createDeliveryConsumer({ resolver: noDns, transport }),
    );
    quiet.mockRestore();
    expect(r).toMatchObject({ acked: true, retried: false });
    expect(transport.send).not.toHaveBeenCalled();
  });

  it("delivers a message queued before messages named their organization (a delivery id only)", async () => {
    const owner = await createPrincipal({ shard: 1 });
    const box = await openMailbox();
    const { sub, message } = await deliveryFor(owner, box.url);
    expect(await attempt({ deliveryId: message.deliveryId }, 1)).toMatchObject({ acked: true });
    expect((await log(owner, sub.id))[0].status).toBe("delivered");
  });
});
