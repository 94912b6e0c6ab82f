import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { expect, vi } from "vitest";
import { createApp } from "../../src/app";
import { createDb } from "../../src/db/client";
import { rowJson } from "../../src/db/row-json";
import type { Statement } from "../../src/db/write";
import { dealPrefix, propertyPrefix } from "../../src/files/keys";
import { stageEvents } from "../../src/events/outbox";
import worker from "../../src/index";
import { sha256Hex, toBase64Url } from "../../src/lib/crypto";
import { shardDatabase } from "../../src/shards/bindings";
import { startMove, stepMove } from "../../src/shards/move";
import { runDuePlanSteps } from "../../src/action-plans/runner";
import { MOVED_TABLES } from "../../src/shards/moved-tables";
import { openShardOf } from "../../src/shards/tenants";
import { purgeTrash } from "../../src/trash/service";
import { announceDueTasks } from "../../src/tasks/service";
import { routeExpiredOffers } from "../../src/ponds/service";
import { type DeliveryMessage, fanOutEvents } from "../../src/webhooks/fanout";
import { contractViolation } from "./contract";
import { filesFound, newPerson, whereFound } from "./erasure";
import { dealBody, documentForm } from "./deals";
import { expectDerivedFiguresExact } from "./derived-figures";
import { freshIp, leaseCanonical, mailTo, tokenOf } from "./documents";
import { createPrincipal, tenantDb, type TestPrincipal } from "./factories";
import { drainQueues, type FaultEnv, faultEnv, type FaultMode, type Step, withSignerOn } from "./faulty-bindings";
import { pdfTool } from "./pdf-tools";
import { photoForm, PNG_1X1, propertyBody } from "./properties";
import { type Mailbox, openMailbox } from "./receiver";
import { taggedPdf } from "./tagged-pdfs";
import { buildPdf, DRAWN_PNG } from "./uploads";
import { seedHostedSigner, VIEW_BODY } from "./route-table";
import { capturingEnv, contactEvent, subscribe } from "./webhooks";

/**
 * Every multi-step operation with a way to fail it half-way (issue 29), beside RACES. test/faults/lane-*.test.ts (test/helpers/fault-runner.ts) run each
 * row once without a fault to count its steps (faulty-bindings.ts: D1 writes, R2 puts and deletes, queue sends), then
 * once per step and fault mode: a fresh `seed`, the `act` on bindings that fail at that step, `during` (what must
 * hold even then), `recover` (what production runs afterwards: the client's retry, the cron pass, the queues'
 * redelivery) and `check` (the invariants). A row is a plain entry: a new operation (erasure, say) is one more
 * object in FAULTS, with its own seed, act and checks; the runner and the printed table need nothing else.
 */
export interface FaultRow<S = any> {
  operation: string;
  /** What the recovery is, for the printed table. */
  recovery: string;
  /**
   * Which of the steps the operation takes (`all`, as the run without a fault took them) are failed in turn; every
   * one unless said, and `why` then says which.
   */
  steps?: { pick: (step: Step, all: Step[]) => boolean; why: string };
  /** The fault modes (faulty-bindings.ts); all three unless said why not. */
  modes?: FaultMode[];
  /** Runs of this row that may go side by side: only for an operation whose recovery has no cron pass (which would touch the other runs' organizations). */
  concurrency?: number;
  /** A row that takes minutes runs in a lane (a test file, test/faults/) of its own, so the lanes end together. */
  ownLane?: true;
  seed(): Promise<S>;
  /** The operation, on `f.env`; it may fail in any way a fault makes it (the runner catches what it throws). */
  act(f: FaultEnv, s: S): Promise<void>;
  /** Right after the fault, before any recovery. */
  during?(f: FaultEnv, s: S): Promise<void>;
  recover(f: FaultEnv, s: S): Promise<void>;
  check(f: FaultEnv, s: S): Promise<void>;
}

// ---------------------------------------------------------------------------------------------------------------------
// What the rows share: requests on the faulted env, the clock, the cron pass, the production recovery.

const app = createApp();

export interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

/**
 * One request through the app on `f.env`, waiting for what it deferred (its queue send). The answer must still be one
 * its route declares (a fault makes a 5xx, never an undeclared status or shape).
 */
export async function request(
  f: FaultEnv,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; raw?: Uint8Array; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: BodyInit | undefined;
  if (opts.raw) body = opts.raw;
  else if (opts.body instanceof FormData) body = opts.body;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] = "application/json";
  }
  const url = `http://api.test${path}`;
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(url, { method, headers, body }), f.env, ctx);
  await waitOnExecutionContext(ctx);
  const violation = await contractViolation(method, url, res.clone());
  if (violation) throw new Error(`Response breaks the API contract: ${violation}`);
  const json = res.headers.get("content-type")?.includes("json");
  return { status: res.status, body: json ? await res.json() : new Uint8Array(await res.arrayBuffer()), headers: res.headers };
}

/**
 * The clock moves on (the fault runner fakes Date for each lane file, advancing with real time): past every grace
 * and backoff a recovery waits for — an unsent event's re-send (30 s, then 1 min doubling), an abandoned idempotency
 * claim (2 min), a consumer's stale claim (5 min), a stalled webhook delivery (10 min), a pending upload (1 hour and 5
 * minutes).
 */
export const later = (ms = 70 * 60_000) => vi.setSystemTime(Date.now() + ms);

/** One pass of the Worker's scheduled handler (src/cron.ts: every task on every shard) on `f.env`. */
export async function cronPass(f: FaultEnv): Promise<void> {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ cron: "* * * * *" }), f.env, ctx);
  await waitOnExecutionContext(ctx);
}

/**
 * What production does after a fault, on working bindings: time passes, the client retries (`retry`, when its answer
 * was a failure), the queues redeliver what they hold, and once every grace has run out the cron passes (re-sending
 * what was never sent, re-queueing stalled deliveries, sweeping pending uploads, resuming a purge) and the queues
 * deliver what it sent.
 */
export async function recoverAsProduction(f: FaultEnv, retry?: () => Promise<void>): Promise<void> {
  f.plan.disarm();
  later();
  if (retry) await retry();
  await drainQueues(f);
  later();
  await cronPass(f);
  await drainQueues(f);
}

/** A request retried as a careful client does: with the same Idempotency-Key, until it answers something other than a 5xx or 409 in flight. */
export async function retryUntilAnswered(send: () => Promise<Answer>, first: Answer | undefined): Promise<Answer> {
  let answer = first;
  for (let tries = 0; tries < 5 && (!answer || answer.status >= 500 || answer.body?.error?.code === "idempotency_key_in_flight"); tries++) {
    if (answer) later(5 * 60_000);
    answer = await send();
  }
  return answer!;
}

/** A count on the organization's shard. */
export async function count(organizationId: string, sql: string, ...binds: unknown[]): Promise<number> {
  return (await (
    await tenantDb(organizationId)
  )
    .prepare(sql)
    .bind(...binds)
    .first<{ n: number }>())!.n;
}

/**
 * Each of `eventIds` reached the consumers: stored once, marked sent, recorded once by the audit consumer and marked
 * done by it (processed_events); and the organization has no other event of `types`.
 */
export async function expectEventsOnce(organizationId: string, types: string[], expected: Record<string, number>): Promise<void> {
  const db = await tenantDb(organizationId);
  const rows = (
    await db
      .prepare(`SELECT o.id, o.type, o.sent_at, (SELECT COUNT(*) FROM audit_log a WHERE a.event_id = o.id) AS audited, (SELECT COUNT(*) FROM processed_events p WHERE p.event_id = o.id AND p.consumer = 'audit-log' AND p.processed_at IS NOT NULL) AS done
                FROM outbox_events o WHERE o.organization_id = ? AND o.type IN (SELECT value FROM json_each(?))`)
      .bind(organizationId, JSON.stringify(types))
      .all<{ id: string; type: string; sent_at: string | null; audited: number; done: number }>()
  ).results;
  const byType = Object.fromEntries(types.map((t) => [t, rows.filter((r) => r.type === t).length]));
  expect(byType, "events stored per type").toEqual(expected);
  for (const r of rows)
    expect({ type: r.type, sent: r.sent_at !== null, audited: r.audited, done: r.done }, `event ${r.id}`).toEqual({
      type: r.type,
      sent: true,
      audited: 1,
      done: 1,
    });
}

/**
 * A principal whose session outlives every clock jump of the file, on shard 0 unless said: the steps of every run of
 * a row then name the same bindings.
 */
export const principal = (shard = 0): Promise<TestPrincipal> => createPrincipal({ shard, expiresInSeconds: 365 * 86_400 });

/**
 * Seeds go through the app like any request, on bindings that never fail, and their events are handled by the
 * consumers before the run starts: nothing of a seed runs in the background while a run counts its steps, and no
 * recovery's cron finds a seed's event still to send.
 */
export async function seedCall(
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; raw?: Uint8Array; headers?: Record<string, string> } = {},
): Promise<any> {
  const quiet = faultEnv();
  const res = await request(quiet, method, path, opts);
  if (res.status >= 300) throw new Error(`seed ${method} ${path} answered ${res.status}: ${JSON.stringify(res.body)}`);
  await drainQueues(quiet);
  return res.body;
}

const seedContact = async (owner: TestPrincipal, extra: Record<string, unknown> = {}) =>
  (
    await seedCall("POST", "/v1/contacts", {
      token: owner.token,
      body: { firstName: "Sid", lastName: "Seed", email: `seed.${crypto.randomUUID()}@example.test`, ...extra },
    })
  ).data as { id: string };
const seedDeal = async (owner: TestPrincipal) =>
  (await seedCall("POST", "/v1/deals", { token: owner.token, body: dealBody((await seedContact(owner)).id) })).data as { id: string };
const seedProperty = async (owner: TestPrincipal) =>
  (await seedCall("POST", "/v1/properties", { token: owner.token, body: propertyBody() })).data as { id: string };
const seedDocument = async (owner: TestPrincipal, dealId: string) =>
  (await seedCall("POST", `/v1/deals/${dealId}/documents`, { token: owner.token, body: documentForm() })).data as { url: string };
const seedPhoto = async (owner: TestPrincipal, propertyId: string) =>
  (
    await seedCall("POST", `/v1/properties/${propertyId}/photos`, {
      token: owner.token,
      body: photoForm([{ bytes: PNG_1X1, name: "p.png", type: "image/png" }]),
    })
  ).data[0] as { url: string };

// ---------------------------------------------------------------------------------------------------------------------
// The rows.

/** A write through the API with an Idempotency-Key, retried under that key after a failure. */
interface Written {
  owner: TestPrincipal;
  key: string;
  first?: Answer;
  final?: Answer;
}

/**
 * A row whose operation is one request with an Idempotency-Key: `prepare` seeds what the request needs for a fresh
 * principal, `send` sends it, once by `act` and again, under the same key, by the recovery when it failed.
 */
function keyedWrite<S extends Written>(
  prepare: (owner: TestPrincipal) => Promise<Omit<S, keyof Written>>,
  send: (f: FaultEnv, s: S) => Promise<Answer>,
): Pick<FaultRow<S>, "recovery" | "seed" | "act" | "recover"> {
  return {
    recovery: "client retry (same Idempotency-Key); cron; queue redelivery",
    async seed() {
      const owner = await principal();
      return { owner, key: crypto.randomUUID(), ...(await prepare(owner)) } as S;
    },
    ...retriedRequest(send),
  };
}

/** An operation that is one request: `act` sends it, the recovery sends it again (as a client would) while it answers a failure. */
function retriedRequest<S extends { first?: Answer; final?: Answer }>(
  send: (f: FaultEnv, s: S) => Promise<Answer>,
): Pick<FaultRow<S>, "act" | "recover"> {
  return {
    async act(f, s) {
      s.first = await send(f, s);
    },
    async recover(f, s) {
      await recoverAsProduction(f, async () => {
        s.final = await retryUntilAnswered(() => send(f, s), s.first);
      });
    },
  };
}

const keyed = (s: Written) => ({ "idempotency-key": s.key });

/** The answer the client ends with: the first, or the retry's (a replay of the kept answer, or the request run again). */
function expectAnswered(s: Written, status: number) {
  expect(s.final!.status, JSON.stringify(s.final!.body)).toBe(status);
}

interface ContactCreate extends Written {
  email: string;
}

