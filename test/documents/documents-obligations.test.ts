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
import { noteOverdueObligations, obligationSyncConsumer } from "../../src/documents/obligations";
import type { DomainEvent } from "../../src/events/event";
import worker from "../../src/index";
import { call, json } from "../helpers/client";
import { createDeal } from "../helpers/deals";
import { allOnShards, createDocument, leaseCanonical, sendForSignature, signAll, tokenOf } from "../helpers/documents";
import { createPrincipal, tenantDb } from "../helpers/factories";

type Day = { year: number; month: number; day: number };
const day = (iso: string): Day => ({ year: Number(iso.slice(0, 4)), month: Number(iso.slice(5, 7)), day: Number(iso.slice(8, 10)) });
/** Today (UTC) moved by `n` days, as YYYY-MM-DD: the list computes urgency in UTC days. */
const today = (n = 0) => {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + n)).toISOString().slice(0, 10);
};

/** A lease with the given dates (YYYY-MM-DD); deposit and end are left out when not given. */
function lease(dates: { commencement: string; end?: string; depositDue?: string }, cents = { rent: 250_000, deposit: 300_000 }) {
  const canonical = leaseCanonical() as Record<string, any>;
  canonical.lease.term = { commencement: day(dates.commencement), ...(dates.end ? { end: day(dates.end) } : {}) };
  canonical.lease.monthlyRent = { cents: cents.rent };
  canonical.lease.deposit = { cents: cents.deposit, ...(dates.depositDue ? { dueDate: day(dates.depositDue) } : {}) };
  return canonical;
}

async function obligations(token: string, query = "") {
  const res = await call("GET", `/api/documents/obligations${query}`, { token });
  expect(res.status).toBe(200);
  const list = (await json(res)).obligations as {
    id: string;
    documentId: string;
    dealId: string | null;
    type: string;
    description: string | null;
    dueDate: string;
    amountCents: number | null;
    urgency: string;
  }[];
  // Due dates are ISO 8601 timestamps (spec: Obligation), the start of the UTC day; the assertions below compare days.
  for (const o of list) expect(o.dueDate).toMatch(/^\d{4}-\d{2}-\d{2}T00:00:00\.000Z$/);
  return list.map((o) => ({ ...o, dueDate: o.dueDate.slice(0, 10) }));
}
const brief = (list: { type: string; dueDate: string }[]) => list.map((o) => `${o.type} ${o.dueDate}`);

const syncState = (documentId: string) =>
  allOnShards<{ type: string; due_date: string; sync_count: number; sync_event_id: string | null; synced_at: string }>(
    "SELECT type, due_date, sync_count, sync_event_id, synced_at FROM document_obligations WHERE document_id = ? ORDER BY type",
    documentId,
  );

describe("obligations derived from a lease", () => {
  it("deposit due, term expiry and the renewal notice deadline 60 days before the end, with their amounts", async () => {
    const { token } = await createPrincipal();
    // Past dates: overdue ones are listed whatever withinDays is. 2024 is a leap year: 60 days before 29 February is 31 December.
    const doc = await createDocument(token, lease({ depositDue: "2023-02-15", commencement: "2023-03-01", end: "2024-02-29" }));
    const list = await obligations(token, "?withinDays=0");
    expect(list).toEqual([
      {
        id: expect.any(String),
        documentId: doc.id,
        dealId: null,
        type: "deposit_due",
        description: expect.any(String),
        dueDate: "2023-02-15",
        amountCents: 300_000,
        urgency: "overdue",
      },
      {
        id: expect.any(String),
        documentId: doc.id,
        dealId: null,
        type: "renewal",
        description: expect.stringContaining("60 days"),
        dueDate: "2023-12-31",
        amountCents: null,
        urgency: "overdue",
      },
      {
        id: expect.any(String),
        documentId: doc.id,
        dealId: null,
        type: "expiry",
        description: expect.any(String),
        dueDate: "2024-02-29",
        amountCents: null,
        urgency: "overdue",
      },
    ]);
    expect(new Set(list.map((o) => o.id)).size).toBe(3);
  });

  it("a lease without an end has only its deposit due, one without a deposit due date or an end none; a free-form document none", async () => {
    const { token } = await createPrincipal();
    const doc = await createDocument(token, lease({ commencement: today(5), depositDue: today(3) }));
    await createDocument(token, lease({ commencement: today(5) }));
    await createDocument(token, {
      schemaVersion: 1,
      formKey: "generic/free-form",
      title: "Memo",
      body: "Due tomorrow.",
      provenance: { aiDrafted: false },
    });
    expect(await obligations(token)).toEqual([
      {
        id: expect.any(String),
        documentId: doc.id,
        dealId: null,
        type: "deposit_due",
        description: expect.any(String),
        dueDate: today(3),
        amountCents: 300_000,
        urgency: "due_soon",
      },
    ]);
  });

  it("every obligation's type is one of the spec's five (closing, condition_waiver, deposit_due, expiry, renewal); the commencement is none", async () => {
    const { token } = await createPrincipal();
    const leases = [
      lease({ commencement: today(-40), depositDue: today(-50), end: today(-1) }),
      lease({ commencement: today(0), depositDue: today(0), end: today(60) }),
      lease({ commencement: today(10) }),
      lease({ commencement: today(200), end: today(365) }),
    ];
    for (const canonical of leases) await createDocument(token, canonical);
    const list = await obligations(token, "?withinDays=365");
    expect(list.length).toBe(8);
    for (const o of list) expect(["closing", "condition_waiver", "deposit_due", "expiry", "renewal"]).toContain(o.type);
    // The tenancy's first day is no obligation of the spec's list: nothing falls due on a commencement unless another duty does.
    expect(list.filter((o) => [today(-40), today(10), today(200)].includes(o.dueDate))).toEqual([]);
  });
});

