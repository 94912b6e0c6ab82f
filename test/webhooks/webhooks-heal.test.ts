import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  getQueueResult,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createDb } from "../../src/db/client";
import worker from "../../src/index";
import { createDeliveryConsumer } from "../../src/webhooks/delivery";
import { fanOutEvents } from "../../src/webhooks/fanout";
import { disableFailingEndpoint } from "../../src/webhooks/healing";
import { fetchTransport } from "../../src/webhooks/transport";
import { call, json } from "../helpers/client";
import { mailTo } from "../helpers/documents";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { type Mailbox, openMailbox } from "../helpers/receiver";
import { capturingEnv, contactEvent, subscribe } from "../helpers/webhooks";

/**
 * Endpoints that heal (issue 32): an endpoint every delivery of which fails for 5 days is turned off once, its
 * organization's owners are mailed, and its other endpoints are told with `webhook.endpoint_disabled`. The clock is
 * moved (Date only; timers and the queues run in real time), each attempt driven by hand through the real consumer
 * against real receivers, and what follows the disable (the event's fan-out and deliveries) goes through the queues.
 */
const DAY = 86_400_000;
const consumer = createDeliveryConsumer({ resolver: { resolve: async () => [] }, transport: fetchTransport() });

beforeEach(() => void vi.useFakeTimers({ toFake: ["Date"], shouldAdvanceTime: true }));
afterEach(() => void vi.useRealTimers());

/** A principal whose session outlives the clock's jumps. */
const principal = (opts: { organizationId?: string; role?: "owner" | "admin" | "agent" } = {}) =>
  createPrincipal({ ...opts, expiresInSeconds: 60 * 86_400 });
const emailOf = (p: TestPrincipal) => `${p.userId}@example.test`;

/** `n` contact.created events fanned out without queueing: the messages of the deliveries, to attempt by hand. */
async function deliveriesFor(owner: TestPrincipal, n = 1) {
  const { env: capture, sent } = capturingEnv();
  await fanOutEvents(
    capture,
    createDb(await tenantDb(owner.organizationId)),
    Array.from({ length: n }, () => contactEvent(owner, "contact.created", { id: crypto.randomUUID() })),
  );
  return sent;
}

async function attempt(body: unknown, attempts: number) {
  const batch = createMessageBatch("webhook-deliveries", [{ id: `m-${crypto.randomUUID()}`, timestamp: new Date(), attempts, body }]);
  await consumer(batch, env);
  const result = await getQueueResult(batch, createExecutionContext());
  return { acked: result.explicitAcks.length === 1, retried: result.retryMessages.length === 1 };
}

const read = async (owner: TestPrincipal, id: string) => (await json(await call("GET", `/v1/webhooks/${id}`, { token: owner.token }))).data;

async function cronPass() {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ cron: "* * * * *" }), env, ctx);
  await waitOnExecutionContext(ctx);
}

const disabledEvents = async (owner: TestPrincipal) =>
  (await (
    await tenantDb(owner.organizationId)
  )
    .prepare("SELECT COUNT(*) AS n FROM outbox_events WHERE organization_id = ? AND type = 'webhook.endpoint_disabled'")
    .bind(owner.organizationId)
    .first<{ n: number }>())!.n;
const noticesTo = async (p: TestPrincipal) => (await mailTo(emailOf(p))).filter((m) => m.subject.includes("webhook endpoint")).length;

/** Waits for `box` to have received `n` requests, then a moment more, so a late duplicate would show. */
async function receivedExactly(box: Mailbox, n: number) {
  await vi.waitFor(async () => expect(await box.count()).toBeGreaterThanOrEqual(n), { timeout: 20_000, interval: 100 });
  await new Promise((r) => setTimeout(r, 1500));
  expect(await box.count()).toBe(n);
  return box.received();
}