const contactCreate: FaultRow<ContactCreate> = {
  operation: "contact create with events",
  ...keyedWrite<ContactCreate>(
    async () => ({ email: `fault.${crypto.randomUUID()}@example.test` }),
    (f, s) =>
      request(f, "POST", "/v1/contacts", {
        token: s.owner.token,
        headers: keyed(s),
        body: { firstName: "Fay", lastName: "Ult", email: s.email, tags: ["hot", "vip"] },
      }),
  ),
  async check(_f, s) {
    expectAnswered(s, 201);
    const org = s.owner.organizationId;
    expect(await count(org, "SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ?", org), "contacts").toBe(1);
    expect(await count(org, "SELECT COALESCE(SUM(contact_count), 0) AS n FROM tags WHERE organization_id = ?", org), "tag counts").toBe(2);
    expect(
      await count(
        org,
        "SELECT COALESCE(SUM(total), 0) AS n FROM resource_counters WHERE organization_id = ? AND resource = 'contacts'",
        org,
      ),
      "contact total",
    ).toBe(1);
    await expectDerivedFiguresExact(org);
    await expectEventsOnce(org, ["contact.created", "contact.tagged"], { "contact.created": 1, "contact.tagged": 1 });
  },
};

interface LeadIntake {
  owner: TestPrincipal;
  email: string;
  first?: Answer;
  final?: Answer;
}

/** Lead intake (issue 33) is idempotent by its sourceEventId, not a header: the client's retry sends the same lead. */
const leadIntake: FaultRow<LeadIntake> = {
  operation: "lead intake of a new person (contact, activity, routing turn, kept answer) with events",
  recovery: "client retry (same sourceEventId, no Idempotency-Key); cron; queue redelivery",
  async seed() {
    return { owner: await principal(), email: `lead.${crypto.randomUUID()}@example.test` };
  },
  ...retriedRequest<LeadIntake>((f, s) =>
    request(f, "POST", "/v1/leads", {
      token: s.owner.token,
      body: {
        source: "WEBSITE",
        sourceEventId: "fault-1",
        person: { firstName: "Lee", emails: [s.email] },
        message: "Is it still available?",
      },
    }),
  ),
  async check(_f, s) {
    expect(s.final!.status, JSON.stringify(s.final!.body)).toBe(201);
    const org = s.owner.organizationId;
    expect(await count(org, "SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ?", org), "contacts").toBe(1);
    expect(await count(org, "SELECT COUNT(*) AS n FROM contact_activities WHERE organization_id = ?", org), "activities").toBe(1);
    expect(await count(org, "SELECT COUNT(*) AS n FROM lead_intakes WHERE organization_id = ?", org), "kept answers").toBe(1);
    expect(
      await count(org, "SELECT COALESCE(SUM(turn), 0) AS n FROM lead_routing_cursors WHERE organization_id = ?", org),
      "routing turns",
    ).toBe(1);
    await expectDerivedFiguresExact(org);
    await expectEventsOnce(org, ["contact.created", "contact.assigned"], { "contact.created": 1, "contact.assigned": 1 });
  },
};

/** A phone-only lead that matches nobody is kept for review (issue 40), idempotent by its sourceEventId like any lead. */
const leadReview: FaultRow<Omit<LeadIntake, "email">> = {
  operation: "lead intake of a phone-only person who matches nobody (review, kept answer)",
  recovery: "client retry (same sourceEventId, no Idempotency-Key); cron",
  async seed() {
    return { owner: await principal() };
  },
  ...retriedRequest<Omit<LeadIntake, "email">>((f, s) =>
    request(f, "POST", "/v1/leads", {
      token: s.owner.token,
      body: {
        source: "WEBSITE",
        sourceEventId: "fault-review-1",
        person: { firstName: "Pho", phones: ["+1 415 555 0133"] },
        message: "Call me",
      },
    }),
  ),
  async check(_f, s) {
    expect(s.final!.status, JSON.stringify(s.final!.body)).toBe(202);
    const org = s.owner.organizationId;
    const reviewId = s.final!.body.data.reviewId;
    expect(
      await count(org, "SELECT COUNT(*) AS n FROM lead_reviews WHERE organization_id = ? AND id = ?", org, reviewId),
      "the review the answer names",
    ).toBe(1);
    expect(await count(org, "SELECT COUNT(*) AS n FROM lead_reviews WHERE organization_id = ?", org), "reviews").toBe(1);
    expect(await count(org, "SELECT COUNT(*) AS n FROM lead_intakes WHERE organization_id = ?", org), "kept answers").toBe(1);
    expect(await count(org, "SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ?", org), "contacts").toBe(0);
    await expectDerivedFiguresExact(org);
  },
};

interface FormLead extends LeadIntake {
  formKey: string;
}

/**
 * A web form's lead (issue 40): a key without contacts:read is answered once its lead is stored, and the intake runs
 * after the answer; whatever fails there, the cron takes the stored lead in, exactly once. A store whose answer was
 * lost is retried by the form with the same sourceEventId (as every intake is idempotent), and both stored copies go in once.
 */
const formLead: FaultRow<FormLead> = {
  operation:
    "lead from a form's key: stored, answered 202, taken in after the answer (contact, activity, routing turn, inbox row gone) with events",
  recovery: "client retry while the answer is a failure (same sourceEventId); cron drains the stored leads",
  async seed() {
    const owner = await principal();
    const formKey = (await seedCall("POST", "/v1/api-keys", { token: owner.token, body: { name: "Form", permissions: ["leads:write"] } }))
      .data.key;
    return { owner, formKey, email: `form.${crypto.randomUUID()}@example.test` };
  },
  ...retriedRequest<FormLead>((f, s) =>
    request(f, "POST", "/v1/leads", {
      token: s.formKey,
      body: { source: "WEBSITE", sourceEventId: "fault-form-1", person: { firstName: "Fo", emails: [s.email] }, message: "From the form" },
    }),
  ),
  async check(_f, s) {
    expect(s.final!.status, JSON.stringify(s.final!.body)).toBe(202);
    expect(s.final!.body).toEqual({ success: true, data: { received: true } });
    const org = s.owner.organizationId;
    expect(await count(org, "SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ?", org), "contacts").toBe(1);
    expect(await count(org, "SELECT COUNT(*) AS n FROM contact_activities WHERE organization_id = ?", org), "activities").toBe(1);
    expect(await count(org, "SELECT COUNT(*) AS n FROM lead_inbox WHERE organization_id = ?", org), "stored leads left").toBe(0);
    expect(await count(org, "SELECT COUNT(*) AS n FROM lead_intakes WHERE organization_id = ?", org), "kept answers").toBe(1);
    expect(
      await count(org, "SELECT COALESCE(SUM(turn), 0) AS n FROM lead_routing_cursors WHERE organization_id = ?", org),
      "routing turns",
    ).toBe(1);
    await expectDerivedFiguresExact(org);
    await expectEventsOnce(org, ["contact.created", "contact.assigned"], { "contact.created": 1, "contact.assigned": 1 });
  },
};

interface ReviewAccept extends Written {
  reviewId: string;
}

/** Accepting a review (issue 40) makes the contact intake would have made, in one batch with the review's removal. */
const reviewAccept: FaultRow<ReviewAccept> = {
  operation: "accept of a lead waiting for review (contact, activity, routing turn, review gone, kept answer) with events",
  ...keyedWrite<ReviewAccept>(
    async (owner) => ({
      reviewId: (
        await seedCall("POST", "/v1/leads", {
          token: owner.token,
          body: { source: "WEBSITE", sourceEventId: "fault-accept-1", person: { firstName: "Pho", phones: ["+1 415 555 0134"] } },
        })
      ).data.reviewId,
    }),
    (f, s) =>
      request(f, "POST", `/v1/leads/reviews/${s.reviewId}/accept`, {
        token: s.owner.token,
        headers: keyed(s),
        body: { email: `accepted.${s.key}@example.test` },
      }),
  ),
  async check(_f, s) {
    expectAnswered(s, 201);
    const org = s.owner.organizationId;
    const contactId = s.final!.body.data.contactId;
    expect(
      await count(org, "SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ? AND id = ?", org, contactId),
      "the contact the answer names",
    ).toBe(1);
    expect(await count(org, "SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ?", org), "contacts").toBe(1);
    expect(await count(org, "SELECT COUNT(*) AS n FROM contact_activities WHERE organization_id = ?", org), "activities").toBe(1);
    expect(await count(org, "SELECT COUNT(*) AS n FROM lead_reviews WHERE organization_id = ?", org), "reviews").toBe(0);
    expect(
      await count(
        org,
        "SELECT COUNT(*) AS n FROM lead_intakes WHERE organization_id = ? AND status = 201 AND contact_id = ?",
        org,
        contactId,
      ),
      "the event's kept answer",
    ).toBe(1);
    expect(
      await count(org, "SELECT COALESCE(SUM(turn), 0) AS n FROM lead_routing_cursors WHERE organization_id = ?", org),
      "routing turns",
    ).toBe(1);
    await expectDerivedFiguresExact(org);
    await expectEventsOnce(org, ["contact.created", "contact.assigned"], { "contact.created": 1, "contact.assigned": 1 });
  },
};

interface DealMove extends Written {
  dealId: string;
}

const DEAL_MOVE_EVENTS = ["deal.updated", "deal.stage_changed", "deal.won", "deal.closed", "DEAL_WON"];

const dealMove: FaultRow<DealMove> = {
  operation: "deal move to CLOSED with events",
  ...keyedWrite<DealMove>(
    async (owner) => ({ dealId: (await seedDeal(owner)).id }),
    (f, s) =>
      request(f, "POST", `/v1/deals/${s.dealId}/move`, {
        token: s.owner.token,
        headers: keyed(s),
        body: { stage: "CLOSED", reason: "signed" },
      }),
  ),
  async check(_f, s) {
    expectAnswered(s, 200);
    const org = s.owner.organizationId;
    expect(
      await count(org, "SELECT COUNT(*) AS n FROM deals WHERE organization_id = ? AND stage = 'CLOSED' AND version = 2", org),
      "the deal, moved once",
    ).toBe(1);
    expect(
      await count(org, "SELECT COUNT(*) AS n FROM deal_activities WHERE organization_id = ? AND type = 'STAGE_CHANGED'", org),
      "stage-change activities",
    ).toBe(1);
    await expectDerivedFiguresExact(org);
    await expectEventsOnce(org, DEAL_MOVE_EVENTS, Object.fromEntries(DEAL_MOVE_EVENTS.map((t) => [t, 1])));
    // DEAL_WON's consumer surveys the deal's contact once, however often the event came.
    expect(
      await count(org, "SELECT COUNT(*) AS n FROM surveys WHERE organization_id = ? AND deal_id = ?", org, s.dealId),
      "surveys of the won deal",
    ).toBe(1);
  },
};

interface PropertyPrice extends Written {
  propertyId: string;
}

const propertyPrice: FaultRow<PropertyPrice> = {
  operation: "property price change with events",
  ...keyedWrite<PropertyPrice>(
    async (owner) => ({ propertyId: (await seedProperty(owner)).id }),
    (f, s) =>
      request(f, "PUT", `/v1/properties/${s.propertyId}`, {
        token: s.owner.token,
        headers: keyed(s),
        body: { listing: { listPrice: 600000 } },
      }),
  ),
  async check(_f, s) {
    expectAnswered(s, 200);
    const org = s.owner.organizationId;
    const row = await (await tenantDb(org))
      .prepare("SELECT version, json_extract(listing, '$.priceHistory') AS history FROM properties WHERE id = ?")
      .bind(s.propertyId)
      .first<{ version: number; history: string }>();
    expect(row!.version, "the property, written once").toBe(2);
    expect(
      (JSON.parse(row!.history) as { event: string }[]).map((h) => h.event),
      "price history",
    ).toEqual(["LISTED", "PRICE_REDUCTION"]);
    await expectEventsOnce(org, ["property.updated", "property.price_changed"], { "property.updated": 1, "property.price_changed": 1 });
  },
};