describe("GET /api/documents/obligations", () => {
  it("withinDays: default 30, 0 and 365 accepted, both ends inclusive", async () => {
    const { token } = await createPrincipal();
    // deposit +30, renewal +365 (end − 60), expiry +425.
    await createDocument(token, lease({ depositDue: today(30), commencement: today(31), end: today(425) }));
    expect(brief(await obligations(token))).toEqual([`deposit_due ${today(30)}`]);
    expect(brief(await obligations(token, "?withinDays=30"))).toEqual([`deposit_due ${today(30)}`]);
    expect(await obligations(token, "?withinDays=29")).toEqual([]);
    expect(await obligations(token, "?withinDays=0")).toEqual([]);
    expect(brief(await obligations(token, "?withinDays=364"))).toEqual([`deposit_due ${today(30)}`]);
    expect(brief(await obligations(token, "?withinDays=365"))).toEqual([`deposit_due ${today(30)}`, `renewal ${today(365)}`]);
  });

  it("answers 400 invalid_request for withinDays over 365, negative, not an integer, or an unknown parameter", async () => {
    const { token } = await createPrincipal();
    for (const query of [
      "withinDays=366",
      "withinDays=-1",
      "withinDays=abc",
      "withinDays=1.5",
      "withinDays=",
      "withinDays=1e2",
      "within=3",
    ]) {
      const res = await call("GET", `/api/documents/obligations?${query}`, { token });
      expect(res.status, query).toBe(400);
      const body = await json(res);
      expect(body, query).toEqual({
        error: "invalid_request",
        issues: [{ field: query.split("=")[0], path: [query.split("=")[0]], code: expect.any(String), message: expect.any(String) }],
      });
    }
  });

  it("urgency at its boundaries (overdue before today, due_soon today to today+7, pending after), soonest first across documents", async () => {
    const { token } = await createPrincipal();
    // Renewal notices 60 days before the end: today(0) and today(8); the expiries fall past withinDays.
    const later = await createDocument(token, lease({ depositDue: today(7), commencement: today(1), end: today(68) }));
    const earlier = await createDocument(token, lease({ depositDue: today(-1), commencement: today(-30), end: today(60) }));
    const list = await obligations(token);
    expect(list.map((o) => [o.documentId, o.dueDate, o.urgency])).toEqual([
      [earlier.id, today(-1), "overdue"],
      [earlier.id, today(0), "due_soon"],
      [later.id, today(7), "due_soon"],
      [later.id, today(8), "pending"],
    ]);
  });

  it("shows another organization none of them", async () => {
    const owner = await createPrincipal();
    const stranger = await createPrincipal();
    await createDocument(owner.token, lease({ depositDue: today(-3), commencement: today(2), end: today(200) }));
    expect(await obligations(owner.token, "?withinDays=365")).toHaveLength(3);
    expect(await obligations(stranger.token, "?withinDays=365")).toEqual([]);
  });
});

