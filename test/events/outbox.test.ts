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
import { createEventRouter, type EventConsumer } from "../../src/events/consumers";
import { publishEvents, stageEvent } from "../../src/events/outbox";
import type { DomainEvent } from "../../src/events/event";
import worker from "../../src/index";
import { contractViolation } from "../helpers/contract";
import { createPrincipal, tenantDb } from "../helpers/factories";

interface OutboxRow {
  id: string;
  type: string;
  organization_id: string;
  actor: string;
  data: string;
  sent_at: string | null;
}

const outboxOf = async (organizationId: string) =>
  (await tenantDb(organizationId))
    .prepare("SELECT id, type, organization_id, actor, data, sent_at FROM outbox_events WHERE organization_id = ? ORDER BY occurred_at")
    .bind(organizationId)
    .all<OutboxRow>()
    .then((r) => r.results);

const auditOf = async (organizationId: string) =>
  (await tenantDb(organizationId))
    .prepare("SELECT event_id, type FROM audit_log WHERE organization_id = ?")
    .bind(organizationId)
    .all<{ event_id: string; type: string }>()
    .then((r) => r.results);

/** A request through the Worker's fetch with its own ExecutionContext, waiting for what it deferred (the queue send). */
async function fetchAndSettle(method: string, path: string, token: string, body?: unknown) {
  const ctx = createExecutionContext();
  const res = await worker.fetch(
    new Request(`http://api.test${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
    env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  expect(await contractViolation(method, `http://api.test${path}`, res)).toBeNull();
  return res;
}

/** Stages `event` as the write path does, as if written at `at` (its re-send falls due 30 s later). */
async function stageAt(event: DomainEvent, at: Date) {
  const db = createDb(await tenantDb(event.organizationId));
  await db.batch([stageEvent(db, { ...event, occurredAt: at.toISOString() })]);
}

function newEvent(organizationId: string, type = "plant.created"): DomainEvent {
  return {
    id: crypto.randomUUID(),
    type,
    organizationId,
    actor: { type: "system", userId: null },
    occurredAt: new Date().toISOString(),
    data: { object: { id: 1 } },
  };
}

/** A consumer that records the ids it handles. */
function counting(name = `probe-${crypto.randomUUID()}`) {
  const seen: string[] = [];
  const consumer: EventConsumer = {
    name,
    accepts: (t) => t.startsWith("plant."),
    handle: async (events) => void seen.push(...events.map((e) => e.id)),
  };
  return { consumer, seen };
}

describe("event outbox", () => {
  it("writes the event with the change, sends it to the queue, and the audit consumer records it", async () => {
    const { token, organizationId, userId } = await createPrincipal();
    const res = await fetchAndSettle("POST", "/plants", token, { id: 5, name: "Aloe" });
    expect(res.status).toBe(200);
    const [row] = await outboxOf(organizationId);
    expect(row).toMatchObject({ type: "plant.created", organization_id: organizationId });
    expect(JSON.parse(row!.actor)).toEqual({ type: "user", userId });
    expect(JSON.parse(row!.data)).toEqual({ object: { id: 5, name: "Aloe", tag: null } });
    expect(row!.sent_at).not.toBeNull();
    // Miniflare delivers the queue message to this Worker's own consumer.
    await vi.waitFor(async () => expect(await auditOf(organizationId)).toEqual([{ event_id: row!.id, type: "plant.created" }]), {
      timeout: 10_000,
      interval: 100,
    });
  });

  it("a contact update publishes without a write of its own; the consumer marks its event sent, so the cron leaves it", async () => {
    const { token, organizationId } = await createPrincipal();
    const created = await fetchAndSettle("POST", "/v1/contacts", token, {
      firstName: "Out",
      lastName: "Box",
      email: "outbox@example.test",
    });
    const id = ((await created.json()) as { data: { id: string } }).data.id;
    expect((await fetchAndSettle("PUT", `/v1/contacts/${id}`, token, { notes: "sent" })).status).toBe(200);
    const updated = () => outboxOf(organizationId).then((rows) => rows.find((r) => r.type === "contact.updated"));
    await vi.waitFor(async () => expect((await updated())?.sent_at).not.toBeNull(), { timeout: 10_000, interval: 100 });
    const due = await (await tenantDb(organizationId))
      .prepare("SELECT next_attempt_at FROM outbox_events WHERE id = ?")
      .bind((await updated())!.id)
      .first<string | null>("next_attempt_at");
    expect(due).toBeNull();
  });

  it("writes no event when the change does not happen", async () => {
    const { token, organizationId } = await createPrincipal();
    expect((await fetchAndSettle("DELETE", "/plants/404", token)).status).toBe(404);
    expect(await outboxOf(organizationId)).toEqual([]);
  });

  it("re-sends events that were written but never sent when the cron runs", async () => {
    const { organizationId } = await createPrincipal();
    const stale = newEvent(organizationId, "plant.deleted");
    const old = new Date(Date.now() - 120_000);
    await stageAt(stale, old);
    // An event committed a moment ago may still be on its way: the cron pass leaves it alone.
    const fresh = newEvent(organizationId);
    await stageAt(fresh, new Date());

    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);

    const rows = await outboxOf(organizationId);
    expect(rows.find((r) => r.id === stale.id)!.sent_at).not.toBeNull();
    expect(rows.find((r) => r.id === fresh.id)!.sent_at).toBeNull();
    await vi.waitFor(async () => expect(await auditOf(organizationId)).toEqual([{ event_id: stale.id, type: "plant.deleted" }]), {
      timeout: 10_000,
      interval: 100,
    });
  });
});

describe("shards (issue 24)", () => {
  it("one cron pass re-sends the unsent events of organizations on each shard", async () => {
    const onZero = await createPrincipal({ shard: 0 });
    const onOne = await createPrincipal({ shard: 1 });
    const old = new Date(Date.now() - 120_000);
    const stale = [newEvent(onZero.organizationId, "plant.deleted"), newEvent(onOne.organizationId, "plant.deleted")];
    for (const event of stale) await stageAt(event, old);

    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);

    for (const event of stale) {
      expect((await outboxOf(event.organizationId)).find((r) => r.id === event.id)!.sent_at).not.toBeNull();
      await vi.waitFor(async () => expect(await auditOf(event.organizationId)).toEqual([{ event_id: event.id, type: "plant.deleted" }]), {
        timeout: 10_000,
        interval: 100,
      });
    }
  });

  it("retries, without handling, the message of an organization a move has fenced; handles it once the fence is down", async () => {
    const { organizationId } = await createPrincipal();
    const { consumer, seen } = counting();
    const event = newEvent(organizationId);
    await stageAt(event, new Date());
    const fence = (at: string | null) =>
      env.DB.prepare("UPDATE organization_shards SET fenced_at = ? WHERE organization_id = ?").bind(at, organizationId).run();
    await fence(new Date().toISOString());
    const batch = createMessageBatch("events", [
      { id: "fenced", timestamp: new Date(), attempts: 1, body: { id: event.id, organizationId } },
    ]);
    const retry = vi.spyOn(batch.messages[0]!, "retry");
    const ctx = createExecutionContext();
    await createEventRouter([consumer])(batch, env);
    const result = await getQueueResult(batch, ctx);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["fenced"]);
    expect(result.explicitAcks).toEqual([]);
    expect(retry.mock.calls[0]![0]!.delaySeconds).toBeGreaterThan(0);
    expect(seen).toEqual([]);
    // Nothing was read on the shard either: the event is still unsent for the cron.
    expect((await outboxOf(organizationId))[0]!.sent_at).toBeNull();

    await fence(null);
    await createEventRouter([consumer])(
      createMessageBatch("events", [{ id: "after", timestamp: new Date(), attempts: 2, body: { id: event.id, organizationId } }]),
      env,
    );
    expect(seen).toEqual([event.id]);
  });

  it("acks and drops a message of an organization the directory no longer knows", async () => {
    const { consumer, seen } = counting();
    const event = newEvent(crypto.randomUUID());
    const batch = createMessageBatch("events", [
      { id: "gone", timestamp: new Date(), attempts: 1, body: { id: event.id, organizationId: event.organizationId } },
    ]);
    const log = vi.spyOn(console, "warn").mockImplementation(() => {});
    const ctx = createExecutionContext();
    await createEventRouter([consumer])(batch, env);
    const result = await getQueueResult(batch, ctx);
    log.mockRestore();
    expect(result.explicitAcks).toEqual(["gone"]);
    expect(seen).toEqual([]);
  });

  it("finds the shard of an id-only message queued before messages named their organization", async () => {
    const { organizationId } = await createPrincipal({ shard: 1 });
    const { consumer, seen } = counting();
    const event = newEvent(organizationId);
    await stageAt(event, new Date());
    const batch = createMessageBatch("events", [{ id: "legacy", timestamp: new Date(), attempts: 1, body: { id: event.id } }]);
    const ctx = createExecutionContext();
    await createEventRouter([consumer])(batch, env);
    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(["legacy"]);
    expect(seen).toEqual([event.id]);
  });
});