/** Every R2 key under `prefix`. */
export async function objectsUnder(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.FILES.list({ prefix, cursor });
    keys.push(...page.objects.map((o) => o.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return keys.sort();
}

/** Each key has its object in R2: no row points at nothing. */
async function expectObjects(keys: string[]) {
  for (const key of keys) expect(await env.FILES.head(key), `object ${key}`).not.toBeNull();
}

const UPLOAD_RECOVERY = "client retry (same Idempotency-Key); cron (pending-upload sweep); queue redelivery";

interface DealUpload extends Written {
  dealId: string;
}

/** The R2 keys a query of the organization's shard names (its one column `key`), sorted. */
const keysOf = async (organizationId: string, query: string, ...binds: unknown[]) =>
  (
    await (
      await tenantDb(organizationId)
    )
      .prepare(query)
      .bind(...binds)
      .all<{ key: string }>()
  ).results
    .map((r) => r.key)
    .sort();

const dealDocumentKeys = (s: DealUpload) => keysOf(s.owner.organizationId, "SELECT key FROM deal_documents WHERE deal_id = ?", s.dealId);

const dealUpload: FaultRow<DealUpload> = {
  operation: "deal document upload",
  ...keyedWrite<DealUpload>(
    async (owner) => ({ dealId: (await seedDeal(owner)).id }),
    (f, s) => request(f, "POST", `/v1/deals/${s.dealId}/documents`, { token: s.owner.token, headers: keyed(s), body: documentForm() }),
  ),
  recovery: UPLOAD_RECOVERY,
  async during(_f, s) {
    await expectObjects(await dealDocumentKeys(s));
  },
  async check(_f, s) {
    expectAnswered(s, 201);
    const org = s.owner.organizationId;
    const keys = await dealDocumentKeys(s);
    expect(keys.length, "documents of the deal").toBe(1);
    await expectObjects(keys);
    expect(await objectsUnder(dealPrefix(org, s.dealId)), "objects under the deal (no object without its row)").toEqual(keys);
    expect(
      await count(org, "SELECT COUNT(*) AS n FROM deal_activities WHERE deal_id = ? AND type = 'DOCUMENT_UPLOADED'", s.dealId),
      "upload activities",
    ).toBe(1);
    await expectEventsOnce(org, ["deal.document_uploaded"], { "deal.document_uploaded": 1 });
  },
};

interface PhotoUpload extends Written {
  propertyId: string;
}

const photoKeys = async (s: PhotoUpload) => {
  const row = await (await tenantDb(s.owner.organizationId))
    .prepare("SELECT photos FROM properties WHERE id = ?")
    .bind(s.propertyId)
    .first<{ photos: string }>();
  return (JSON.parse(row!.photos) as { key: string }[]).map((p) => p.key).sort();
};

const photoUpload: FaultRow<PhotoUpload> = {
  operation: "property photo upload (2 files)",
  ...keyedWrite<PhotoUpload>(
    async (owner) => ({ propertyId: (await seedProperty(owner)).id }),
    (f, s) =>
      request(f, "POST", `/v1/properties/${s.propertyId}/photos`, {
        token: s.owner.token,
        headers: keyed(s),
        body: photoForm([
          { bytes: PNG_1X1, name: "a.png", type: "image/png" },
          { bytes: PNG_1X1, name: "b.png", type: "image/png" },
        ]),
      }),
  ),
  recovery: UPLOAD_RECOVERY,
  async during(_f, s) {
    await expectObjects(await photoKeys(s));
  },
  async check(_f, s) {
    expectAnswered(s, 201);
    const keys = await photoKeys(s);
    expect(keys.length, "photos of the property").toBe(2);
    await expectObjects(keys);
    expect(
      await objectsUnder(propertyPrefix(s.owner.organizationId, s.propertyId)),
      "objects under the property (no object without its row)",
    ).toEqual(keys);
    await expectEventsOnce(s.owner.organizationId, ["property.photos_uploaded"], { "property.photos_uploaded": 1 });
  },
};

interface DocumentUpload extends Written {
  pdf: Uint8Array;
}

const uploadedRows = (s: DocumentUpload) =>
  keysOf(
    s.owner.organizationId,
    "SELECT file_key AS key FROM documents WHERE organization_id = ? AND source = 'upload'",
    s.owner.organizationId,
  );

/** Issue 44: the file goes to R2 (noted pending first), then its row; a failure between leaves neither for long. */
const documentUpload: FaultRow<DocumentUpload> = {
  operation: "document upload (a PDF)",
  ...keyedWrite<DocumentUpload>(
    async () => ({ pdf: await buildPdf([{}, { rotate: 90 }]) }),
    (f, s) =>
      request(f, "POST", "/api/documents/uploads?title=Faulted", {
        token: s.owner.token,
        headers: { ...keyed(s), "content-type": "application/pdf" },
        raw: s.pdf,
      }),
  ),
  recovery: UPLOAD_RECOVERY,
  async during(_f, s) {
    await expectObjects(await uploadedRows(s));
  },
  async check(_f, s) {
    expectAnswered(s, 201);
    const org = s.owner.organizationId;
    const keys = await uploadedRows(s);
    expect(keys.length, "uploaded documents").toBe(1);
    await expectObjects(keys);
    expect(await objectsUnder(`documents/${org}/`), "objects under the organization's uploads (no object without its row)").toEqual(keys);
    await expectEventsOnce(org, ["document.created", "DOCUMENT_UPLOADED"], { "document.created": 1, DOCUMENT_UPLOADED: 1 });
  },
};

interface TemplateWrite extends Written {
  documentId: string;
  templateId?: string;
}

const FAULT_TEMPLATE = {
  name: "Faulted template",
  roles: [{ key: "buyer", label: "Buyer", role: "signer" }],
  fields: [{ role: "buyer", type: "signature", name: "sig", page: 1, x: 10, y: 80, width: 30, height: 6 }],
};

/** An uploaded document for a template to be made from (and, for a use, the template). */
async function templateSeed(owner: TestPrincipal, withTemplate: boolean): Promise<Omit<TemplateWrite, keyof Written>> {
  const raw = await buildPdf([{}]);
  const doc = await seedCall("POST", "/api/documents/uploads", { token: owner.token, raw, headers: { "content-type": "application/pdf" } });
  const documentId = doc.document.id as string;
  if (!withTemplate) return { documentId };
  const made = await seedCall("POST", "/api/templates", { token: owner.token, body: { documentId, ...FAULT_TEMPLATE } });
  return { documentId, templateId: made.template.id };
}

/** Issue 45: a template keeps its own copy of the PDF: put (noted pending first), then its row. */
const templateCreate: FaultRow<TemplateWrite> = {
  operation: "template create (its own copy of the PDF)",
  ...keyedWrite<TemplateWrite>(
    (owner) => templateSeed(owner, false),
    (f, s) =>
      request(f, "POST", "/api/templates", {
        token: s.owner.token,
        headers: keyed(s),
        body: { documentId: s.documentId, ...FAULT_TEMPLATE },
      }),
  ),
  recovery: UPLOAD_RECOVERY,
  async check(_f, s) {
    expectAnswered(s, 201);
    const org = s.owner.organizationId;
    const keys = await keysOf(org, "SELECT file_key AS key FROM templates WHERE organization_id = ?", org);
    expect(keys.length, "templates").toBe(1);
    await expectObjects(keys);
    expect(await objectsUnder(`templates/${org}/`), "objects under the organization's templates (no object without its row)").toEqual(keys);
    await expectEventsOnce(org, ["template.created"], { "template.created": 1 });
  },
};

/**
 * Issue 45: a use copies the template's PDF for a new document (put, noted pending), then sends it: the document, its
 * envelope and the kept answer in one batch. A retry after a lost reply replays the answer: one document, one envelope.
 */
const templateUse: FaultRow<TemplateWrite> = {
  operation: "template use (a new document with its copy of the PDF, and its envelope) with events",
  ...keyedWrite<TemplateWrite>(
    (owner) => templateSeed(owner, true),
    (f, s) =>
      request(f, "POST", `/api/templates/${s.templateId}/use`, {
        token: s.owner.token,
        headers: keyed(s),
        body: { recipients: { buyer: { name: "Fay Buyer", email: `buyer.${s.key}@example.test` } } },
      }),
  ),
  recovery: UPLOAD_RECOVERY,
  // The envelope's own steps after the copy (its PDF, the links' keys, the publish, the mail) are the send's, which the
  // signing rows fail already; this row fails the use's: the pending note, the copy's put and the one batch.
  steps: {
    pick: (step) => /insert pending_uploads|put documents\/|batch\(insert documents/.test(step.what),
    why: "the use's own steps: the copy noted pending, put, and the batch of document, envelope and kept answer",
  },
  async check(_f, s) {
    expectAnswered(s, 201);
    const org = s.owner.organizationId;
    const keys = await keysOf(org, "SELECT file_key AS key FROM documents WHERE organization_id = ? AND template_id IS NOT NULL", org);
    expect(keys.length, "documents made from the template").toBe(1);
    await expectObjects(keys);
    const uploaded = await keysOf(org, "SELECT file_key AS key FROM documents WHERE organization_id = ?", org);
    expect(await objectsUnder(`documents/${org}/`), "objects under the organization's documents (no object without its row)").toEqual(
      uploaded,
    );
    expect(
      await count(org, "SELECT COUNT(*) AS n FROM envelopes WHERE organization_id = ? AND source = 'template'", org),
      "envelopes",
    ).toBe(1);
    await expectEventsOnce(org, ["envelope.sent", "document.created"], { "envelope.sent": 1, "document.created": 2 });
  },
};

/** Issue 45: a tagged PDF of 21 pages, uploaded with tags=true; its tags are the consumer's (documents/upload-tags.ts). */
const taggedUploadWrite = keyedWrite<DocumentUpload>(
  async () => ({
    pdf: await taggedPdf(
      Array.from({ length: 21 }, (_, i) => ({
        lines: [{ x: 40, y: 700, text: i === 20 ? "Sign {{signature;role=buyer}} here" : `Page ${i + 1}` }],
      })),
    ),
  }),
  (f, s) =>
    request(f, "POST", "/api/documents/uploads?title=Faulted&tags=true", {
      token: s.owner.token,
      headers: { ...keyed(s), "content-type": "application/pdf" },
      raw: s.pdf,
    }),
);

/**
 * The tags consumer's own steps: the tag-free PDF to a new key (noted pending), the batch recording fields, status and
 * key with the old object noted pending, and the old object's delete; the upload before it is the row above's.
 */
const taggedUpload: FaultRow<DocumentUpload> = {
  operation: "tagged upload over 20 pages, then its tags consumer",
  ...taggedUploadWrite,
  steps: {
    pick: (step, all) => all.indexOf(step) > all.findIndex((s) => s.kind === "queue.send") && /^(put |delete \d|batch\()/.test(step.what),
    why: "the consumer's: the new PDF's put, the batch that records it, the old PDF's delete (the pending notes around them are every upload's, failed in the rows above)",
  },
  recovery: UPLOAD_RECOVERY,
  async act(f, s) {
    await taggedUploadWrite.act(f, s);
    // The consumers' first delivery of DOCUMENT_UPLOADED: tags, text, audit.
    await f.events.deliverOnce(f.env);
  },
  async check(_f, s) {
    expectAnswered(s, 201);
    const org = s.owner.organizationId;
    const row = await (await tenantDb(org))
      .prepare("SELECT file_key, fields, tags_status FROM documents WHERE organization_id = ? AND source = 'upload'")
      .bind(org)
      .first<{ file_key: string; fields: string | null; tags_status: string }>();
    expect({ status: row!.tags_status, fields: JSON.parse(row!.fields ?? "null")?.length }, "tags").toEqual({ status: "done", fields: 1 });
    // The tag-free PDF is the one object left: neither the original nor an attempt's copy stays without its row.
    expect(await objectsUnder(`documents/${org}/`), "objects under the organization's uploads").toEqual([row!.file_key]);
    const stored = new Uint8Array(await (await env.FILES.get(row!.file_key))!.arrayBuffer());
    expect((await pdfTool("pdftotext", stored, ["-enc", "UTF-8", "{in}", "-"])).stdout, "the stored PDF's text").not.toContain("{{");
    await expectEventsOnce(org, ["document.created", "DOCUMENT_UPLOADED", "document.updated"], {
      "document.created": 1,
      DOCUMENT_UPLOADED: 1,
      "document.updated": 1,
    });
  },
};

interface Signing {
  owner: TestPrincipal;
  envelopeId: string;
  signerId: string;
  token: string;
  email: string;
  /** What the signer sends to sign (an uploaded PDF's field values); `{action: "sign"}` when absent. */
  signBody?: Record<string, unknown>;
  first?: Answer;
}

const signingCall = (f: FaultEnv, s: Signing, body: unknown, method = "POST") =>
  request(f, method, `/api/public/sign/${encodeURIComponent(s.token)}`, {
    body,
    headers: { "cf-connecting-ip": freshIp(), "user-agent": "fault table" },
  });

/**
 * The steps the issue names for a completing signature: the object's D1 write (its batch), the publish after its
 * answer (the queue send, and the write that marks the event sent), and the seal consumer (its R2 puts, the sealed
 * hash's key in the directory, its D1 update); the consumers' bookkeeping (claims, the audit log, mail) is left out.
 */
const SIGNING_STEPS = (step: Step) =>
  step.kind === "queue.send" ||
  (/^put signed\/|update envelopes|update outbox_events|insert public_keys/.test(step.what) && !/certificate_key/.test(step.what));

/** An envelope of one signer who has consented: of a typed form, or of an uploaded PDF with fields to fill (issue 44). */
async function consentedSigner(uploadedDocument: boolean): Promise<Signing> {
  const owner = await principal();
  const email = `signer.${crypto.randomUUID()}@tenant.test`;
  let sent: { envelopeId: string; links: { signerId: string; url: string }[] };
  if (uploadedDocument) {
    const doc = (
      await seedCall("POST", "/api/documents/uploads?title=Faulted", {
        token: owner.token,
        raw: await buildPdf([{}, { rotate: 90 }]),
        headers: { "content-type": "application/pdf" },
      })
    ).document;
    sent = await seedCall("POST", `/api/documents/${doc.id}/signature`, {
      token: owner.token,
      body: {
        recipients: [{ key: "s", name: "Sig Ner", email, role: "signer" }],
        fields: [
          { recipient: "s", type: "signature", page: 1, x: 10, y: 80, width: 30, height: 8, name: "sig" },
          { recipient: "s", type: "text", page: 2, x: 10, y: 10, width: 40, height: 6, name: "note" },
        ],
      },
    });
  } else {
    const canonical = leaseCanonical({ tenants: [{ name: "Sig Ner", email }] });
    const doc = await seedCall("POST", "/api/documents", { token: owner.token, body: { formKey: canonical.formKey, canonical } });
    sent = await seedCall("POST", `/api/documents/${doc.id}/signature`, {
      token: owner.token,
      body: { signers: [{ name: "Sig Ner", email, role: "tenant" }] },
    });
  }
  const s: Signing = { owner, envelopeId: sent.envelopeId, signerId: sent.links[0]!.signerId, token: tokenOf(sent.links[0]!.url), email };
  const signer = { "cf-connecting-ip": freshIp(), "user-agent": "fault table" };
  const path = `/api/public/sign/${encodeURIComponent(s.token)}`;
  const view = await seedCall("GET", path, { headers: signer });
  const ids = Object.fromEntries(((view.fields ?? []) as { id: string; name: string }[]).map((f) => [f.name, f.id]));
  if (uploadedDocument) s.signBody = { action: "sign", fields: { [ids.sig!]: DRAWN_PNG, [ids.note!]: "Faulted note" } };
  await seedCall("POST", path, { headers: signer, body: { action: "authenticate", codeVerified: true } });
  await seedCall("POST", path, { headers: signer, body: { action: "consent" } });
  return s;
}

const publicSign: FaultRow<Signing> = signingRow("public sign that completes an envelope, then its seal", false, {
  pick: SIGNING_STEPS,
  why: "the object's write, the publish (send, sent mark), the seal consumer (R2 put, key, D1 update)",
});

/**
 * Issue 44: the same for an uploaded PDF whose signer fills fields and draws a signature (its PNG put to R2 before the
 * object's write), the seal drawing the values into their boxes.
 */
const uploadedSign: FaultRow<Signing> = signingRow("public sign of an uploaded PDF with fields (a drawn signature), then its seal", true, {
  // The object's write and the publish are the typed form's row's steps, taken the same way; what is the upload's own
  // is the drawn signature's put before them and the seal that draws the values (its put, its key, its record).
  pick: (step) =>
    /^put envelopes\/.*\/signatures\//.test(step.what) ||
    (SIGNING_STEPS(step) && step.kind !== "queue.send" && !/envelope_signers|^update outbox_events/.test(step.what)),
  why: "the drawn signature's R2 put, the seal consumer (R2 put, key, D1 update); the object's write and the publish as in the row above",
});

function signingRow(operation: string, uploadedDocument: boolean, steps: FaultRow["steps"]): FaultRow<Signing> {
  return {
    operation,
    recovery: "signer retries the sign; cron; queue redelivery (seal, certificate)",
    steps,
    seed: () => consentedSigner(uploadedDocument),
    async act(f, s) {
      await withSignerOn(s.envelopeId, f, async () => {
        s.first = await signingCall(f, s, s.signBody ?? { action: "sign" });
      });
      // The consumers' first delivery of what the signature published (DOCUMENT_SIGNED): seal, certificate, audit.
      await f.events.deliverOnce(f.env);
    },
    async recover(f, s) {
      await withSignerOn(s.envelopeId, f, () =>
        recoverAsProduction(f, async () => {
          // A signer who saw an error signs again; a link that answers 404 signed already (or it was the last step).
          if (s.first?.status !== 200) await signingCall(f, s, s.signBody ?? { action: "sign" });
        }),
      );
    },
    async check(f, s) {
      // The signer was answered: signed, or 503 with Retry-After when the object's step failed (never a 500).
      if (s.first?.status !== 200)
        expect({ status: s.first?.status, retryAfter: s.first?.headers.get("retry-after") }, "the sign's answer").toEqual({
          status: 503,
          retryAfter: "5",
        });
      const org = s.owner.organizationId;
      const envelope = await (await tenantDb(org))
        .prepare("SELECT status, sealed_key, sealed_sha256, certificate_key FROM envelopes WHERE id = ?")
        .bind(s.envelopeId)
        .first<Record<string, string | null>>();
      expect(envelope!.status, "envelope").toBe("completed");
      expect(
        await count(org, "SELECT COUNT(*) AS n FROM envelope_audit WHERE envelope_id = ? AND event = 'signed'", s.envelopeId),
        "signatures",
      ).toBe(1);
      expect(
        await count(org, "SELECT COUNT(*) AS n FROM envelope_signers WHERE envelope_id = ? AND status = 'signed'", s.envelopeId),
        "signed signers",
      ).toBe(1);
      // The last signature's events and the seal's (issue 32): each once, however the steps failed and were retried.
      const SIGNED = ["DOCUMENT_SIGNED", "envelope.signer_signed", "envelope.completed", "envelope.sealed"];
      await expectEventsOnce(org, SIGNED, Object.fromEntries(SIGNED.map((t) => [t, 1])));
      const trail = (await request(f, "GET", `/api/signatures/${s.envelopeId}/audit`, { token: s.owner.token })).body;
      expect(trail.chain, "audit chain").toMatchObject({ valid: true, seal: "valid" });
      // One sealed PDF: the only object under the envelope's key, the bytes the recorded hash names, and it verifies.
      expect(await objectsUnder(`signed/${org}/`), "sealed PDFs").toEqual([envelope!.sealed_key]);
      const sealed = new Uint8Array(await (await env.FILES.get(envelope!.sealed_key!))!.arrayBuffer());
      expect(await sha256Hex(sealed), "sealed hash").toBe(envelope!.sealed_sha256);
      const verified = await request(f, "POST", "/api/public/verify", {
        body: undefined,
        headers: { "content-type": "application/pdf", "cf-connecting-ip": freshIp() },
        raw: sealed,
      });
      expect(verified.body, "verify").toMatchObject({ valid: true, envelopeId: s.envelopeId });
      expect(await objectsUnder(`certificates/${org}/`), "certificates").toEqual([envelope!.certificate_key]);
      // The signed copy reached the signer: after the seal was recorded, and never lost to a consumer retried after it.
      expect(
        (await mailTo(s.email)).filter((m) => m.subject.startsWith("Signed by every party")).length,
        "signed copies mailed",
      ).toBeGreaterThanOrEqual(1);
      // An uploaded PDF's values are in the sealed copy; its one drawn signature is kept once.
      if (s.signBody) {
        const text = (await pdfTool("pdftotext", sealed, ["-enc", "UTF-8", "{in}", "-"])).stdout;
        expect(text, "the sealed copy's values").toContain("Faulted note");
        expect(await objectsUnder(`envelopes/${org}/${s.envelopeId}/signatures/`), "drawn signatures").toHaveLength(1);
      }
    },
  };
}

interface EmbeddedView {
  owner: TestPrincipal;
  envelopeId: string;
  signerId: string;
  /** The last page served, and its answer. */
  page?: Answer;
  view?: Answer;
}

/**
 * Issue 45: an embedded recipient's view URL asked (its key in the directory, the object's audit write, the session
 * in the object's storage), then opened (the signing link's key, the object's write of the link and its audit entry).
 * A failed step answers 503 and uses nothing up; the partner's application asks a new URL, as it would after 5 minutes.
 */
const embeddedView: FaultRow<EmbeddedView> = {
  operation: "embedded view URL asked, then opened (a single-use session, the signing link it mints)",
  recovery: "the client asks a new view URL and opens it",
  async seed() {
    const owner = await principal();
    const { envelopeId, signerId } = await seedHostedSigner(owner, "embedded", seedCall);
    return { owner, envelopeId, signerId };
  },
  async act(f, s) {
    await withSignerOn(s.envelopeId, f, () => viewAndOpen(f, s));
  },
  async recover(f, s) {
    await withSignerOn(s.envelopeId, f, () =>
      recoverAsProduction(f, async () => {
        if (s.page?.status !== 200) await viewAndOpen(f, s);
      }),
    );
  },
  async check(f, s) {
    for (const a of [s.view, s.page]) if (a && a.status >= 300) expect([201, 200, 410, 503], "a failed step's answer").toContain(a.status);
    expect(s.page?.status, "the page").toBe(200);
    const token = /data-token="(sign_[A-Za-z0-9_-]{43})"/.exec(new TextDecoder().decode(s.page!.body as Uint8Array))?.[1];
    const view = await request(f, "GET", `/api/public/sign/${token}`, { headers: { "cf-connecting-ip": freshIp() } });
    expect(view.status, "the page's signing link").toBe(200);
    const org = s.owner.organizationId;
    // Every link a session minted has its audit entry (one batch), and none was minted twice for one session.
    const links = await count(org, "SELECT COUNT(*) AS n FROM signing_links WHERE signer_id = ? AND via = 'embedded'", s.signerId);
    const opened = await count(
      org,
      "SELECT COUNT(*) AS n FROM envelope_audit WHERE envelope_id = ? AND event = 'session_opened'",
      s.envelopeId,
    );
    expect(links, "links minted by sessions").toBe(opened);
    expect(links, "links minted by sessions").toBeGreaterThanOrEqual(1);
    const trail = (await request(f, "GET", `/api/signatures/${s.envelopeId}/audit`, { token: s.owner.token })).body;
    expect(trail.chain.valid, "audit chain").toBe(true);
  },
};

async function viewAndOpen(f: FaultEnv, s: EmbeddedView): Promise<void> {
  s.view = await request(f, "POST", `/api/signatures/${s.envelopeId}/signers/${s.signerId}/view`, {
    token: s.owner.token,
    body: VIEW_BODY,
  });
  if (s.view.status !== 201) return;
  s.page = await request(f, "GET", new URL(s.view.body.url).pathname, { headers: { "cf-connecting-ip": freshIp() } });
}

interface Fanout {
  owner: TestPrincipal;
  boxes: Mailbox[];
  eventIds: string[];
}

const fanout: FaultRow<Fanout> = {
  operation: "webhook fan-out and delivery (3 events, 2 subscribers)",
  recovery: "queue redelivery; cron (stalled deliveries); receiver answers 500 then 200",
  async seed() {
    const owner = await principal();
    // One receiver answers its first three deliveries with 500, the other takes everything.
    const boxes = [await openMailbox({ script: [500, 500, 500] }), await openMailbox()];
    for (const box of boxes) await subscribe(owner, { url: box.url, events: ["contact.created"] });
    const db = createDb(await tenantDb(owner.organizationId));
    const events = [0, 1, 2].map((i) => contactEvent(owner, "contact.created", { id: crypto.randomUUID(), firstName: `F${i}` }));
    await db.batch(stageEvents(db, events) as [Statement, ...Statement[]]);
    return { owner, boxes, eventIds: events.map((e) => e.id) };
  },
  async act(f, s) {
    // The write's send, then one delivery of each queue: the fan-out of the three events, then the six POSTs.
    f.events.held.push(
      ...s.eventIds.map((id, i) => ({ id: `seeded-${i}`, body: { id, organizationId: s.owner.organizationId }, attempts: 1 })),
    );
    await f.events.deliverOnce(f.env);
    await f.deliveries.deliverOnce(f.env);
  },
  async recover(f) {
    await recoverAsProduction(f);
  },
  async check(_f, s) {
    for (const box of s.boxes) {
      const got = await box.received();
      const byId = new Map<string, Set<string>>();
      for (const r of got) byId.set(r.headers["webhook-id"]!, (byId.get(r.headers["webhook-id"]!) ?? new Set()).add(r.body));
      expect([...byId.keys()].sort(), "events received by each subscriber").toEqual([...s.eventIds].sort());
      // A duplicate is the same payload: one body per event id, whatever the number of attempts.
      for (const [id, bodies] of byId) {
        expect(bodies.size, `bodies of ${id}`).toBe(1);
        expect(JSON.parse([...bodies][0]!).id, "payload id").toBe(id);
      }
    }
    const org = s.owner.organizationId;
    expect(
      await count(org, "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE organization_id = ? AND status = 'delivered'", org),
      "deliveries delivered",
    ).toBe(6);
    expect(await count(org, "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE organization_id = ?", org), "deliveries").toBe(6);
  },
};

interface Disable {
  owner: TestPrincipal;
  targetId: string;
  listener: Mailbox;
  message: DeliveryMessage;
}

const NOTICE_SUBJECT = "webhook endpoint";

const autoDisable: FaultRow<Disable> = {
  operation: "webhook endpoint auto-disable (the failure 5 days into its run)",
  recovery: "queue redelivery; cron (unsent event, endpoint still failing, owners' notice due)",
  async seed() {
    const owner = await principal();
    const [failing, listener] = await Promise.all([openMailbox({ fallback: 500 }), openMailbox()]);
    const target = await subscribe(owner, { url: failing.url, events: ["contact.created"] });
    await subscribe(owner, { url: listener.url, events: ["deal.created"] });
    const { env: capture, sent } = capturingEnv();
    const d1 = await tenantDb(owner.organizationId);
    await fanOutEvents(capture, createDb(d1), [contactEvent(owner, "contact.created", { id: crypto.randomUUID() })]);
    // Every delivery to it has failed for six days: its next failure turns it off.
    await d1
      .prepare("UPDATE webhook_subscriptions SET failing_since = ? WHERE id = ?")
      .bind(new Date(Date.now() - 6 * 86_400_000).toISOString(), target.id)
      .run();
    return { owner, targetId: target.id, listener, message: sent[0]! };
  },
  async act(f, s) {
    // One attempt of the delivery: the failure, its log, the disable with its event, the publish, the owners' mail.
    f.deliveries.held.push({ id: "failing-1", body: s.message, attempts: 1 });
    await f.deliveries.deliverOnce(f.env);
  },
  async recover(f) {
    await recoverAsProduction(f);
  },
  async check(_f, s) {
    const org = s.owner.organizationId;
    const row = await (await tenantDb(org))
      .prepare("SELECT enabled, disabled_reason, owners_notice_due_at FROM webhook_subscriptions WHERE id = ?")
      .bind(s.targetId)
      .first<Record<string, unknown>>();
    expect(row, "the endpoint").toMatchObject({
      enabled: 0,
      disabled_reason: "every delivery failed for 5 days",
      owners_notice_due_at: null,
    });
    await expectEventsOnce(org, ["webhook.endpoint_disabled"], { "webhook.endpoint_disabled": 1 });
    // The other endpoint was told, once (a repeat is the same event id and body).
    const got = await s.listener.received();
    expect(new Set(got.map((r) => r.headers["webhook-id"])).size, "events at the other endpoint").toBe(1);
    expect(new Set(got.map((r) => r.body)).size, "bodies at the other endpoint").toBe(1);
    expect(JSON.parse(got[0]!.body), "the event").toMatchObject({
      event: "webhook.endpoint_disabled",
      data: { object: { id: s.targetId, enabled: false } },
    });
    // The owner was mailed, after the commit or by the cron (a reply lost after the send may repeat it).
    expect(
      (await mailTo(`${s.owner.userId}@example.test`)).filter((m) => m.subject.includes(NOTICE_SUBJECT)).length,
      "owner's notices",
    ).toBeGreaterThanOrEqual(1);
  },
};

interface Purge {
  owner: TestPrincipal;
  dealId: string;
  propertyId: string;
  links: string[];
}

const purge: FaultRow<Purge> = {
  operation: "trash purge (a deal with a document, a property with a photo)",
  recovery: "the next cron pass resumes the purge",
  async seed() {
    const owner = await principal();
    const deal = await seedDeal(owner);
    const doc = await seedDocument(owner, deal.id);
    const property = await seedProperty(owner);
    const photo = await seedPhoto(owner, property.id);
    for (const path of [`/v1/deals/${deal.id}`, `/v1/properties/${property.id}`]) await seedCall("DELETE", path, { token: owner.token });
    // Thirty days on: both are due for the purge, the deal first.
    const due = (id: string, ago: number) =>
      tenantDb(owner.organizationId).then((db) =>
        db
          .prepare("UPDATE trash_entries SET restorable_until = ? WHERE record_id = ?")
          .bind(new Date(Date.now() - ago).toISOString(), id)
          .run(),
      );
    await due(deal.id, 2000);
    await due(property.id, 1000);
    return { owner, dealId: deal.id, propertyId: property.id, links: [doc.url, photo.url] };
  },
  async act(f) {
    // The cron's purge task on the organization's shard (src/cron.ts runs it on every shard).
    await purgeTrash(f.env, openShardOf(f.env, 0).db);
  },
  async during(f, s) {
    // Nothing half-purged is readable: not the records, not a restore, not a file through a link handed out before.
    for (const path of [`/v1/deals/${s.dealId}`, `/v1/properties/${s.propertyId}`])
      expect((await request(f, "GET", path, { token: s.owner.token })).status, path).toBe(404);
    for (const path of [`/v1/deals/${s.dealId}/restore`, `/v1/properties/${s.propertyId}/restore`])
      expect((await request(f, "POST", path, { token: s.owner.token })).status, path).toBe(404);
    for (const link of s.links)
      expect((await request(f, "GET", new URL(link).pathname + new URL(link).search)).status, "file link").toBe(404);
    expect((await request(f, "GET", "/v1/trash", { token: s.owner.token })).body.data, "trash list").toEqual([]);
  },
  async recover(f) {
    await recoverAsProduction(f);
  },
  async check(_f, s) {
    const org = s.owner.organizationId;
    expect(
      await count(org, "SELECT COUNT(*) AS n FROM trash_entries WHERE organization_id = ? AND state = 'purged' AND label IS NULL", org),
      "tombstones",
    ).toBe(2);
    expect(await count(org, "SELECT COUNT(*) AS n FROM trash_rows WHERE record_id IN (?, ?)", s.dealId, s.propertyId), "kept rows").toBe(0);
    expect(
      [...(await objectsUnder(dealPrefix(org, s.dealId))), ...(await objectsUnder(propertyPrefix(org, s.propertyId)))],
      "files",
    ).toEqual([]);
  },
};

interface Restore extends Written {
  dealId: string;
}

const restore: FaultRow<Restore> = {
  operation: "trash restore (a deal with a document)",
  ...keyedWrite<Restore>(
    async (owner) => {
      const deal = await seedDeal(owner);
      await seedDocument(owner, deal.id);
      await seedCall("DELETE", `/v1/deals/${deal.id}`, { token: owner.token });
      return { dealId: deal.id };
    },
    (f, s) => request(f, "POST", `/v1/deals/${s.dealId}/restore`, { token: s.owner.token, headers: keyed(s) }),
  ),
  async check(f, s) {
    expectAnswered(s, 200);
    const org = s.owner.organizationId;
    expect(await count(org, "SELECT COUNT(*) AS n FROM deals WHERE id = ?", s.dealId), "the deal").toBe(1);
    expect(await count(org, "SELECT COUNT(*) AS n FROM trash_entries WHERE record_id = ?", s.dealId), "its trash entry").toBe(0);
    await expectDerivedFiguresExact(org);
    await expectEventsOnce(org, ["deal.restored"], { "deal.restored": 1 });
    const docs = (await request(f, "GET", `/v1/deals/${s.dealId}/documents`, { token: s.owner.token })).body.data;
    expect(docs.length, "documents").toBe(1);
    expect((await request(f, "GET", new URL(docs[0].url).pathname + new URL(docs[0].url).search)).status, "the document's link").toBe(200);
  },
};

const dialect = new SQLiteAsyncDialect({ casing: "snake_case" });

/** Every row of `organizationId` on `shard` (the tables a move carries), as JSON per table, in one round trip. */
async function rowsOf(shard: number, organizationId: string): Promise<Record<string, string>> {
  const d1 = shardDatabase(env, shard);
  const statements = MOVED_TABLES.map((t) => {
    const q = dialect.sqlToQuery(
      sql`SELECT json_group_array(r) AS rows FROM (SELECT ${rowJson(t.table)} AS r FROM ${t.table} WHERE ${t.of(organizationId)} ORDER BY ${sql.join(t.key, sql`, `)})`,
    );
    return d1.prepare(q.sql).bind(...q.params);
  });
  const results = await d1.batch<{ rows: string }>(statements);
  return Object.fromEntries(
    MOVED_TABLES.flatMap((t, i) => (results[i]!.results[0]!.rows === "[]" ? [] : [[t.name, results[i]!.results[0]!.rows]])),
  );
}

interface Move {
  mover: TestPrincipal;
  /** Another organization on the source and one on the target, and what each held before. */
  others: { p: TestPrincipal; shard: number; rows: Record<string, string> }[];
  before: Record<string, string>;
  contactId: string;
}

const MOVE_OPTIONS = { drainMs: 0, budgetMs: 120_000 };

/** An organization on each shard, the same for every run of the row: no move of another organization touches them. */
let bystanders: Promise<Move["others"]> | undefined;
async function seedBystanders(): Promise<Move["others"]> {
  const others = [];
  for (const shard of [0, 1]) {
    const p = await principal(shard);
    await seedContact(p, { tags: ["vip"] });
    others.push({ p, shard, rows: await rowsOf(shard, p.organizationId) });
  }
  return others;
}
const tableOf = (what: string, verb: "insert" | "delete") => new RegExp(`${verb} (\\w+)`).exec(what)?.[1];

/**
 * The move's steps that change data: the copy batches (one per table the organization has rows in), the fence (on the
 * shard, then in the directory), the flip, and the drain's delete batches of those tables. Not the progress saves
 * between them (a save that fails is a batch done again, which the copy and the drain both allow), nor the drain's
 * batches of tables the organization has no rows in (they delete nothing).
 */
function moveStep(step: Step, all: Step[]): boolean {
  if (step.binding === "DB") return !/^update shard_moves/.test(step.what);
  const copied = new Set(all.filter((s) => s.binding === "DB_SHARD_1").map((s) => tableOf(s.what, "insert")));
  const cleared = /^batch\(update shard_fences set clearing, delete (\w+)\)$/.exec(step.what)?.[1];
  return cleared === undefined || copied.has(cleared);
}

const shardMove: FaultRow<Move> = {
  operation: "shard move (0 to 1) of an organization, others on both shards",
  ownLane: true,
  recovery: "the operator runs the move again (it resumes)",
  steps: { pick: moveStep, why: "every batch that copies, fences, flips or drains the organization's rows (not the progress saves)" },
  // A failed step ends the move's call, so `refused` is `crash`: nothing runs after it either way.
  modes: ["crash", "lost"],
  concurrency: 4,
  async seed() {
    const mover = await principal(0);
    const contact = await seedContact(mover);
    return { mover, others: await (bystanders ??= seedBystanders()), before: await rowsOf(0, mover.organizationId), contactId: contact.id };
  },
  async act(f, s) {
    await startMove(f.env, s.mover.organizationId, 1);
    await stepMove(f.env, s.mover.organizationId, MOVE_OPTIONS);
  },
  async during(_f, s) {
    // Stopped anywhere, the organization is whole on the shard the directory names.
    const placed = await env.DB.prepare("SELECT shard FROM organization_shards WHERE organization_id = ?")
      .bind(s.mover.organizationId)
      .first<{ shard: number }>();
    expect(await rowsOf(placed!.shard, s.mover.organizationId), "the organization where the directory places it").toEqual(s.before);
  },
  async recover(f, s) {
    f.plan.disarm();
    await startMove(f.env, s.mover.organizationId, 1);
    expect((await stepMove(f.env, s.mover.organizationId, MOVE_OPTIONS)).phase).toBe("done");
  },
  async check(f, s) {
    const placed = await env.DB.prepare("SELECT shard, fenced_at AS fencedAt FROM organization_shards WHERE organization_id = ?")
      .bind(s.mover.organizationId)
      .first<{ shard: number; fencedAt: string | null }>();
    expect(placed, "placement").toEqual({ shard: 1, fencedAt: null });
    expect(await rowsOf(1, s.mover.organizationId), "the organization on its new shard").toEqual(s.before);
    expect(await rowsOf(0, s.mover.organizationId), "left on the old shard").toEqual({});
    for (const o of s.others) expect(await rowsOf(o.shard, o.p.organizationId), `organization on shard ${o.shard}`).toEqual(o.rows);
    // And it works there.
    expect((await request(f, "PUT", `/v1/contacts/${s.contactId}`, { token: s.mover.token, body: { notes: "moved" } })).status).toBe(200);
  },
};

interface Erasure extends Written {
  person: ReturnType<typeof newPerson>;
  contactId: string;
  /** Another contact in the trash whose kept row (its notes) names the person. */
  trashedId: string;
  /** The open envelope the person is to sign, its document, and the person's link to it. */
  envelopeId: string;
  documentId: string;
  signToken: string;
}

/**
 * The person in one of each kind of place an erasure step handles (src/erasure/erase.ts, the steps of an erasure): an open
 * envelope they are to sign (the envelope round: its directory key, the object's void, the R2 deletes, the D1 batch),
 * the generated document it was made from (the documents round: the search index, the D1 batch), another contact's
 * activity and the event payloads (the copies' rewrites), and another contact in the trash whose notes name them (the
 * trash's rewrite). No completed envelope: sealing one would cost each run about as much again, and keeping it is no
 * step to fail (a read counts it; its document leaves the index in the same round); test/erasure/erasure.test.ts keeps one.
 */
async function seedPersonEverywhere(owner: TestPrincipal): Promise<Omit<Erasure, keyof Written>> {
  const person = newPerson();
  const token = owner.token;
  const contact = await seedContact(owner, {
    firstName: person.firstName,
    lastName: person.lastName,
    email: person.email,
    phone: person.phone,
  });
  const neighbour = await seedContact(owner, { firstName: "Nia", lastName: "Neighbour" });
  await seedCall("POST", `/v1/contacts/${neighbour.id}/activities`, {
    token,
    body: { type: "NOTE", description: `Introduced by ${person.fullName}` },
  });
  const trashed = await seedContact(owner, { firstName: "Theo", lastName: "Trashed", notes: `Cousin of ${person.fullName}` });
  await seedCall("DELETE", `/v1/contacts/${trashed.id}`, { token });
  const canonical = leaseCanonical({ tenants: [{ name: person.fullName, email: person.email }] });
  const doc = await seedCall("POST", "/api/documents", { token, body: { formKey: canonical.formKey, canonical } });
  const sent = await seedCall("POST", `/api/documents/${doc.id}/signature`, {
    token,
    body: { signers: [{ name: person.fullName, email: person.email, role: "tenant" }] },
  });
  return {
    person,
    contactId: contact.id,
    trashedId: trashed.id,
    envelopeId: sent.envelopeId,
    documentId: doc.id,
    signToken: tokenOf(sent.links[0]!.url),
  };
}

const erasureRow = async (s: Erasure) =>
  (await tenantDb(s.owner.organizationId))
    .prepare("SELECT state, subject, erased, retained FROM erasures WHERE contact_id = ?")
    .bind(s.contactId)
    .first<{ state: string; subject: string | null; erased: string; retained: string }>();

const signLink = (f: FaultEnv, s: Erasure) =>
  request(f, "GET", `/api/public/sign/${encodeURIComponent(s.signToken)}`, { headers: { "cf-connecting-ip": freshIp() } });

const eraseRequest = keyedWrite<Erasure>(seedPersonEverywhere, (f, s) =>
  request(f, "DELETE", `/v1/contacts/${s.contactId}?erase=true`, { token: s.owner.token, headers: keyed(s) }),
);

const erasure: FaultRow<Erasure> = {
  operation: "erasure of a person (an open envelope, its document, an activity, the trash)",
  ownLane: true,
  ...eraseRequest,
  recovery: "client retry (same Idempotency-Key) finishes the pending erasure; cron; queue redelivery",
  async act(f, s) {
    // The envelope's object voids it on f.env: its steps are the run's, and fail like the others.
    await withSignerOn(s.envelopeId, f, () => eraseRequest.act(f, s));
  },
  async during(f, s) {
    const contact = (await request(f, "GET", `/v1/contacts/${s.contactId}`, { token: s.owner.token })).status;
    // Before `begin` committed nothing was erased (the contact is whole); from then on neither it nor their link shows them.
    if (!(await erasureRow(s))) return expect(contact, "the contact, not erased yet").toBe(200);
    expect(contact, "the contact").toBe(404);
    expect((await signLink(f, s)).status, "the person's signing link").toBe(404);
  },
  async recover(f, s) {
    await withSignerOn(s.envelopeId, f, () => eraseRequest.recover(f, s));
  },
  async check(f, s) {
    expectAnswered(s, 200);
    const org = s.owner.organizationId;
    const token = s.owner.token;
    const row = await erasureRow(s);
    expect({ state: row?.state, subject: row?.subject }, "the erasure").toEqual({ state: "done", subject: null });
    const erased = JSON.parse(row!.erased);
    const retained = JSON.parse(row!.retained);
    // What the run without a fault erases, each counted once: the contact, the mail to them, the envelope and its
    // document, the trashed contact's kept row, five event payloads (the two contacts' contact.created, the
    // document.created, envelope.sent and the erasure's own envelope.voided) and the neighbour's activity.
    expect(erased, "what was erased").toEqual({
      contacts: 1,
      mails: 1,
      envelopes: 1,
      documents: 1,
      trash_rows: 1,
      events: 5,
      activity_texts: 1,
    });
    expect(retained, "what was retained").toEqual([]);
    expect(s.final!.body.data, "the answer").toMatchObject({ id: s.contactId, deleted: true, erased, retained });
    for (const path of [`/v1/contacts/${s.contactId}`, `/api/signatures/${s.envelopeId}`, `/api/documents/${s.documentId}`])
      expect((await request(f, "GET", path, { token })).status, path).toBe(404);
    expect((await signLink(f, s)).status, "the person's signing link").toBe(404);
    // The trashed contact's delete, and the erasure's.
    await expectEventsOnce(org, ["contact.deleted"], { "contact.deleted": 2 });
    // The other record in the trash comes back without the person.
    expect((await request(f, "POST", `/v1/contacts/${s.trashedId}/restore`, { token })).status, "restore").toBe(200);
    expect((await request(f, "GET", `/v1/contacts/${s.trashedId}`, { token })).body.data.notes, "the restored notes").toBe(
      "Cousin of [erased]",
    );
    expect(await whereFound(s.person.needles, retained), "the person in the databases").toEqual([]);
    expect(await filesFound(s.person.needles, retained, org), "the person in the files").toEqual([]);
    // The neighbour and the restored contact; every stored figure moved once.
    expect(
      await count(
        org,
        "SELECT COALESCE(SUM(total), 0) AS n FROM resource_counters WHERE organization_id = ? AND resource = 'contacts'",
        org,
      ),
      "contact total",
    ).toBe(2);
    await expectDerivedFiguresExact(org);
  },
};

// Erasing a contact others were merged into (issue 33): each merged contact's erasure first, then the target's.
interface MergedErasure extends Written {
  person: ReturnType<typeof newPerson>;
  contactId: string;
  mergedId: string;
  mergedEmail: string;
}

const mergedEraseRequest = keyedWrite<MergedErasure>(
  async (owner) => {
    const person = newPerson();
    const contact = await seedContact(owner, {
      firstName: person.firstName,
      lastName: person.lastName,
      email: person.email,
      phone: person.phone,
    });
    const mergedEmail = `twin.${crypto.randomUUID().slice(0, 6)}@merged.test`;
    const merged = await seedContact(owner, {
      firstName: person.firstName,
      lastName: person.lastName,
      email: mergedEmail,
      notes: `Also ${person.phone}`,
    });
    await seedCall("POST", `/v1/contacts/${merged.id}/activities`, {
      token: owner.token,
      body: { type: "NOTE", description: `Wrote to ${mergedEmail}` },
    });
    await seedCall("POST", `/v1/contacts/${contact.id}/merge`, { token: owner.token, body: { sourceIds: [merged.id] } });
    return { person, contactId: contact.id, mergedId: merged.id, mergedEmail };
  },
  (f, s) => request(f, "DELETE", `/v1/contacts/${s.contactId}?erase=true`, { token: s.owner.token, headers: keyed(s) }),
);

const mergedErasure: FaultRow<MergedErasure> = {
  operation: "erasure of a person another contact was merged into",
  ...mergedEraseRequest,
  recovery: "client retry (same Idempotency-Key) finishes both erasures; cron",
  async check(f, s) {
    expectAnswered(s, 200);
    const org = s.owner.organizationId;
    for (const id of [s.contactId, s.mergedId]) {
      expect(
        await count(org, "SELECT COUNT(*) AS n FROM erasures WHERE contact_id = ? AND state = 'done' AND subject IS NULL", id),
        `the erasure of ${id}`,
      ).toBe(1);
      expect(
        await count(org, "SELECT COUNT(*) AS n FROM trash_entries WHERE record_id = ? AND state = 'erased'", id),
        `the tombstone of ${id}`,
      ).toBe(1);
    }
    expect(
      (await request(f, "POST", `/v1/contacts/${s.mergedId}/restore`, { token: s.owner.token })).status,
      "restore of the merged contact",
    ).toBe(404);
    // Two searches: D1 answers at most 100 columns, one per column and needle.
    expect(
      [...(await whereFound(s.person.needles, [])), ...(await whereFound([s.mergedEmail], []))],
      "the person in the databases",
    ).toEqual([]);
    expect(
      await count(
        org,
        "SELECT COALESCE(SUM(total), 0) AS n FROM resource_counters WHERE organization_id = ? AND resource = 'contacts'",
        org,
      ),
      "contact total",
    ).toBe(0);
    await expectDerivedFiguresExact(org);
  },
};

// The organization and its users (issue 32): rows in the directory and copies on the shard, written in turn.

/** The directory's row and the shard's copy of a member or organization, in the columns both carry. */
async function bothCopies(table: "organizations" | "users", id: string, columns: string, organizationId: string) {
  const query = `SELECT ${columns} FROM ${table} WHERE id = ?`;
  const [directory, shard] = await Promise.all([
    env.DB.prepare(query).bind(id).first(),
    (await tenantDb(organizationId)).prepare(query).bind(id).first(),
  ]);
  return { directory, shard };
}

const organizationUpdate: FaultRow<Written> = {
  operation: "organization update (shard, then directory) with its event",
  ...keyedWrite<Written>(
    async () => ({}),
    (f, s) =>
      request(f, "PATCH", "/v1/organization", {
        token: s.owner.token,
        headers: keyed(s),
        body: { displayName: "Faulted Realty", settings: { defaultPhoneRegion: "CA" } },
      }),
  ),
  async check(_f, s) {
    expectAnswered(s, 200);
    const org = s.owner.organizationId;
    const { directory, shard } = await bothCopies("organizations", org, "display_name, time_zone, settings, version", org);
    expect(shard, "the shard's row, changed once").toEqual({
      display_name: "Faulted Realty",
      time_zone: "UTC",
      settings: JSON.stringify({ defaultPhoneRegion: "CA", leadRouting: { mode: "round_robin", zipRules: [] } }),
      version: 2,
    });
    expect(directory, "the directory's copy, brought along").toEqual(shard);
    await expectEventsOnce(org, ["organization.updated"], { "organization.updated": 1 });
  },
};

interface Invite extends Written {
  email: string;
}

const userInvite: FaultRow<Invite> = {
  operation: "user invite (directory, mail, shard) with its event",
  ...keyedWrite<Invite>(
    async () => ({ email: `invitee.${crypto.randomUUID()}@fault.test` }),
    (f, s) => request(f, "POST", "/v1/users", { token: s.owner.token, headers: keyed(s), body: { email: s.email, name: "Fay Invitee" } }),
  ),
  async check(_f, s) {
    expectAnswered(s, 201);
    const org = s.owner.organizationId;
    const id = s.final!.body.data.id as string;
    expect(
      await env.DB.prepare("SELECT COUNT(*) AS n FROM users WHERE organization_id = ? AND email = ?").bind(org, s.email).first("n"),
      "users in the directory",
    ).toBe(1);
    expect(
      await count(org, "SELECT COUNT(*) AS n FROM users WHERE organization_id = ? AND email = ?", org, s.email),
      "copies on the shard",
    ).toBe(1);
    const { directory, shard } = await bothCopies("users", id, "email, name, role, version", org);
    expect(shard).toEqual({ email: s.email, name: "Fay Invitee", role: "agent", version: 1 });
    expect(directory).toEqual(shard);
    // One live invitation: the link of the last invitation mailed.
    const live = (await env.DB.prepare("SELECT token_hash AS h FROM user_invitations WHERE user_id = ?").bind(id).all<{ h: string }>())
      .results;
    const last = (await mailTo(s.email))
      .filter((m) => m.subject.startsWith("You are invited"))
      .at(-1)
      ?.text.match(/\/invite\/(inv_[A-Za-z0-9_-]+)/)?.[1];
    expect(
      live.map((r) => r.h),
      "the live invitation is the last link mailed",
    ).toEqual([await sha256Hex(last ?? "")]);
    await expectEventsOnce(org, ["user.created"], { "user.created": 1 });
  },
};

interface RoleChange extends Written {
  userId: string;
}

const userRoleChange: FaultRow<RoleChange> = {
  operation: "user role change (shard, then directory) with its event",
  ...keyedWrite<RoleChange>(
    async (owner) => ({
      userId: (
        await seedCall("POST", "/v1/users", {
          token: owner.token,
          body: { email: `promoted.${crypto.randomUUID()}@fault.test`, name: "Pro Moted" },
        })
      ).data.id,
    }),
    (f, s) => request(f, "PATCH", `/v1/users/${s.userId}`, { token: s.owner.token, headers: keyed(s), body: { role: "admin" } }),
  ),
  async check(_f, s) {
    expectAnswered(s, 200);
    const org = s.owner.organizationId;
    const { directory, shard } = await bothCopies("users", s.userId, "role, version", org);
    expect(shard, "the shard's copy, changed once").toEqual({ role: "admin", version: 2 });
    expect(directory, "the directory's row (what authentication reads), brought along").toEqual(shard);
    await expectEventsOnce(org, ["user.updated"], { "user.updated": 1 });
  },
};

// ---------------------------------------------------------------------------------------------------------------------
// Issue 32: changes made in the directory (API keys, OAuth grants) whose events live in the shard outbox
// (events/directory-outbox.ts): the directory batch, the shard write under the same id, the publish, the cleanup.

const INTEGRATION_EVENTS = ["integration.connected", "integration.disconnected"];
const DIRECTORY_RECOVERY = "client retry; cron (directory events relay, outbox resend); queue redelivery";

/** The organization's integration events, each as `type object-id`, sorted. */
async function integrationEventsOf(organizationId: string): Promise<string[]> {
  const rows = await (await tenantDb(organizationId))
    .prepare(
      "SELECT type, json_extract(data, '$.object.id') AS object FROM outbox_events WHERE organization_id = ? AND type LIKE 'integration.%'",
    )
    .bind(organizationId)
    .all<{ type: string; object: string }>();
  return rows.results.map((r) => `${r.type} ${r.object}`).sort();
}

/** Nothing of the organization is left in the directory on its way to the shard. */
async function expectNothingPending(organizationId: string): Promise<void> {
  const left = await env.DB.prepare("SELECT COUNT(*) AS n FROM directory_outbox WHERE organization_id = ?")
    .bind(organizationId)
    .first<{ n: number }>();
  expect(left!.n, "directory events still pending").toBe(0);
}

const keyIdsOf = async (organizationId: string) =>
  (
    await env.DB.prepare("SELECT id FROM api_keys WHERE organization_id = ? ORDER BY id").bind(organizationId).all<{ id: string }>()
  ).results.map((r) => r.id);

interface KeyWrite {
  owner: TestPrincipal;
  keyId?: string;
  first?: Answer;
  final?: Answer;
}

const createKey = (f: FaultEnv, s: KeyWrite) =>
  request(f, "POST", "/v1/api-keys", { token: s.owner.token, body: { name: "Faulted key", permissions: ["contacts:read"] } });

const apiKeyCreate: FaultRow<KeyWrite> = {
  operation: "API key create (directory batch, then its event in the shard)",
  recovery: DIRECTORY_RECOVERY,
  seed: async () => ({ owner: await principal() }),
  ...retriedRequest(createKey),
  async check(_f, s) {
    expectAnswered(s as Written, 201);
    const org = s.owner.organizationId;
    const keys = await keyIdsOf(org);
    // A reply lost after the directory committed leaves that key too (its answer, with the key, never arrived).
    expect(keys, "the keys").toContain(s.final!.body.data.id);
    expect(keys.length, "the keys").toBeLessThanOrEqual(2);
    expect(await integrationEventsOf(org), "one integration.connected per key, and nothing else").toEqual(
      keys.map((id) => `integration.connected ${id}`).sort(),
    );
    await expectNothingPending(org);
    await expectEventsOnce(org, INTEGRATION_EVENTS, { "integration.connected": keys.length, "integration.disconnected": 0 });
  },
};

const deleteKey = (f: FaultEnv, s: KeyWrite) => request(f, "DELETE", `/v1/api-keys/${s.keyId}`, { token: s.owner.token });

const apiKeyDelete: FaultRow<KeyWrite> = {
  operation: "API key delete (directory batch, then its event in the shard)",
  recovery: DIRECTORY_RECOVERY,
  async seed() {
    const owner = await principal();
    return {
      owner,
      keyId: (await seedCall("POST", "/v1/api-keys", { token: owner.token, body: { name: "Doomed key", permissions: ["contacts:read"] } }))
        .data.id,
    };
  },
  ...retriedRequest(deleteKey),
  async check(_f, s) {
    // The retry of a delete whose reply was lost finds the key gone.
    expect([204, 404], JSON.stringify(s.final!.body)).toContain(s.final!.status);
    const org = s.owner.organizationId;
    expect(await keyIdsOf(org), "the keys").toEqual([]);
    expect(await integrationEventsOf(org)).toEqual([`integration.connected ${s.keyId}`, `integration.disconnected ${s.keyId}`]);
    await expectNothingPending(org);
    await expectEventsOnce(org, INTEGRATION_EVENTS, { "integration.connected": 1, "integration.disconnected": 1 });
  },
};

interface FieldDelete {
  owner: TestPrincipal;
  fieldId: string;
  contactIds: string[];
  first?: Answer;
  final?: Answer;
}

const deleteField = (f: FaultEnv, s: FieldDelete) => request(f, "DELETE", `/v1/custom-fields/${s.fieldId}`, { token: s.owner.token });

/** Custom fields (issue 33): a delete marks the definition, sweeps its values off the records, then removes its row. */
const customFieldDelete: FaultRow<FieldDelete> = {
  operation: "custom field delete (mark, sweep the values, remove the definition)",
  recovery: "client retry (finishes the cut-short delete, answers 404)",
  async seed() {
    const owner = await principal();
    const fieldId = (
      await seedCall("POST", "/v1/custom-fields", {
        token: owner.token,
        body: { object: "contact", key: "budget", label: "Budget", type: "number" },
      })
    ).data.id;
    await seedCall("POST", "/v1/custom-fields", {
      token: owner.token,
      body: { object: "contact", key: "kept", label: "Kept", type: "text" },
    });
    const contactIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const body = {
        firstName: "Field",
        lastName: `Fault ${i}`,
        email: `field.${crypto.randomUUID()}@example.test`,
        customFields: { budget: i + 1, kept: `k${i}` },
      };
      contactIds.push((await seedCall("POST", "/v1/contacts", { token: owner.token, body })).data.id);
    }
    return { owner, fieldId, contactIds };
  },
  ...retriedRequest(deleteField),
  async check(_f, s) {
    // The retry of a delete whose reply was lost, or which was cut short, finds the field gone (and finishes it).
    expect([204, 404], JSON.stringify(s.final!.body)).toContain(s.final!.status);
    const org = s.owner.organizationId;
    expect(
      await count(org, "SELECT COUNT(*) AS n FROM custom_field_definitions WHERE organization_id = ? AND key = 'budget'", org),
      "the definition",
    ).toBe(0);
    const values = await (await tenantDb(org))
      .prepare("SELECT custom_fields AS v FROM contacts WHERE organization_id = ? ORDER BY last_name")
      .bind(org)
      .all<{ v: string }>();
    expect(
      values.results.map((r) => JSON.parse(r.v)),
      "the values",
    ).toEqual([{ kept: "k0" }, { kept: "k1" }, { kept: "k2" }]);
    await expectDerivedFiguresExact(org);
  },
};

/** A form POST to an OAuth endpoint on `f`, from an address of its own (they are limited per address). */
const oauthForm = (f: FaultEnv, path: string, form: Record<string, string>) =>
  request(f, "POST", path, {
    raw: new TextEncoder().encode(new URLSearchParams(form).toString()),
    headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": freshIp() },
  });

/** An authorization code of the bearer-session shortcut, and its verifier. */
async function oauthCode(f: FaultEnv, owner: TestPrincipal): Promise<{ code: string; verifier: string }> {
  const verifier = toBase64Url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = toBase64Url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
  const query = new URLSearchParams({
    client_id: OAUTH_CLIENT,
    redirect_uri: OAUTH_REDIRECT,
    response_type: "code",
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "fault",
  });
  const res = await request(f, "GET", `/oauth/authorize?${query}`, { token: owner.token });
  expect(res.status, "authorization").toBe(302);
  return { code: new URL(res.headers.get("location")!).searchParams.get("code")!, verifier };
}

const OAUTH_CLIENT = "mcp-dev";
const OAUTH_REDIRECT = "http://127.0.0.1:4321/callback";
const exchangeCode = (f: FaultEnv, c: { code: string; verifier: string }) =>
  oauthForm(f, "/oauth/token", {
    grant_type: "authorization_code",
    code: c.code,
    redirect_uri: OAUTH_REDIRECT,
    client_id: OAUTH_CLIENT,
    code_verifier: c.verifier,
  });

/** Whether the client is connected to the organization (a row), and whether a live family keeps it so. */
async function connectionOf(organizationId: string) {
  const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM oauth_connections WHERE organization_id = ? AND client_id = ?")
    .bind(organizationId, OAUTH_CLIENT)
    .first<{ n: number }>();
  const live = await env.DB.prepare(
    "SELECT COUNT(*) AS n FROM oauth_refresh_tokens WHERE organization_id = ? AND client_id = ? AND revoked_at IS NULL AND used_at IS NULL",
  )
    .bind(organizationId, OAUTH_CLIENT)
    .first<{ n: number }>();
  return { connected: row!.n > 0, live: live!.n > 0 };
}

interface Grant {
  owner: TestPrincipal;
  code?: { code: string; verifier: string };
  refreshToken?: string;
  first?: Answer;
  final?: Answer;
}

const oauthConnect: FaultRow<Grant> = {
  operation: "OAuth code exchange, the client's first grant (integration.connected)",
  recovery: "cron (directory events relay, outbox resend); queue redelivery",
  async seed() {
    const owner = await principal();
    return { owner, code: await oauthCode(faultEnv(), owner) };
  },
  async act(f, s) {
    s.first = await exchangeCode(f, s.code!);
  },
  async recover(f) {
    // A client whose exchange failed starts a new authorization; presenting the code again would be a reuse.
    await recoverAsProduction(f);
  },
  async check(_f, s) {
    const org = s.owner.organizationId;
    const { connected, live } = await connectionOf(org);
    expect(connected, "connected exactly when a grant is live").toBe(live);
    expect(await integrationEventsOf(org)).toEqual(live ? [`integration.connected ${OAUTH_CLIENT}`] : []);
    await expectNothingPending(org);
    await expectEventsOnce(org, INTEGRATION_EVENTS, { "integration.connected": live ? 1 : 0, "integration.disconnected": 0 });
  },
};

const revokeGrant = (f: FaultEnv, s: Grant) => oauthForm(f, "/oauth/revoke", { token: s.refreshToken!, client_id: OAUTH_CLIENT });

const oauthDisconnect: FaultRow<Grant> = {
  operation: "OAuth revocation of the client's last grant (integration.disconnected)",
  recovery: DIRECTORY_RECOVERY,
  async seed() {
    const owner = await principal();
    const quiet = faultEnv();
    const answer = await exchangeCode(quiet, await oauthCode(quiet, owner));
    expect(answer.status, "the grant").toBe(200);
    await drainQueues(quiet);
    return { owner, refreshToken: answer.body.refresh_token as string };
  },
  ...retriedRequest(revokeGrant),
  async check(_f, s) {
    expect(s.final!.status).toBe(200);
    const org = s.owner.organizationId;
    expect(await connectionOf(org), "the connection").toEqual({ connected: false, live: false });
    expect(await integrationEventsOf(org)).toEqual([`integration.connected ${OAUTH_CLIENT}`, `integration.disconnected ${OAUTH_CLIENT}`]);
    await expectNothingPending(org);
    await expectEventsOnce(org, INTEGRATION_EVENTS, { "integration.connected": 1, "integration.disconnected": 1 });
  },
};

interface BookImport extends Written {
  csv: Uint8Array;
}

/**
 * Rows of the import row: two chunks (500, then 10 with each of the three batch tags), each contact tagged, so counts,
 * tags and facets all move. Each of its 60 runs imports them all: 700 rows (a second chunk of 200) took the same steps
 * at a third more rows.
 */
const IMPORTED = 510;

/**
 * Issue 33: an import of a Follow Up Boss-shaped CSV, failed at each step (the upload's pending note, R2 put and
 * row, each chunk's batch and its next message, the completion's batch, the source's delete, the event's publish).
 * However it fails, each person is one contact, counted once, and the source leaves R2.
 */
const bookImport: FaultRow<BookImport> = {
  operation: "import of 510 contacts (CSV upload, 2 chunks, completion)",
  recovery: "client retry (same Idempotency-Key); queue redelivery; cron re-sends a stalled import",
  async seed() {
    const owner = await principal();
    const rows = Array.from(
      { length: IMPORTED },
      (_, i) => `Imp,Person ${i},imp.${i}.${crypto.randomUUID().slice(0, 8)}@example.test,"imported, batch-${i % 3}",Lead`,
    );
    return {
      owner,
      key: crypto.randomUUID(),
      csv: new TextEncoder().encode(["First Name,Last Name,Email 1,Tags,Stage", ...rows].join("\r\n")),
    };
  },
  ...retriedRequest<BookImport>(async (f, s) => {
    const answer = await request(f, "POST", "/v1/imports?kind=contacts", {
      token: s.owner.token,
      raw: s.csv,
      headers: { ...keyed(s), "content-type": "text/csv", "content-length": String(s.csv.length) },
    });
    await drainQueues(f);
    return answer;
  }),
  async check(_f, s) {
    expectAnswered(s, 202);
    const org = s.owner.organizationId;
    expect(await count(org, "SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ?", org), "contacts").toBe(IMPORTED);
    expect(
      await count(org, "SELECT COUNT(*) AS n FROM imports WHERE organization_id = ? AND status <> 'completed'", org),
      "imports not completed",
    ).toBe(0);
    expect(
      await count(org, "SELECT COALESCE(SUM(created), 0) AS n FROM imports WHERE organization_id = ?", org),
      "created, over every import",
    ).toBe(IMPORTED);
    expect(await count(org, "SELECT contact_count AS n FROM tags WHERE organization_id = ? AND name = 'imported'", org), "tag count").toBe(
      IMPORTED,
    );
    expect(
      await count(
        org,
        "SELECT COALESCE(SUM(total), 0) AS n FROM resource_counters WHERE organization_id = ? AND resource = 'contacts'",
        org,
      ),
      "contact total",
    ).toBe(IMPORTED);
    await expectDerivedFiguresExact(org);
    const imports = await count(org, "SELECT COUNT(*) AS n FROM imports WHERE organization_id = ?", org);
    await expectEventsOnce(org, ["import.completed", "contact.created"], { "import.completed": imports, "contact.created": 0 });
    expect(
      (await env.FILES.list({ prefix: `imports/${org}/` })).objects.map((o) => o.key),
      "sources left in R2",
    ).toEqual([]);
  },
};

interface ExpiredOffer {
  owner: TestPrincipal;
  contactId: string;
}

/** Issue 46: a first-to-claim offer nobody claimed, moved to its fallback by the cron's pass (one guarded batch). */
const expiredOffer: FaultRow<ExpiredOffer> = {
  operation: "first-to-claim offer timed out to its fallback user (the cron's pass) with its event",
  recovery: "the next cron pass moves it",
  async seed() {
    const owner = await principal();
    const agent = await createPrincipal({ organizationId: owner.organizationId, role: "agent" });
    await seedCall("PATCH", "/v1/organization", {
      token: owner.token,
      body: {
        settings: {
          leadRouting: {
            mode: "rules",
            rules: [],
            default: { firstToClaim: { userIds: [agent.userId], fallback: { userId: owner.userId } } },
          },
        },
      },
    });
    const lead = await seedCall("POST", "/v1/leads", {
      token: owner.token,
      body: { source: "WEBSITE", person: { emails: [`offer.${crypto.randomUUID()}@fault.test`] } },
    });
    const contactId = lead.data.contactId as string;
    // Its 30 minutes are over.
    await (await tenantDb(owner.organizationId))
      .prepare("UPDATE contact_routing SET offer_expires_at = ? WHERE contact_id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), contactId)
      .run();
    return { owner, contactId };
  },
  async act(f) {
    await routeExpiredOffers(f.env, openShardOf(f.env, 0).db, new Date());
  },
  async during(f, s) {
    // Offered and unassigned, or moved whole: never a half move.
    const routing = (await request(f, "GET", `/v1/contacts/${s.contactId}/routing`, { token: s.owner.token })).body.data;
    const contact = (await request(f, "GET", `/v1/contacts/${s.contactId}`, { token: s.owner.token })).body.data;
    expect([routing.state, contact.assignedTo, routing.trail.length]).toEqual(
      routing.state === "offered" ? ["offered", null, 1] : ["assigned", s.owner.userId, 2],
    );
  },
  async recover(f) {
    await recoverAsProduction(f);
  },
  async check(_f, s) {
    const org = s.owner.organizationId;
    expect(
      await count(org, "SELECT COUNT(*) AS n FROM contacts WHERE id = ? AND assigned_to = ?", s.contactId, s.owner.userId),
      "assigned to the fallback",
    ).toBe(1);
    expect(
      await count(
        org,
        "SELECT COUNT(*) AS n FROM contact_routing, json_each(trail) t WHERE contact_id = ? AND json_extract(t.value, '$.event') = 'offer_expired'",
        s.contactId,
      ),
      "one offer_expired step",
    ).toBe(1);
    await expectDerivedFiguresExact(org);
    await expectEventsOnce(org, ["contact.assigned"], { "contact.assigned": 1 });
  },
};

interface DueTasks {
  owner: TestPrincipal;
  ids: string[];
}

/** The cron's due pass (issue 46): task.due staged with the mark, then published; a fault leaves none announced twice or never. */
const taskDuePass: FaultRow<DueTasks> = {
  operation: "the cron's due-task pass (three tasks due)",
  recovery: "the next cron pass announces what was not; the outbox resend sends what was staged",
  async seed() {
    const owner = await principal();
    const ids: string[] = [];
    for (const at of ["2020-01-01T09:00:00Z", "2020-01-01T10:00:00Z", "2020-01-02"])
      ids.push(
        (
          await seedCall("POST", "/v1/tasks", {
            token: owner.token,
            body: { title: `Due ${at}`, dueAt: at.length > 10 ? at : `${at}T08:00:00Z` },
          })
        ).data.id,
      );
    return { owner, ids };
  },
  async act(f) {
    await announceDueTasks(f.env, openShardOf(f.env, 0).db, new Date());
  },
  async recover(f) {
    await recoverAsProduction(f);
  },
  async check(_f, s) {
    const org = s.owner.organizationId;
    await expectEventsOnce(org, ["task.due"], { "task.due": 3 });
    expect(
      await count(org, "SELECT COUNT(*) AS n FROM tasks WHERE organization_id = ? AND due_announced_at IS NOT NULL", org),
      "tasks marked announced",
    ).toBe(3);
  },
};

// Action plans (issue 46): the cron's step pass mailing a plan's e-mail step, failed at each of its writes (the claim,
// the mail kept by the log provider, the batch that records it done and logs it, the events' send). Recovered by the
// next passes once the claim's lease has run out: the contact is mailed exactly once, the mail logged once, the plan
// completed.
const planEmailStep: FaultRow<{ owner: TestPrincipal; email: string; contactId: string; planId: string }> = {
  operation: "action plan e-mail step (cron pass)",
  recovery: "the next cron passes (a released or stale claim is taken again; the mail's idempotency key)",
  async seed() {
    const owner = await principal(0);
    const email = `plan.${crypto.randomUUID()}@fault.test`;
    const contact = await seedCall("POST", "/v1/contacts", { token: owner.token, body: { firstName: "Fay", lastName: "Lead", email } });
    const plan = await seedCall("POST", "/v1/action-plans", {
      token: owner.token,
      body: {
        name: "Faulted plan",
        steps: [{ type: "send_email", delay: "PT0S", email: { subject: "Hello {{contact.firstName}}", body: "Hi" } }],
      },
    });
    await seedCall("POST", `/v1/action-plans/${plan.data.id}/enrollments`, { token: owner.token, body: { contactId: contact.data.id } });
    return { owner, email, contactId: contact.data.id, planId: plan.data.id };
  },
  async act(f) {
    await runDuePlanSteps(f.env, openShardOf(f.env, 0).db, new Date(Date.now() + 60_000));
  },
  async recover(f) {
    await recoverAsProduction(f);
    // Past the claim's lease (10 minutes), twice: the second pass finds nothing left to do.
    for (let i = 0; i < 2; i++) {
      later(15 * 60_000);
      await runDuePlanSteps(f.env, openShardOf(f.env, 0).db, new Date());
      await drainQueues(f);
    }
  },
  async check(_f, s) {
    expect((await mailTo(s.email)).map((m) => m.subject)).toEqual(["Hello Fay"]);
    const org = s.owner.organizationId;
    expect(
      await count(org, "SELECT COUNT(*) AS n FROM contact_communications WHERE organization_id = ? AND contact_id = ?", org, s.contactId),
    ).toBe(1);
    expect(await count(org, "SELECT COUNT(*) AS n FROM plan_enrollments WHERE organization_id = ? AND status = 'completed'", org)).toBe(1);
    expect(await count(org, "SELECT COUNT(*) AS n FROM plan_step_runs WHERE organization_id = ? AND state = 'done'", org)).toBe(1);
  },
};

export const FAULTS: FaultRow[] = [
  planEmailStep,
  contactCreate,
  leadIntake,
  leadReview,
  formLead,
  reviewAccept,
  dealMove,
  propertyPrice,
  dealUpload,
  photoUpload,
  documentUpload,
  templateCreate,
  templateUse,
  taggedUpload,
  publicSign,
  uploadedSign,
  embeddedView,
  fanout,
  autoDisable,
  purge,
  restore,
  shardMove,
  erasure,
  mergedErasure,
  organizationUpdate,
  userInvite,
  userRoleChange,
  apiKeyCreate,
  apiKeyDelete,
  oauthConnect,
  oauthDisconnect,
  customFieldDelete,
  bookImport,
  taskDuePass,
  expiredOffer,
];