describe("documents linked to a deal", () => {
  it("carry the deal's id on the document and on each obligation", async () => {
    const { token } = await createPrincipal();
    const deal = await createDeal(token);
    const canonical = lease({ depositDue: today(3), commencement: today(10), end: today(70) });
    const res = await call("POST", "/api/documents", { token, body: { formKey: "on/standard-lease", canonical, dealId: deal.id } });
    expect(res.status).toBe(201);
    const doc = await json(res);
    expect(doc.dealId).toBe(deal.id);
    expect((await json(await call("GET", `/api/documents/${doc.id}`, { token }))).dealId).toBe(deal.id);
    expect((await obligations(token)).map((o) => o.dealId)).toEqual([deal.id, deal.id]);
    expect(((await createDocument(token, canonical)) as { dealId?: unknown }).dealId).toBeNull();
  });

  it("refuse another organization's deal exactly as an unknown one: 400 naming dealId, nothing stored", async () => {
    const owner = await createPrincipal();
    const stranger = await createPrincipal();
    const foreign = await createDeal(owner.token);
    const body = (dealId: string) => ({ formKey: "on/standard-lease", canonical: lease({ commencement: today(3) }), dealId });
    const a = await call("POST", "/api/documents", { token: stranger.token, body: body(foreign.id) });
    const b = await call("POST", "/api/documents", { token: stranger.token, body: body("00000000-0000-4000-8000-0000000000d1") });
    expect(a.status).toBe(400);
    expect(b.status).toBe(400);
    const shown = await json(a);
    expect(shown).toEqual({
      error: "invalid_request",
      issues: [{ field: "dealId", path: ["dealId"], code: "invalid_reference", message: "No deal with this id in your organization" }],
    });
    expect(await json(b)).toEqual(shown);
    expect(
      await (await tenantDb(stranger.organizationId))
        .prepare("SELECT COUNT(*) AS n FROM documents WHERE organization_id = ?")
        .bind(stranger.organizationId)
        .first("n"),
    ).toBe(0);
    expect(await obligations(stranger.token, "?withinDays=365")).toEqual([]);
    expect((await json(await call("GET", "/api/documents/usage", { token: stranger.token }))).used).toBe(0);
  });
});