describe("publishing", () => {
  async function stageAll(events: DomainEvent[]) {
    const db = createDb(await tenantDb(events[0]!.organizationId));
    for (let i = 0; i < events.length; i += 50)
      await db.batch(events.slice(i, i + 50).map((e) => stageEvent(db, e)) as [ReturnType<typeof stageEvent>]);
  }
  const unsent = async (organizationId: string) =>
    (await tenantDb(organizationId))
      .prepare("SELECT COUNT(*) AS n FROM outbox_events WHERE organization_id = ? AND sent_at IS NULL")
      .bind(organizationId)
      .first<number>("n");

  it("sends more than a queue batch allows (100 messages) in several batches, and marks every one sent", async () => {
    const { organizationId } = await createPrincipal();
    const events = Array.from({ length: 250 }, () => newEvent(organizationId));
    await stageAll(events);
    await publishEvents(env.EVENTS, createDb(await tenantDb(organizationId)), events);
    expect(await unsent(organizationId)).toBe(0);
    await vi.waitFor(async () => expect(await auditOf(organizationId)).toHaveLength(250), { timeout: 20_000, interval: 200 });
  });

  it("keeps each batch under the queue's 256 KB, however large the events", async () => {
    const { organizationId } = await createPrincipal();
    const events = Array.from({ length: 30 }, () => ({ ...newEvent(organizationId), data: { object: { notes: "x".repeat(20_000) } } }));
    await stageAll(events);
    await publishEvents(env.EVENTS, createDb(await tenantDb(organizationId)), events);
    expect(await unsent(organizationId)).toBe(0);
  });
});