describe("auto-disable after 5 days of failures", { timeout: 60_000 }, () => {
  it("turns the endpoint off at the failure 5 days into its run, mails the owners, and tells every other enabled endpoint", async () => {
    const owner = await principal();
    const coOwner = await principal({ organizationId: owner.organizationId, role: "owner" });
    const admin = await principal({ organizationId: owner.organizationId, role: "admin" });
    const [failing, listener, watcher, off] = await Promise.all([
      openMailbox({ fallback: 500 }),
      openMailbox(),
      openMailbox(),
      openMailbox(),
    ]);
    const target = await subscribe(owner, { url: failing.url, events: ["contact.created"] });
    // Subscribed to something else entirely: still told, as every other enabled endpoint is.
    const other = await subscribe(owner, { url: listener.url, events: ["deal.created"] });
    const asked = await subscribe(owner, { url: watcher.url, events: ["webhook.endpoint_disabled"] });
    await subscribe(owner, { url: off.url, events: ["contact.created"], enabled: false });
    const [message] = await deliveriesFor(owner);

    const start = Date.now();
    expect(await attempt(message, 1)).toMatchObject({ retried: true });
    const failingSince = (await read(owner, target.id)).failingSince as string;
    expect(Date.parse(failingSince)).toBeGreaterThanOrEqual(start - 1000);
    vi.setSystemTime(start + 4 * DAY);
    expect(await attempt(message, 2)).toMatchObject({ retried: true });
    expect(await read(owner, target.id)).toMatchObject({ enabled: true, disabledReason: null, disabledAt: null, failingSince });

    vi.setSystemTime(start + 5 * DAY + 60_000);
    expect(await attempt(message, 3)).toMatchObject({ retried: true });
    const shown = await read(owner, target.id);
    expect(shown).toMatchObject({ enabled: false, disabledReason: "every delivery failed for 5 days", failingSince });
    expect(Date.parse(shown.disabledAt)).toBeGreaterThanOrEqual(start + 5 * DAY);

    // The other enabled endpoints get webhook.endpoint_disabled (through the events queue and their deliveries),
    // signed with their own secrets; the disabled one and the one turned off by its user get nothing.
    for (const [box, sub] of [
      [listener, other],
      [watcher, asked],
    ] as const) {
      const [got] = await receivedExactly(box, 1);
      const payload = new Webhook(sub.secret).verify(got!.body, got!.headers) as Record<string, any>;
      expect(payload).toMatchObject({ event: "webhook.endpoint_disabled", organization: { id: owner.organizationId }, user: null });
      expect(payload.data.object).toEqual(shown);
      expect(got!.body).not.toContain(target.secret);
    }
    expect(await failing.count()).toBe(3);
    expect(await off.count()).toBe(0);

    expect(await noticesTo(owner)).toBe(1);
    expect(await noticesTo(coOwner)).toBe(1);
    expect(await noticesTo(admin)).toBe(0);
    const [mail] = (await mailTo(emailOf(owner))).filter((m) => m.subject.includes("webhook endpoint"));
    expect(mail!.text).toContain(failing.url);
    expect(mail!.text).not.toContain(target.secret);

    // What is still queued for it is not sent, a cron pass changes nothing: one disable, one event, one mail.
    expect(await attempt(message, 4)).toMatchObject({ acked: true });
    vi.setSystemTime(Date.now() + 20 * 60_000);
    await cronPass();
    expect(await failing.count()).toBe(3);
    expect(await disabledEvents(owner)).toBe(1);
    expect(await noticesTo(owner)).toBe(1);
  });

  it("a success ends the failure run; re-enabling with PATCH starts a new one", async () => {
    const owner = await principal();
    const box = await openMailbox({ script: [500, 200, 500] });
    const sub = await subscribe(owner, { url: box.url });
    const [first, second] = await deliveriesFor(owner, 2);
    const start = Date.now();
    await attempt(first, 1);
    expect((await read(owner, sub.id)).failingSince).not.toBeNull();
    expect(await attempt(second, 1)).toMatchObject({ acked: true });
    expect((await read(owner, sub.id)).failingSince).toBeNull();
    // A failure six days on starts a run; it does not end one.
    vi.setSystemTime(start + 6 * DAY);
    await attempt(first, 2);
    const restarted = await read(owner, sub.id);
    expect(restarted.enabled).toBe(true);
    expect(Date.parse(restarted.failingSince)).toBeGreaterThanOrEqual(start + 6 * DAY - 1000);

    // Turned off by the cron after 5 more days, then back on by PATCH: the run starts afresh.
    vi.setSystemTime(Date.now() + 5 * DAY + 60_000);
    await cronPass();
    expect(await read(owner, sub.id)).toMatchObject({ enabled: false, disabledReason: "every delivery failed for 5 days" });
    const res = await call("PATCH", `/v1/webhooks/${sub.id}`, { token: owner.token, body: { enabled: true } });
    expect((await json(res)).data).toMatchObject({ enabled: true, disabledReason: null, disabledAt: null, failingSince: null });
    await cronPass();
    expect((await read(owner, sub.id)).enabled).toBe(true);
  });

  it("of failures and cron passes landing at once past 5 days, one disables, emits and mails", async () => {
    const owner = await principal();
    const [failing, listener] = await Promise.all([openMailbox({ fallback: 503 }), openMailbox()]);
    const target = await subscribe(owner, { url: failing.url });
    await subscribe(owner, { url: listener.url, events: ["deal.created"] });
    const messages = await deliveriesFor(owner, 4);
    const start = Date.now();
    for (const m of messages) await attempt(m, 1);
    vi.setSystemTime(start + 5 * DAY + 60_000);
    // The failures through the consumer, and what each cron pass runs for the endpoint, all at once: every one of
    // them reads the endpoint on and overdue before any has written.
    const db = createDb(await tenantDb(owner.organizationId));
    const [results, passes] = await Promise.all([
      Promise.all(messages.map((m) => attempt(m, 2))),
      Promise.all(Array.from({ length: 6 }, () => disableFailingEndpoint(env, db, owner.organizationId, target.id))),
    ]);
    expect(results.every((r) => r.retried)).toBe(true);
    expect(passes.filter(Boolean).length).toBeLessThanOrEqual(1);
    expect((await read(owner, target.id)).enabled).toBe(false);
    expect(await disabledEvents(owner)).toBe(1);
    await receivedExactly(listener, 1);
    expect(await noticesTo(owner)).toBe(1);
  });

  it("the cron turns off an endpoint whose run passed 5 days with nothing left to send it", async () => {
    const owner = await principal();
    const [failing, listener] = await Promise.all([openMailbox({ fallback: 500 }), openMailbox()]);
    const target = await subscribe(owner, { url: failing.url });
    const other = await subscribe(owner, { url: listener.url, events: ["deal.created"] });
    const [message] = await deliveriesFor(owner);
    await attempt(message, 1);
    vi.setSystemTime(Date.now() + 4 * DAY);
    await cronPass();
    expect((await read(owner, target.id)).enabled).toBe(true);
    vi.setSystemTime(Date.now() + DAY + 60_000);
    await cronPass();
    await cronPass();
    expect((await read(owner, target.id)).enabled).toBe(false);
    expect(await disabledEvents(owner)).toBe(1);
    const [got] = await receivedExactly(listener, 1);
    expect(new Webhook(other.secret).verify(got!.body, got!.headers)).toMatchObject({
      event: "webhook.endpoint_disabled",
      data: { object: { id: target.id, enabled: false } },
    });
    expect(await noticesTo(owner)).toBe(1);
  });

  it("when the mail after the disable fails, the cron mails the owners once its grace has passed", async () => {
    const owner = await principal();
    const target = await subscribe(owner, { url: (await openMailbox({ fallback: 500 })).url });
    const [message] = await deliveriesFor(owner);
    await attempt(message, 1);
    vi.setSystemTime(Date.now() + 5 * DAY + 60_000);
    // A mail provider that refuses (resend without its key): the disable commits, the mail does not leave.
    const quiet = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const disabled = await disableFailingEndpoint(
      { ...env, EMAIL_PROVIDER: "resend" },
      createDb(await tenantDb(owner.organizationId)),
      owner.organizationId,
      target.id,
    );
    quiet.mockRestore();
    expect(disabled).toBe(true);
    expect((await read(owner, target.id)).enabled).toBe(false);
    expect(await noticesTo(owner)).toBe(0);
    await cronPass(); // within the grace: the mail after the commit might still be on its way
    expect(await noticesTo(owner)).toBe(0);
    vi.setSystemTime(Date.now() + 6 * 60_000);
    await cronPass();
    expect(await noticesTo(owner)).toBe(1);
    vi.setSystemTime(Date.now() + 30 * 60_000);
    await cronPass();
    expect(await noticesTo(owner)).toBe(1);
    expect(await disabledEvents(owner)).toBe(1);
  });
});