describe("re-sync on DOCUMENT_SIGNED", () => {
  it("a signed envelope re-syncs the document's obligations exactly once, however often its event is delivered", async () => {
    const { token, organizationId } = await createPrincipal();
    const doc = await createDocument(token, lease({ depositDue: today(2), commencement: today(20), end: today(385) }));
    expect((await syncState(doc.id)).map((r) => r.sync_count)).toEqual([0, 0, 0]);
    // Drift the stored rows, so the re-sync has something to put right.
    const shard = await tenantDb(organizationId);
    await shard.batch([
      shard.prepare("UPDATE document_obligations SET due_date = '1999-01-01' WHERE document_id = ? AND type = 'renewal'").bind(doc.id),
      shard.prepare("DELETE FROM document_obligations WHERE document_id = ? AND type = 'expiry'").bind(doc.id),
    ]);
    const sent = await sendForSignature(token, doc.id);
    for (const link of sent.links) await signAll(tokenOf(link.url));

    // Delivered by the real queue to the Worker's consumer.
    await vi.waitFor(async () => expect((await syncState(doc.id)).map((r) => r.sync_count)).toEqual([1, 1, 1]), {
      timeout: 15_000,
      interval: 100,
    });
    const synced = await syncState(doc.id);
    expect(synced.map((r) => [r.type, r.due_date])).toEqual([
      ["deposit_due", today(2)],
      ["expiry", today(385)],
      ["renewal", today(325)],
    ]);
    const row = await (await tenantDb(organizationId))
      .prepare(
        "SELECT id, type, organization_id AS organizationId, actor, occurred_at AS occurredAt, data FROM outbox_events WHERE organization_id = ? AND type = 'DOCUMENT_SIGNED'",
      )
      .bind(organizationId)
      .first<{ id: string; type: string; organizationId: string; actor: string; occurredAt: string; data: string }>();
    expect(synced.every((r) => r.sync_event_id === row!.id)).toBe(true);

    // The same event again, twice in one batch and once more in a later one, through the Worker's queue handler.
    const batch = createMessageBatch("events", [
      { id: "again-1", timestamp: new Date(), attempts: 1, body: { id: row!.id } },
      { id: "again-2", timestamp: new Date(), attempts: 1, body: { id: row!.id } },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env);
    expect((await getQueueResult(batch, ctx)).explicitAcks.sort()).toEqual(["again-1", "again-2"]);
    await worker.queue(createMessageBatch("events", [{ id: "again-3", timestamp: new Date(), attempts: 2, body: { id: row!.id } }]), env);
    // And handed to the consumer itself twice, past the router's claim: the event id on the rows still stops it.
    const event: DomainEvent = { ...row!, actor: JSON.parse(row!.actor), data: JSON.parse(row!.data) };
    const db = createDb(await tenantDb(organizationId));
    await obligationSyncConsumer.handle([event], { env, db });
    await obligationSyncConsumer.handle([event, event], { env, db });
    expect(await syncState(doc.id)).toEqual(synced);

    // A different DOCUMENT_SIGNED event is a new re-sync: the count is what moves, not a constant.
    await obligationSyncConsumer.handle([{ ...event, id: crypto.randomUUID() }], { env, db });
    expect((await syncState(doc.id)).map((r) => r.sync_count)).toEqual([2, 2, 2]);
    expect(await obligations(token, "?withinDays=365")).toHaveLength(2);
  });
});

describe("overdue obligations of a linked deal", () => {
  const overdueActivities = (dealId: string) =>
    allOnShards<{ type: string; userId: string | null; metadata: string }>(
      "SELECT type, user_id AS userId, metadata FROM deal_activities WHERE deal_id = ? AND type = 'OBLIGATION_OVERDUE' ORDER BY json_extract(metadata, '$.dueDate')",
      dealId,
    ).then((rows) => rows.map((a) => ({ ...a, metadata: JSON.parse(a.metadata) })));

  it("become one OBLIGATION_OVERDUE activity each on the deal, even when the pass runs twice and concurrently", async () => {
    const { token, organizationId } = await createPrincipal();
    const deal = await createDeal(token);
    const create = async (canonical: Record<string, unknown>, dealId?: string) => {
      const res = await call("POST", "/api/documents", {
        token,
        body: { formKey: "on/standard-lease", canonical, ...(dealId ? { dealId } : {}) },
      });
      expect(res.status).toBe(201);
      return (await json(res)).id as string;
    };
    const linked = await create(lease({ depositDue: today(-5), commencement: today(-30), end: today(59) }), deal.id); // renewal notice due yesterday
    await create(lease({ depositDue: today(-4), commencement: today(0), end: today(100) }), deal.id); // only the deposit is overdue
    await create(lease({ depositDue: today(-9), commencement: today(-8) })); // overdue, but no deal
    const before = await json(await call("GET", `/v1/deals/${deal.id}`, { token }));

    const db = createDb(await tenantDb(organizationId));
    await noteOverdueObligations(db);
    await noteOverdueObligations(db);
    await Promise.all(Array.from({ length: 5 }, () => noteOverdueObligations(db)));
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);

    const activities = await overdueActivities(deal.id);
    expect(activities.map((a) => [a.metadata.type, a.metadata.dueDate])).toEqual([
      ["deposit_due", today(-5)],
      ["deposit_due", today(-4)],
      ["renewal", today(-1)],
    ]);
    const ids = new Map((await obligations(token)).map((o) => [`${o.documentId} ${o.type}`, o.id]));
    expect(activities[0]).toEqual({
      type: "OBLIGATION_OVERDUE",
      userId: null,
      metadata: { obligationId: ids.get(`${linked} deposit_due`), documentId: linked, type: "deposit_due", dueDate: today(-5) },
    });
    // Shown on the deal's own log, and the deal moved on (lastActivityAt).
    const log = await json(await call("GET", `/v1/deals/${deal.id}/activities?limit=100`, { token }));
    expect(log.data.filter((a: { type: string }) => a.type === "OBLIGATION_OVERDUE")).toHaveLength(3);
    const after = await json(await call("GET", `/v1/deals/${deal.id}`, { token }));
    expect(after.data.lastActivityAt > before.data.lastActivityAt).toBe(true);
    expect(await noteOverdueObligations(db)).toBe(0);
  });

  it("an obligation whose deal was deleted is noted without an activity, and leaves the pass's scan", async () => {
    const { token, organizationId } = await createPrincipal();
    const deal = await createDeal(token);
    const res = await call("POST", "/api/documents", {
      token,
      body: { formKey: "on/standard-lease", canonical: lease({ commencement: today(-2), depositDue: today(-2) }), dealId: deal.id },
    });
    expect(res.status).toBe(201);
    expect((await call("DELETE", `/v1/deals/${deal.id}`, { token })).status).toBeLessThan(300);
    const db = createDb(await tenantDb(organizationId));
    await noteOverdueObligations(db);
    expect(await overdueActivities(deal.id)).toEqual([]);
    const documentId = (await json(res)).id;
    expect(
      await (await tenantDb(organizationId))
        .prepare("SELECT overdue_noted_at FROM document_obligations WHERE document_id = ?")
        .bind(documentId)
        .first("overdue_noted_at"),
    ).not.toBeNull();
  });
});