describe("event consumers", () => {
  it("handles an event once when the queue delivers it twice, in one batch and in a later one", async () => {
    const { organizationId } = await createPrincipal();
    const { consumer, seen } = counting();
    const route = createEventRouter([consumer]);
    const event = newEvent(organizationId);
    const batch = createMessageBatch("events", [
      { id: "m1", timestamp: new Date(), attempts: 1, body: event },
      { id: "m2", timestamp: new Date(), attempts: 1, body: event },
    ]);
    const ctx = createExecutionContext();
    await route(batch, env);
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks.sort()).toEqual(["m1", "m2"]);
    const again = createMessageBatch("events", [{ id: "m3", timestamp: new Date(), attempts: 2, body: event }]);
    await route(again, env);
    expect(seen).toEqual([event.id]);
  });

  it("records each event in the audit log once through the Worker's own queue handler", async () => {
    const { organizationId } = await createPrincipal();
    const event = newEvent(organizationId);
    const batch = createMessageBatch("events", [
      { id: "a", timestamp: new Date(), attempts: 1, body: event },
      { id: "b", timestamp: new Date(), attempts: 1, body: event },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env);
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks.sort()).toEqual(["a", "b"]);
    expect(await auditOf(organizationId)).toEqual([{ event_id: event.id, type: event.type }]);
  });

  it("retries a failing message with backoff on its own and acks the rest; the retry then succeeds", async () => {
    const { organizationId } = await createPrincipal();
    // Fails the batch call that carries plant.deleted, and the one-at-a-time call that follows it.
    let failures = 2;
    const handled: string[] = [];
    const flaky: EventConsumer = {
      name: `flaky-${crypto.randomUUID()}`,
      accepts: () => true,
      handle: async (events) => {
        if (events.some((e) => e.type === "plant.deleted") && failures > 0) {
          failures--;
          throw new Error("downstream unavailable");
        }
        handled.push(...events.map((e) => e.type));
      },
    };
    const route = createEventRouter([flaky]);
    const bad = newEvent(organizationId, "plant.deleted");
    const good = newEvent(organizationId, "plant.created");
    const log = vi.spyOn(console, "error").mockImplementation(() => {});
    const batch = createMessageBatch<unknown>("events", [
      { id: "bad", timestamp: new Date(), attempts: 3, body: bad },
      { id: "good", timestamp: new Date(), attempts: 1, body: good },
      { id: "junk", timestamp: new Date(), attempts: 1, body: { not: "an event" } },
    ]);
    // The test harness records which messages were retried but not their delay, so watch the call itself.
    const retry = vi.spyOn(batch.messages[0]!, "retry");
    const ctx = createExecutionContext();
    await route(batch, env);
    const result = await getQueueResult(batch, ctx);
    log.mockRestore();
    expect(result.explicitAcks.sort()).toEqual(["good", "junk"]);
    expect(result.retryMessages).toHaveLength(1);
    expect(result.retryMessages[0]!.msgId).toBe("bad");
    // Third attempt: 40 s give or take the jitter of a quarter.
    const delay = retry.mock.calls[0]![0]!.delaySeconds!;
    expect(delay).toBeGreaterThanOrEqual(30);
    expect(delay).toBeLessThanOrEqual(50);
    // The failed claim was released, so the redelivery is handled.
    await route(createMessageBatch("events", [{ id: "bad-2", timestamp: new Date(), attempts: 4, body: bad }]), env);
    expect(handled).toEqual(["plant.created", "plant.deleted"]);
  });

  it("retries, without handling, a duplicate whose first delivery is still being handled", async () => {
    const { organizationId } = await createPrincipal();
    const { consumer, seen } = counting();
    const event = newEvent(organizationId);
    await createDb(await tenantDb(organizationId)).run(
      // Another isolate claimed it a moment ago and has not finished.
      (await import("drizzle-orm"))
        .sql`INSERT INTO processed_events (consumer, event_id, claimed_at) VALUES (${consumer.name}, ${event.id}, ${new Date().toISOString()})`,
    );
    const batch = createMessageBatch("events", [{ id: "dup", timestamp: new Date(), attempts: 1, body: event }]);
    const ctx = createExecutionContext();
    await createEventRouter([consumer])(batch, env);
    const result = await getQueueResult(batch, ctx);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["dup"]);
    expect(seen).toEqual([]);
  });
});
