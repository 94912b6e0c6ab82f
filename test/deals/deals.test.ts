import { describe, expect, it, vi } from "vitest";
import { verifyWebhook } from "../../src/webhooks/verify";
import { call, json } from "../helpers/client";
import { createContact, expectCrmError, getContact, issuePairs, listPage, tick } from "../helpers/contacts";
import { createDeal, type DealJson, dealBody, documentForm, getDeal, moveDeal, updateDeal, createTask } from "../helpers/deals";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { createProperty } from "../helpers/properties";
import { openMailbox } from "../helpers/receiver";
import { subscribe } from "../helpers/webhooks";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";

interface Recorded {
  type: string;
  data: Record<string, any>;
}
/** The outbox of an organization, in the order the events were written. */
async function eventsOf(organizationId: string): Promise<Recorded[]> {
  const { results } = await (await tenantDb(organizationId))
    .prepare("SELECT type, data FROM outbox_events WHERE organization_id = ? ORDER BY occurred_at, rowid")
    .bind(organizationId)
    .all<{ type: string; data: string }>();
  return results.map((r) => ({ type: r.type, data: JSON.parse(r.data) }));
}
const eventTypes = async (organizationId: string) => (await eventsOf(organizationId)).map((e) => e.type);

/** A count on the shard of `p`'s organization. */
async function count(p: TestPrincipal, query: string, ...params: unknown[]): Promise<number> {
  return (await (
    await tenantDb(p.organizationId)
  )
    .prepare(query)
    .bind(...params)
    .first<{ n: number }>())!.n;
}

/** Another user (agent) of the principal's organization. */
const addUser = async (p: TestPrincipal): Promise<string> => (await createPrincipal({ organizationId: p.organizationId })).userId;

interface DealPage {
  success: true;
  data: DealJson[];
  pagination: { hasMore: boolean; nextCursor: string | null; total: number; limit: number };
}
/** GET /v1/deals with a query string (without "?"); fails the test unless 200. */
async function listDeals(token: string, query = ""): Promise<DealPage> {
  const res = await call("GET", `/v1/deals${query ? `?${query}` : ""}`, { token });
  const payload = await json(res);
  expect(res.status, `${query}: ${JSON.stringify(payload)}`).toBe(200);
  expect(payload.success).toBe(true);
  return payload as DealPage;
}

/** Every deal a cursor walk returns, in order; each page's total must be `total` when given. */
async function walk(token: string, query: string, limit = 2): Promise<DealJson[]> {
  const out: DealJson[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 200; i++) {
    const page: DealPage = await listDeals(
      token,
      [query, `limit=${limit}`, cursor ? `cursor=${encodeURIComponent(cursor)}` : ""].filter(Boolean).join("&"),
    );
    expect(page.data.length).toBeLessThanOrEqual(limit);
    out.push(...page.data);
    if (!page.pagination.hasMore) {
      expect(page.pagination.nextCursor).toBeNull();
      return out;
    }
    expect(page.data).toHaveLength(limit);
    cursor = page.pagination.nextCursor;
  }
  throw new Error("cursor walk did not end");
}

type SortField = "amount" | "closingDate" | "probability" | "createdAt";
/** The order the API promises: the field in its direction (no closing date sorts as ""), then id in the same direction. */
function sortDeals(list: DealJson[], field: SortField, dir: "asc" | "desc"): string[] {
  const value = (d: DealJson): string | number => (field === "closingDate" ? (d.timeline?.closingDate ?? "") : d[field]);
  const cmp = (a: string | number, b: string | number) => (a < b ? -1 : a > b ? 1 : 0);
  return [...list]
    .sort((a, b) => {
      const c = cmp(value(a), value(b)) || cmp(a.id, b.id);
      return dir === "asc" ? c : -c;
    })
    .map((d) => d.id);
}

const ids = (list: { id: string }[]) => list.map((d) => d.id);
const sortedIds = (list: { id: string }[]) => ids(list).sort();

const errorCode = async (res: Response) => (await json(res)).error?.code as string | undefined;

describe("POST /v1/deals", () => {
  it("a body without title, type, amount and contactId gets one 422 naming all four, and nothing is written", async () => {
    const p = await createPrincipal();
    const res = await call("POST", "/v1/deals", { token: p.token, body: {} });
    const errors = await expectCrmError(res, 422, "validation_error");
    expect(issuePairs(errors)).toEqual(["amount:required", "contactId:required", "title:required", "type:required"]);
    expect((await listDeals(p.token)).pagination.total).toBe(0);
    expect(await eventsOf(p.organizationId)).toEqual([]);
  });

  it("lists every bad value of a body in one 422", async () => {
    const p = await createPrincipal();
    const c = await createContact(p.token);
    const res = await call("POST", "/v1/deals", {
      token: p.token,
      body: {
        title: "",
        type: "BARTER",
        amount: -1,
        contactId: c.id,
        stage: "DREAMING",
        probability: 101,
        commission: { rate: 2 },
        timeline: { closingDate: "next week" },
      },
    });
    const errors = await expectCrmError(res, 422, "validation_error");
    const fields = errors.map((e) => e.field);
    for (const f of ["title", "type", "amount", "stage", "probability", "commission.rate", "timeline.closingDate"])
      expect(fields, f).toContain(f);
    expect((await listDeals(p.token)).pagination.total).toBe(0);
  });

  it("creates a deal with the defaults: LEAD, ACTIVE, probability 10, no tags, createdAt = updatedAt = lastActivityAt", async () => {
    const p = await createPrincipal();
    const c = await createContact(p.token);
    const res = await call("POST", "/v1/deals", {
      token: p.token,
      body: { title: "Smith purchase", type: "PURCHASE", amount: 450000, contactId: c.id },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("etag")).toBe('"1"');
    const body = await json(res);
    expect(body).toEqual({
      success: true,
      data: {
        id: expect.any(String),
        organizationId: p.organizationId,
        title: "Smith purchase",
        description: null,
        type: "PURCHASE",
        stage: "LEAD",
        status: "ACTIVE",
        amount: 450000,
        commission: null,
        contactId: c.id,
        propertyId: null,
        assignedTo: null,
        teamMembers: [],
        timeline: null,
        probability: 10,
        source: null,
        notes: null,
        tags: [],
        createdAt: expect.stringMatching(ISO),
        updatedAt: expect.stringMatching(ISO),
        lastActivityAt: expect.stringMatching(ISO),
        customFields: {},
      },
    });
    const deal = body.data as DealJson;
    expect(deal.updatedAt).toBe(deal.createdAt);
    expect(deal.lastActivityAt).toBe(deal.createdAt);
    expect(await getDeal(p.token, deal.id)).toEqual(deal);
    const events = await eventsOf(p.organizationId);
    expect(events.filter((e) => e.type.startsWith("deal."))).toEqual([
      { type: "deal.created", data: { object: deal, previousAttributes: null, changes: null } },
    ]);
    expect((await listDeals(p.token)).pagination.total).toBe(1);
  });

  it("stores every optional field; an open stage given without a probability takes its default", async () => {
    const p = await createPrincipal();
    const property = await createProperty(p.token);
    const c = await createContact(p.token);
    const full = {
      description: "Buyer wants to close before school starts",
      stage: "QUALIFIED",
      status: "ON_HOLD",
      propertyId: property.id,
      assignedTo: p.userId,
      timeline: { listingDate: "2026-01-10", contractDate: "2026-02-01", closingDate: "2026-03-15" },
      source: "REFERRAL",
      notes: "Pre-approved",
      tags: ["hot", "first-time"],
    };
    const created = await createDeal(p.token, { contactId: c.id, ...full });
    expect(created).toMatchObject({ ...full, probability: 20 });
    expect(await getDeal(p.token, created.id)).toEqual(created);
    const explicit = await createDeal(p.token, { contactId: c.id, stage: "CONTRACT", probability: 42 });
    expect(explicit).toMatchObject({ stage: "CONTRACT", probability: 42, status: "ACTIVE" });
  });

  it("refuses a contact of another organization (422 invalid_reference on contactId) and writes nothing", async () => {
    const p = await createPrincipal();
    const stranger = await createPrincipal();
    await createDeal(p.token);
    const theirs = await createContact(stranger.token);
    const before = await eventsOf(p.organizationId);
    for (const contactId of [theirs.id, UNKNOWN_ID]) {
      const res = await call("POST", "/v1/deals", { token: p.token, body: dealBody(contactId) });
      const errors = await expectCrmError(res, 422, "validation_error");
      expect(issuePairs(errors)).toEqual(["contactId:invalid_reference"]);
    }
    expect((await listDeals(p.token)).pagination.total).toBe(1);
    expect(await eventsOf(p.organizationId)).toEqual(before);
    expect((await listDeals(stranger.token)).pagination.total).toBe(0);
  });

  it("refuses a property of another organization and an agent who is not a user of the organization", async () => {
    const p = await createPrincipal();
    const stranger = await createPrincipal();
    const c = await createContact(p.token);
    const theirProperty = await createProperty(stranger.token);
    const bad = await call("POST", "/v1/deals", { token: p.token, body: dealBody(c.id, { propertyId: theirProperty.id }) });
    expect(issuePairs(await expectCrmError(bad, 422, "validation_error"))).toEqual(["propertyId:invalid_reference"]);
    const agent = await call("POST", "/v1/deals", { token: p.token, body: dealBody(c.id, { assignedTo: stranger.userId }) });
    expect(issuePairs(await expectCrmError(agent, 422, "validation_error"))).toEqual(["assignedTo:invalid_reference"]);
    // Both problems at once.
    const both = await call("POST", "/v1/deals", {
      token: p.token,
      body: dealBody(c.id, { propertyId: theirProperty.id, assignedTo: "nobody" }),
    });
    expect(issuePairs(await expectCrmError(both, 422, "validation_error"))).toEqual([
      "assignedTo:invalid_reference",
      "propertyId:invalid_reference",
    ]);
    expect((await listDeals(p.token)).pagination.total).toBe(0);
    // A colleague is fine.
    const colleague = await addUser(p);
    expect((await createDeal(p.token, { contactId: c.id, assignedTo: colleague })).assignedTo).toBe(colleague);
  });

  it("refuses to create a deal in CLOSED or LOST (422 invalid_stage)", async () => {
    const p = await createPrincipal();
    const c = await createContact(p.token);
    for (const stage of ["CLOSED", "LOST"]) {
      const res = await call("POST", "/v1/deals", { token: p.token, body: dealBody(c.id, { stage }) });
      expect(issuePairs(await expectCrmError(res, 422, "validation_error"))).toEqual(["stage:invalid_stage"]);
    }
    const closedStatus = await call("POST", "/v1/deals", { token: p.token, body: dealBody(c.id, { status: "CLOSED" }) });
    expect(issuePairs(await expectCrmError(closedStatus, 422, "validation_error"))).toEqual(["status:invalid_status"]);
    expect((await listDeals(p.token)).pagination.total).toBe(0);
    expect(await eventTypes(p.organizationId)).not.toContain("deal.created");
  });

  it("refuses an unknown field (422 unknown_field)", async () => {
    const p = await createPrincipal();
    const c = await createContact(p.token);
    const res = await call("POST", "/v1/deals", { token: p.token, body: dealBody(c.id, { favouriteColour: "blue" }) });
    expect(issuePairs(await expectCrmError(res, 422, "validation_error"))).toEqual(["favouriteColour:unknown_field"]);
    expect((await listDeals(p.token)).pagination.total).toBe(0);
  });

  it("ignores read-only fields a client echoes back (id, organizationId, timestamps, contact, property, tasks…)", async () => {
    const p = await createPrincipal();
    const other = await createPrincipal();
    const c = await createContact(p.token);
    const created = await createDeal(p.token, {
      contactId: c.id,
      id: "my-own-id",
      organizationId: other.organizationId,
      createdAt: "2001-01-01T00:00:00.000Z",
      updatedAt: "2001-01-01T00:00:00.000Z",
      lastActivityAt: "2001-01-01T00:00:00.000Z",
      contact: { id: "someone-else", firstName: "X", lastName: "Y", email: "x@y.test" },
      property: { id: "p" },
      documents: [{ id: "d" }],
      tasks: [{ id: "t" }],
      activities: [{ id: "a" }],
    });
    expect(created.id).not.toBe("my-own-id");
    expect(created.organizationId).toBe(p.organizationId);
    expect(created.contactId).toBe(c.id);
    for (const f of ["createdAt", "updatedAt", "lastActivityAt"]) expect(created[f].startsWith("2001"), f).toBe(false);
    for (const f of ["contact", "property", "documents", "tasks", "activities"]) expect(created, f).not.toHaveProperty(f);
    const read = await getDeal(p.token, created.id, "?include=contact,tasks,documents");
    expect(read.contact.id).toBe(c.id);
    expect(read.tasks).toEqual([]);
    expect(read.documents).toEqual([]);
    expect((await call("GET", `/v1/deals/${created.id}`, { token: other.token })).status).toBe(404);
    expect((await call("GET", "/v1/deals/my-own-id", { token: p.token })).status).toBe(404);
  });
});

describe("commission and team", () => {
  it("computes the commission amount from the rate, and recomputes it when the amount changes", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token, { amount: 400000, commission: { rate: 0.025, split: 0.5 } });
    expect(deal.commission).toEqual({ rate: 0.025, amount: 10000, split: 0.5 });
    const agreeing = await createDeal(p.token, { contactId: deal.contactId, amount: 400000, commission: { rate: 0.025, amount: 10000 } });
    expect(agreeing.commission).toEqual({ rate: 0.025, amount: 10000, split: null });
    const raised = await updateDeal(p.token, deal.id, { amount: 500000 });
    expect(raised.commission).toEqual({ rate: 0.025, amount: 12500, split: 0.5 });
    expect((await getDeal(p.token, deal.id)).commission).toEqual({ rate: 0.025, amount: 12500, split: 0.5 });
    const updated = (await eventsOf(p.organizationId)).filter((e) => e.type === "deal.updated").at(-1)!;
    expect(updated.data.changes).toEqual(expect.arrayContaining(["amount", "commission.amount"]));
    expect(updated.data.previousAttributes).toMatchObject({ amount: 400000, commission: { amount: 10000 } });
    // A new rate on PUT: the amount follows the rate.
    expect((await updateDeal(p.token, deal.id, { commission: { rate: 0.03 } })).commission).toEqual({
      rate: 0.03,
      amount: 15000,
      split: null,
    });
  });

  it("refuses a given commission amount that disagrees with the rate (422 commission_mismatch), on create and update", async () => {
    const p = await createPrincipal();
    const c = await createContact(p.token);
    const res = await call("POST", "/v1/deals", {
      token: p.token,
      body: dealBody(c.id, { amount: 400000, commission: { rate: 0.025, amount: 9000 } }),
    });
    expect(issuePairs(await expectCrmError(res, 422, "validation_error"))).toEqual(["commission.amount:commission_mismatch"]);
    expect((await listDeals(p.token)).pagination.total).toBe(0);
    const deal = await createDeal(p.token, { contactId: c.id, amount: 400000 });
    const put = await call("PUT", `/v1/deals/${deal.id}`, { token: p.token, body: { commission: { rate: 0.03, amount: 1 } } });
    expect(issuePairs(await expectCrmError(put, 422, "validation_error"))).toEqual(["commission.amount:commission_mismatch"]);
    expect(await getDeal(p.token, deal.id)).toEqual(deal);
  });

  it("without a rate keeps the amount (and split) as given, also when the deal amount changes", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token, { amount: 300000, commission: { amount: 7500, split: 0.6 } });
    expect(deal.commission).toEqual({ rate: null, amount: 7500, split: 0.6 });
    const changed = await updateDeal(p.token, deal.id, { amount: 350000 });
    expect(changed.commission).toEqual({ rate: null, amount: 7500, split: 0.6 });
    expect((await updateDeal(p.token, deal.id, { commission: null })).commission).toBeNull();
  });

  it("team members must be users of the organization, once each, with splits adding up to 1", async () => {
    const p = await createPrincipal();
    const stranger = await createPrincipal();
    const colleague = await addUser(p);
    const c = await createContact(p.token);
    const team = [
      { userId: p.userId, role: "LISTING_AGENT", commissionSplit: 0.6 },
      { userId: colleague, role: "BUYER_AGENT", commissionSplit: 0.4 },
    ];
    const deal = await createDeal(p.token, { contactId: c.id, teamMembers: team });
    expect(deal.teamMembers).toEqual(team);
    expect((await getDeal(p.token, deal.id)).teamMembers).toEqual(team);

    const post = (teamMembers: unknown) => call("POST", "/v1/deals", { token: p.token, body: dealBody(c.id, { teamMembers }) });
    const short = await post([
      { userId: p.userId, role: "LISTING_AGENT", commissionSplit: 0.6 },
      { userId: colleague, role: "BUYER_AGENT", commissionSplit: 0.3 },
    ]);
    expect(issuePairs(await expectCrmError(short, 422, "validation_error"))).toEqual(["teamMembers:invalid_split_total"]);
    const duplicate = await post([
      { userId: p.userId, role: "LISTING_AGENT", commissionSplit: 0.5 },
      { userId: p.userId, role: "BUYER_AGENT", commissionSplit: 0.5 },
    ]);
    expect(issuePairs(await expectCrmError(duplicate, 422, "validation_error"))).toEqual(["teamMembers.1.userId:duplicate"]);
    const outsider = await post([
      { userId: stranger.userId, role: "LISTING_AGENT", commissionSplit: 0.5 },
      { userId: p.userId, role: "BUYER_AGENT", commissionSplit: 0.5 },
    ]);
    expect(issuePairs(await expectCrmError(outsider, 422, "validation_error"))).toEqual(["teamMembers.0.userId:invalid_reference"]);
    expect((await listDeals(p.token)).pagination.total).toBe(1);

    // The same rules on update; a valid team replaces the old one.
    const badPut = await call("PUT", `/v1/deals/${deal.id}`, {
      token: p.token,
      body: { teamMembers: [{ userId: colleague, role: "CO_AGENT", commissionSplit: 0.9 }] },
    });
    expect(issuePairs(await expectCrmError(badPut, 422, "validation_error"))).toEqual(["teamMembers:invalid_split_total"]);
    // Splits that add up to 1 only up to floating point (0.1 + 0.2 + 0.7) are fine.
    const third = await addUser(p);
    const trio = [
      { userId: p.userId, role: "LISTING_AGENT", commissionSplit: 0.1 },
      { userId: colleague, role: "BUYER_AGENT", commissionSplit: 0.2 },
      { userId: third, role: "TRANSACTION_COORDINATOR", commissionSplit: 0.7 },
    ];
    expect((await updateDeal(p.token, deal.id, { teamMembers: trio })).teamMembers).toEqual(trio);
    const solo = [{ userId: colleague, role: "CO_AGENT", commissionSplit: 1 }];
    expect((await updateDeal(p.token, deal.id, { teamMembers: solo })).teamMembers).toEqual(solo);
  });
});

describe("GET /v1/deals/{id}", () => {
  it("include=contact,property embeds the contact and property summaries", async () => {
    const p = await createPrincipal();
    const contact = await createContact(p.token, { firstName: "Grace", lastName: "Hopper" });
    const property = await createProperty(p.token);
    const deal = await createDeal(p.token, { contactId: contact.id, propertyId: property.id });
    const read = await getDeal(p.token, deal.id, "?include=contact,property");
    expect(read).toEqual({
      ...deal,
      contact: { id: contact.id, firstName: "Grace", lastName: "Hopper", email: contact.email },
      property: { id: property.id, address: property.address, type: "CONDO", bedrooms: 2, bathrooms: 2, squareFootage: 1200 },
    });
    // Without a property, include=property answers null.
    const bare = await createDeal(p.token, { contactId: contact.id });
    expect((await getDeal(p.token, bare.id, "?include=property")).property).toBeNull();
  });

  it("tasks, activities and documents appear only when asked for", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    await createTask(p.token, deal.id, { title: "Call lender" });
    const plain = await getDeal(p.token, deal.id);
    for (const f of ["contact", "property", "tasks", "activities", "documents"]) expect(plain, f).not.toHaveProperty(f);
    const tasksOnly = await getDeal(p.token, deal.id, "?include=tasks");
    expect(tasksOnly.tasks.map((t: { title: string }) => t.title)).toEqual(["Call lender"]);
    expect(tasksOnly).not.toHaveProperty("activities");
    expect(tasksOnly).not.toHaveProperty("documents");
    const all = await getDeal(p.token, deal.id, "?include=tasks,activities,documents");
    expect(all.tasks).toHaveLength(1);
    expect(all.documents).toEqual([]);
    expect(all.activities.map((a: { type: string }) => a.type)).toContain("DEAL_CREATED");
    expect(all).not.toHaveProperty("contact");
  });

  it("an unknown include is a 422", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const errors = await expectCrmError(
      await call("GET", `/v1/deals/${deal.id}?include=contact,friends`, { token: p.token }),
      422,
      "validation_error",
    );
    expect(errors[0]!.field).toMatch(/^include/);
  });

  it("another organization's deal answers 404 exactly as an unknown id, for reads and writes", async () => {
    const owner = await createPrincipal();
    const stranger = await createPrincipal();
    const deal = await createDeal(owner.token);
    const unknown = await call("GET", `/v1/deals/${UNKNOWN_ID}`, { token: stranger.token });
    const foreign = await call("GET", `/v1/deals/${deal.id}`, { token: stranger.token });
    await expectCrmError(unknown.clone(), 404, "not_found_error");
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toEqual(await unknown.json());
    const put = await call("PUT", `/v1/deals/${deal.id}`, { token: stranger.token, body: { title: "Mine now" } });
    await expectCrmError(put, 404, "not_found_error");
    await expectCrmError(
      await call("POST", `/v1/deals/${deal.id}/move`, { token: stranger.token, body: { stage: "CLOSED" } }),
      404,
      "not_found_error",
    );
    await expectCrmError(await call("DELETE", `/v1/deals/${deal.id}`, { token: stranger.token }), 404, "not_found_error");
    expect(await getDeal(owner.token, deal.id)).toEqual(deal);
    expect(await eventsOf(stranger.organizationId)).toEqual([]);
  });
});

describe("GET /v1/deals", () => {
  /** Seven deals of one organization (one per request, so createdAt differs), and one of another organization. */
  async function seed() {
    const p = await createPrincipal();
    const agent = await addUser(p);
    const c = await createContact(p.token);
    const specs: Record<string, unknown>[] = [
      { title: "A", type: "SALE", amount: 250000, stage: "LEAD", timeline: { closingDate: "2026-05-01" } },
      { title: "B", type: "PURCHASE", amount: 900000, stage: "NEGOTIATION", assignedTo: agent, timeline: { closingDate: "2026-08-15" } },
      { title: "C", type: "LEASE", amount: 3000, stage: "QUALIFIED", probability: 55, status: "ON_HOLD" },
      { title: "D", type: "SALE", amount: 600000, stage: "CONTRACT", assignedTo: agent, timeline: { closingDate: "2026-07-01T15:00:00Z" } },
      { title: "E", type: "RENTAL", amount: 2500, stage: "NEGOTIATION", probability: 50 },
      {
        title: "F",
        type: "SALE",
        amount: 1200000,
        stage: "CLOSING",
        assignedTo: p.userId,
        timeline: { listingDate: "2026-01-01", closingDate: "2026-06-01" },
      },
      { title: "G", type: "PURCHASE", amount: 450000, stage: "LEAD", probability: 50 },
    ];
    const deals: DealJson[] = [];
    for (const spec of specs) {
      deals.push(await createDeal(p.token, { contactId: c.id, ...spec }));
      await tick(3);
    }
    const stranger = await createPrincipal();
    await createDeal(stranger.token, { type: "SALE", amount: 250000 });
    return { p, agent, deals, byTitle: Object.fromEntries(deals.map((d) => [d.title, d])) as Record<string, DealJson> };
  }

  it("every filter answers exactly the matching deals, with their total", async () => {
    const { p, agent, deals, byTitle } = await seed();
    const cases: [string, (d: DealJson) => boolean][] = [
      ["", () => true],
      ["type=SALE", (d) => d.type === "SALE"],
      ["stage=NEGOTIATION", (d) => d.stage === "NEGOTIATION"],
      ["status=ON_HOLD", (d) => d.status === "ON_HOLD"],
      ["status=ACTIVE", (d) => d.status === "ACTIVE"],
      [`assignedTo=${agent}`, (d) => d.assignedTo === agent],
      ["amount[gte]=450000", (d) => d.amount >= 450000],
      ["amount[lte]=450000", (d) => d.amount <= 450000],
      ["amount[gte]=3000&amount[lte]=600000", (d) => d.amount >= 3000 && d.amount <= 600000],
      ["probability[gte]=50", (d) => d.probability >= 50],
      [`createdAt[gte]=${encodeURIComponent(byTitle.D!.createdAt)}`, (d) => d.createdAt >= byTitle.D!.createdAt],
      ["closingDate[gte]=2026-06-01", (d) => (d.timeline?.closingDate ?? "") >= "2026-06-01"],
      ["closingDate[gte]=2026-07-01T00:00:00Z", (d) => (d.timeline?.closingDate ?? "").slice(0, 10) >= "2026-07-01"],
      ["type=SALE&probability[gte]=50&amount[lte]=1000000", (d) => d.type === "SALE" && d.probability >= 50 && d.amount <= 1000000],
      ["type=RENTAL&stage=LEAD", () => false],
    ];
    // Sanity on the seed: the predicates pick what they should.
    expect(deals.map((d) => [d.title, d.probability, d.status])).toEqual([
      ["A", 10, "ACTIVE"],
      ["B", 50, "ACTIVE"],
      ["C", 55, "ON_HOLD"],
      ["D", 70, "ACTIVE"],
      ["E", 50, "ACTIVE"],
      ["F", 90, "ACTIVE"],
      ["G", 50, "ACTIVE"],
    ]);
    for (const [query, match] of cases) {
      const expected = deals.filter(match);
      const page = await listDeals(p.token, query);
      expect(sortedIds(page.data), query).toEqual(sortedIds(expected));
      expect(page.pagination.total, query).toBe(expected.length);
    }
    // Spot checks that do not depend on the predicates above.
    expect((await listDeals(p.token, "closingDate[gte]=2026-06-01")).data.map((d) => d.title).sort()).toEqual(["B", "D", "F"]);
    expect((await listDeals(p.token, "amount[gte]=3000&amount[lte]=600000")).data.map((d) => d.title).sort()).toEqual(["A", "C", "D", "G"]);
  });

  it("default order is newest first; every sort walked page by page gives every matching deal exactly once, in order", async () => {
    const { p, deals } = await seed();
    expect(ids((await listDeals(p.token)).data)).toEqual(ids([...deals].reverse()));
    const sorts: [string, SortField, "asc" | "desc"][] = [
      ["amount:asc", "amount", "asc"],
      ["amount:desc", "amount", "desc"],
      ["closingDate:desc", "closingDate", "desc"],
      ["closingDate:asc", "closingDate", "asc"],
      ["probability:desc", "probability", "desc"],
      ["probability", "probability", "asc"],
      ["createdAt:asc", "createdAt", "asc"],
      ["createdAt:desc", "createdAt", "desc"],
    ];
    for (const [sort, field, dir] of sorts) {
      for (const limit of [1, 2, 3]) {
        const walked = await walk(p.token, `sort=${sort}`, limit);
        expect(ids(walked), `${sort} limit ${limit}`).toEqual(sortDeals(deals, field, dir));
      }
    }
    // Filtered and sorted together.
    const sales = deals.filter((d) => d.type === "SALE" || d.type === "PURCHASE");
    const walked = await walk(p.token, "type=SALE&sort=amount:desc", 1);
    expect(ids(walked)).toEqual(
      sortDeals(
        deals.filter((d) => d.type === "SALE"),
        "amount",
        "desc",
      ),
    );
    expect(sales.length).toBeGreaterThan(walked.length);
    const tie = await walk(p.token, "probability[gte]=50&sort=probability:asc", 2);
    expect(ids(tie)).toEqual(
      sortDeals(
        deals.filter((d) => d.probability >= 50),
        "probability",
        "asc",
      ),
    );
  });

  it("pagination.total follows creates, moves and deletes, filtered and unfiltered", async () => {
    const p = await createPrincipal();
    const c = await createContact(p.token);
    expect((await listDeals(p.token)).pagination).toEqual({ hasMore: false, nextCursor: null, total: 0, limit: 25 });
    const a = await createDeal(p.token, { contactId: c.id, type: "SALE" });
    const b = await createDeal(p.token, { contactId: c.id, type: "SALE" });
    await createDeal(p.token, { contactId: c.id, type: "LEASE" });
    expect((await listDeals(p.token, "limit=1")).pagination).toMatchObject({ total: 3, hasMore: true, limit: 1 });
    expect((await listDeals(p.token, "type=SALE")).pagination.total).toBe(2);
    expect((await listDeals(p.token, "stage=NEGOTIATION")).pagination.total).toBe(0);

    await createDeal(p.token, { contactId: c.id, type: "SALE" });
    expect((await listDeals(p.token, "type=SALE")).pagination.total).toBe(3);
    expect((await listDeals(p.token)).pagination.total).toBe(4);

    await moveDeal(p.token, a.id, "NEGOTIATION");
    expect((await listDeals(p.token, "stage=NEGOTIATION")).pagination.total).toBe(1);
    expect((await listDeals(p.token, "stage=LEAD")).pagination.total).toBe(3);
    await updateDeal(p.token, b.id, { type: "PURCHASE" });
    expect((await listDeals(p.token, "type=SALE")).pagination.total).toBe(2);

    expect((await call("DELETE", `/v1/deals/${a.id}`, { token: p.token })).status).toBe(200);
    expect((await listDeals(p.token)).pagination.total).toBe(3);
    expect((await listDeals(p.token, "type=SALE")).pagination.total).toBe(1);
    expect((await listDeals(p.token, "stage=NEGOTIATION")).pagination.total).toBe(0);
  });

  it("limit must be 1 to 100, amount[gte] at most amount[lte], and include only contact, property or documents", async () => {
    const p = await createPrincipal();
    await createDeal(p.token);
    for (const q of ["limit=0", "limit=101", "limit=abc", "limit=-1"]) {
      const errors = await expectCrmError(await call("GET", `/v1/deals?${q}`, { token: p.token }), 422, "validation_error");
      expect(
        errors.map((e) => e.field),
        q,
      ).toEqual(["limit"]);
    }
    expect((await listDeals(p.token, "limit=100")).pagination.limit).toBe(100);
    expect((await listDeals(p.token, "limit=1")).data).toHaveLength(1);
    const range = await expectCrmError(
      await call("GET", "/v1/deals?amount[gte]=500&amount[lte]=100", { token: p.token }),
      422,
      "validation_error",
    );
    expect(range.map((e) => e.field)).toContain("amount[gte]");
    for (const q of ["include=tasks", "include=friends", "sort=title:asc", "stage=WON", "colour=blue"]) {
      expect((await call("GET", `/v1/deals?${q}`, { token: p.token })).status, q).toBe(422);
    }
  });

  it("include=contact (and property) on the list embeds them in every deal", async () => {
    const p = await createPrincipal();
    const c1 = await createContact(p.token, { firstName: "Ann" });
    const c2 = await createContact(p.token, { firstName: "Bob" });
    const property = await createProperty(p.token);
    const d1 = await createDeal(p.token, { contactId: c1.id, propertyId: property.id });
    const d2 = await createDeal(p.token, { contactId: c2.id });
    const page = await listDeals(p.token, "include=contact,property");
    const byId = Object.fromEntries(page.data.map((d) => [d.id, d]));
    expect(byId[d1.id]!.contact).toEqual({ id: c1.id, firstName: "Ann", lastName: c1.lastName, email: c1.email });
    expect(byId[d2.id]!.contact).toEqual({ id: c2.id, firstName: "Bob", lastName: c2.lastName, email: c2.email });
    expect(byId[d1.id]!.property).toMatchObject({ id: property.id, type: "CONDO" });
    expect(byId[d2.id]!.property).toBeNull();
    const plain = await listDeals(p.token);
    for (const d of plain.data) expect(d).not.toHaveProperty("contact");
  });
});

describe("PUT /v1/deals/{id}", () => {
  it("changes only the given fields and moves updatedAt and the ETag", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token, { description: "first", tags: ["a"] });
    await tick(3);
    const res = await call("PUT", `/v1/deals/${deal.id}`, {
      token: p.token,
      body: { title: "Renamed", notes: "Call Friday", tags: ["b", "b", "c"] },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBe('"2"');
    const updated = (await json(res)).data as DealJson;
    expect(updated).toEqual({
      ...deal,
      title: "Renamed",
      notes: "Call Friday",
      tags: ["b", "c"],
      updatedAt: expect.stringMatching(ISO),
      lastActivityAt: expect.stringMatching(ISO),
    });
    expect(updated.updatedAt > deal.updatedAt).toBe(true);
    expect(updated.createdAt).toBe(deal.createdAt);
    expect(await getDeal(p.token, deal.id)).toEqual(updated);
    const last = (await eventsOf(p.organizationId)).at(-1)!;
    expect(last.type).toBe("deal.updated");
    expect(last.data.changes.sort()).toEqual(["notes", "tags", "title"]);
    expect(last.data.previousAttributes).toMatchObject({ title: deal.title, notes: null, tags: ["a"] });
  });

  it("null clears optional fields, and timeline fields one by one", async () => {
    const p = await createPrincipal();
    const property = await createProperty(p.token);
    const deal = await createDeal(p.token, {
      description: "desc",
      propertyId: property.id,
      assignedTo: p.userId,
      source: "WEBSITE",
      notes: "n",
      timeline: { listingDate: "2026-01-01", contractDate: "2026-02-01", inspectionDate: "2026-02-10", closingDate: "2026-03-01" },
    });
    expect((await updateDeal(p.token, deal.id, { description: null })).description).toBeNull();
    expect((await updateDeal(p.token, deal.id, { propertyId: null })).propertyId).toBeNull();
    expect((await getDeal(p.token, deal.id, "?include=property")).property).toBeNull();
    const cleared = await updateDeal(p.token, deal.id, { assignedTo: null, source: null, notes: null });
    expect(cleared).toMatchObject({ assignedTo: null, source: null, notes: null });
    expect((await updateDeal(p.token, deal.id, { timeline: { contractDate: null } })).timeline).toEqual({
      listingDate: "2026-01-01",
      inspectionDate: "2026-02-10",
      closingDate: "2026-03-01",
    });
    expect((await updateDeal(p.token, deal.id, { timeline: { closingDate: null, appraisalDate: "2026-02-20" } })).timeline).toEqual({
      listingDate: "2026-01-01",
      inspectionDate: "2026-02-10",
      appraisalDate: "2026-02-20",
    });
    // With its closing date gone, the deal leaves closingDate filters.
    expect((await listDeals(p.token, "closingDate[gte]=2000-01-01")).data).toEqual([]);
    expect(
      (await updateDeal(p.token, deal.id, { timeline: { listingDate: null, inspectionDate: null, appraisalDate: null } })).timeline,
    ).toBeNull();
    const relinked = await updateDeal(p.token, deal.id, { propertyId: property.id, timeline: { closingDate: "2026-09-09" } });
    expect(relinked).toMatchObject({ propertyId: property.id, timeline: { closingDate: "2026-09-09" } });
    expect(ids((await listDeals(p.token, "closingDate[gte]=2026-09-09")).data)).toEqual([deal.id]);
    expect((await updateDeal(p.token, deal.id, { timeline: null })).timeline).toBeNull();
    // Required fields cannot be cleared.
    const res = await call("PUT", `/v1/deals/${deal.id}`, {
      token: p.token,
      body: { title: null, amount: null, contactId: null, type: null },
    });
    expect(issuePairs(await expectCrmError(res, 422, "validation_error"))).toHaveLength(4);
  });

  it("refuses references outside the organization on update", async () => {
    const p = await createPrincipal();
    const stranger = await createPrincipal();
    const deal = await createDeal(p.token);
    const theirs = await createContact(stranger.token);
    const res = await call("PUT", `/v1/deals/${deal.id}`, { token: p.token, body: { contactId: theirs.id, assignedTo: stranger.userId } });
    expect(issuePairs(await expectCrmError(res, 422, "validation_error"))).toEqual([
      "assignedTo:invalid_reference",
      "contactId:invalid_reference",
    ]);
    const mine = await createContact(p.token);
    expect((await updateDeal(p.token, deal.id, { contactId: mine.id })).contactId).toBe(mine.id);
  });

  it("status CLOSED without stage CLOSED is a 422 invalid_status; ON_HOLD is fine", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const res = await call("PUT", `/v1/deals/${deal.id}`, { token: p.token, body: { status: "CLOSED" } });
    expect(issuePairs(await expectCrmError(res, 422, "validation_error"))).toEqual(["status:invalid_status"]);
    expect(await getDeal(p.token, deal.id)).toEqual(deal);
    expect(await eventTypes(p.organizationId)).not.toContain("deal.updated");
    expect((await updateDeal(p.token, deal.id, { status: "ON_HOLD" })).status).toBe("ON_HOLD");
    expect((await updateDeal(p.token, deal.id, { status: "CANCELLED" })).status).toBe("CANCELLED");
  });

  it("stage CLOSED by PUT closes the deal: status CLOSED, probability 100, the won/closed events and DEAL_WON", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token, { stage: "CLOSING", status: "ON_HOLD" });
    const closed = await updateDeal(p.token, deal.id, { stage: "CLOSED", reason: "Keys handed over" });
    expect(closed).toMatchObject({ stage: "CLOSED", status: "CLOSED", probability: 100 });
    const types = await eventTypes(p.organizationId);
    expect(types.slice(types.indexOf("deal.created") + 1)).toEqual([
      "deal.updated",
      "deal.stage_changed",
      "deal.won",
      "deal.closed",
      "DEAL_WON",
    ]);
    // Closed deals stay closed in status unless the stage leaves CLOSED.
    const res = await call("PUT", `/v1/deals/${deal.id}`, { token: p.token, body: { status: "ACTIVE" } });
    expect(issuePairs(await expectCrmError(res, 422, "validation_error"))).toEqual(["status:invalid_status"]);
  });

  it("a stage change with a reason records it in the STAGE_CHANGED activity", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const moved = await updateDeal(p.token, deal.id, { stage: "APPOINTMENT", reason: "Viewing booked" });
    expect(moved).toMatchObject({ stage: "APPOINTMENT", probability: 30, status: "ACTIVE" });
    const read = await getDeal(p.token, deal.id, "?include=activities");
    const changes = read.activities.filter((a: { type: string }) => a.type === "STAGE_CHANGED");
    expect(changes).toEqual([
      {
        id: expect.any(String),
        type: "STAGE_CHANGED",
        description: expect.any(String),
        createdAt: expect.stringMatching(ISO),
        userId: p.userId,
        metadata: { previousStage: "LEAD", newStage: "APPOINTMENT", reason: "Viewing booked" },
      },
    ]);
    const stageChanged = (await eventsOf(p.organizationId)).find((e) => e.type === "deal.stage_changed")!;
    expect(stageChanged.data.stageChange).toEqual({ previousStage: "LEAD", newStage: "APPOINTMENT", reason: "Viewing booked" });
    // A PUT naming the current stage is not a stage change.
    await updateDeal(p.token, deal.id, { stage: "APPOINTMENT", notes: "x" });
    expect((await eventTypes(p.organizationId)).filter((t) => t === "deal.stage_changed")).toHaveLength(1);
  });

  it("honours If-Match: 412 on a stale ETag and nothing changes; the current ETag goes through", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const read = await call("GET", `/v1/deals/${deal.id}`, { token: p.token });
    expect(read.headers.get("etag")).toBe('"1"');
    await updateDeal(p.token, deal.id, { notes: "v2" });
    const stale = await call("PUT", `/v1/deals/${deal.id}`, { token: p.token, body: { notes: "v3" }, headers: { "if-match": '"1"' } });
    await expectCrmError(stale, 412, "precondition_failed_error");
    expect((await getDeal(p.token, deal.id)).notes).toBe("v2");
    const staleMove = await call("POST", `/v1/deals/${deal.id}/move`, {
      token: p.token,
      body: { stage: "QUALIFIED" },
      headers: { "if-match": '"1"' },
    });
    expect(staleMove.status).toBe(412);
    const staleDelete = await call("DELETE", `/v1/deals/${deal.id}`, { token: p.token, headers: { "if-match": '"1"' } });
    expect(staleDelete.status).toBe(412);
    const fresh = await call("PUT", `/v1/deals/${deal.id}`, { token: p.token, body: { notes: "v3" }, headers: { "if-match": '"2"' } });
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get("etag")).toBe('"3"');
    expect((await getDeal(p.token, deal.id)).notes).toBe("v3");
  });

  it("a fetched deal sent back unchanged changes nothing and emits nothing", async () => {
    const p = await createPrincipal();
    const property = await createProperty(p.token);
    const deal = await createDeal(p.token, {
      propertyId: property.id,
      timeline: { closingDate: "2026-10-01" },
      tags: ["x"],
      teamMembers: [{ userId: p.userId, role: "LISTING_AGENT", commissionSplit: 1 }],
    });
    const read = await getDeal(p.token, deal.id, "?include=contact,property,tasks,activities,documents");
    expect(await updateDeal(p.token, deal.id, read)).toEqual(deal);
    expect(await eventTypes(p.organizationId)).not.toContain("deal.updated");
  });

  it("a fetched deal with a commission sent back unchanged is accepted", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token, { amount: 400000, commission: { rate: 0.025 } });
    const read = await getDeal(p.token, deal.id);
    expect(read.commission).toEqual({ rate: 0.025, amount: 10000, split: null });
    const res = await call("PUT", `/v1/deals/${deal.id}`, { token: p.token, body: read });
    const payload = await json(res);
    expect(res.status, JSON.stringify(payload)).toBe(200);
    expect(payload.data).toEqual(deal);
  });
});

describe("POST /v1/deals/{id}/move", () => {
  it("records a STAGE_CHANGED activity and deal.stage_changed; the probability given is stored", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    await tick(3);
    const res = await call("POST", `/v1/deals/${deal.id}/move`, {
      token: p.token,
      body: { stage: "NEGOTIATION", reason: "Offer received", probability: 65 },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBe('"2"');
    const moved = (await json(res)).data as DealJson;
    expect(moved).toMatchObject({ id: deal.id, stage: "NEGOTIATION", probability: 65, status: "ACTIVE" });
    expect(moved.lastActivityAt > deal.lastActivityAt).toBe(true);
    expect(await getDeal(p.token, deal.id)).toEqual(moved);

    const activities = await json(await call("GET", `/v1/deals/${deal.id}/activities`, { token: p.token }));
    expect(activities.data[0]).toMatchObject({
      type: "STAGE_CHANGED",
      userId: p.userId,
      metadata: { previousStage: "LEAD", newStage: "NEGOTIATION", reason: "Offer received" },
    });

    const events = (await eventsOf(p.organizationId)).filter((e) => e.type.startsWith("deal."));
    expect(events.map((e) => e.type)).toEqual(["deal.created", "deal.updated", "deal.stage_changed"]);
    expect(events[2]!.data).toMatchObject({
      object: { id: deal.id, stage: "NEGOTIATION", probability: 65 },
      previousAttributes: { stage: "LEAD" },
      changes: ["stage"],
      stageChange: { previousStage: "LEAD", newStage: "NEGOTIATION", reason: "Offer received" },
    });
    expect(events[1]!.data.previousAttributes).toMatchObject({ stage: "LEAD", probability: 10 });
  });

  it("without a probability the stage's default is taken; without a reason the activity says null", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token, { probability: 33 });
    expect((await moveDeal(p.token, deal.id, "NEGOTIATION")).probability).toBe(50);
    expect((await moveDeal(p.token, deal.id, "CONTRACT")).probability).toBe(70);
    expect((await moveDeal(p.token, deal.id, "QUALIFIED")).probability).toBe(20);
    const stageChanged = (await eventsOf(p.organizationId)).filter((e) => e.type === "deal.stage_changed");
    expect(stageChanged.map((e) => e.data.stageChange)).toEqual([
      { previousStage: "LEAD", newStage: "NEGOTIATION", reason: null },
      { previousStage: "NEGOTIATION", newStage: "CONTRACT", reason: null },
      { previousStage: "CONTRACT", newStage: "QUALIFIED", reason: null },
    ]);
    const activities = (await getDeal(p.token, deal.id, "?include=activities")).activities.filter(
      (a: { type: string }) => a.type === "STAGE_CHANGED",
    );
    expect(activities.map((a: { metadata: unknown }) => a.metadata)).toEqual([
      { previousStage: "CONTRACT", newStage: "QUALIFIED", reason: null },
      { previousStage: "NEGOTIATION", newStage: "CONTRACT", reason: null },
      { previousStage: "LEAD", newStage: "NEGOTIATION", reason: null },
    ]);
  });

  it("moving to the stage the deal is in is a 409 already_in_stage and records nothing", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const before = await eventsOf(p.organizationId);
    const res = await call("POST", `/v1/deals/${deal.id}/move`, { token: p.token, body: { stage: "LEAD" } });
    await expectCrmError(res.clone(), 409, "conflict_error");
    expect(await errorCode(res)).toBe("already_in_stage");
    expect(await eventsOf(p.organizationId)).toEqual(before);
    expect(await getDeal(p.token, deal.id)).toEqual(deal);
    expect(await count(p, "SELECT COUNT(*) AS n FROM deal_activities WHERE deal_id = ? AND type = 'STAGE_CHANGED'", deal.id)).toBe(0);
  });

  it("CLOSED closes the deal and emits deal.updated, deal.stage_changed, deal.won, deal.closed and DEAL_WON exactly once", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token, { amount: 750000, stage: "CLOSING" });
    const closed = await moveDeal(p.token, deal.id, "CLOSED", { reason: "Funded" });
    expect(closed).toMatchObject({ stage: "CLOSED", status: "CLOSED", probability: 100 });
    // A second move to CLOSED changes nothing.
    const again = await call("POST", `/v1/deals/${deal.id}/move`, { token: p.token, body: { stage: "CLOSED" } });
    expect(again.status).toBe(409);
    const events = await eventsOf(p.organizationId);
    const after = events.slice(events.findIndex((e) => e.type === "deal.created") + 1);
    expect(after.map((e) => e.type)).toEqual(["deal.updated", "deal.stage_changed", "deal.won", "deal.closed", "DEAL_WON"]);
    for (const e of after.slice(0, 4)) expect(e.data.object, e.type).toMatchObject({ id: deal.id, stage: "CLOSED", status: "CLOSED" });
    expect(after[1]!.data.stageChange).toEqual({ previousStage: "CLOSING", newStage: "CLOSED", reason: "Funded" });
    expect(after[4]!.data).toMatchObject({ dealId: deal.id, contactId: deal.contactId, amount: 750000 });
    expect(
      await count(p, "SELECT COUNT(*) AS n FROM outbox_events WHERE organization_id = ? AND type = 'DEAL_WON'", p.organizationId),
    ).toBe(1);
    expect(await count(p, "SELECT COUNT(*) AS n FROM deal_activities WHERE deal_id = ? AND type = 'STAGE_CHANGED'", deal.id)).toBe(1);
  });

  it("LOST cancels the deal and emits deal.lost; reopening makes it ACTIVE again", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token, { stage: "NEGOTIATION" });
    const lost = await moveDeal(p.token, deal.id, "LOST", { reason: "Went with another agent" });
    expect(lost).toMatchObject({ stage: "LOST", status: "CANCELLED", probability: 0 });
    let types = await eventTypes(p.organizationId);
    expect(types.filter((t) => t === "deal.lost")).toHaveLength(1);
    expect(types).not.toContain("deal.won");
    expect(types).not.toContain("DEAL_WON");
    const lostEvent = (await eventsOf(p.organizationId)).find((e) => e.type === "deal.lost")!;
    expect(lostEvent.data.object).toMatchObject({ id: deal.id, stage: "LOST", status: "CANCELLED" });

    const reopened = await moveDeal(p.token, deal.id, "NEGOTIATION", { reason: "They came back" });
    expect(reopened).toMatchObject({ stage: "NEGOTIATION", status: "ACTIVE", probability: 50 });
    types = await eventTypes(p.organizationId);
    expect(types.filter((t) => t === "deal.stage_changed")).toHaveLength(2);

    // From CLOSED too.
    await moveDeal(p.token, deal.id, "CLOSED");
    expect(await moveDeal(p.token, deal.id, "CLOSING")).toMatchObject({ stage: "CLOSING", status: "ACTIVE", probability: 90 });
  });

  it("an ON_HOLD deal stays ON_HOLD across a move between open stages", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    await updateDeal(p.token, deal.id, { status: "ON_HOLD" });
    expect(await moveDeal(p.token, deal.id, "QUALIFIED")).toMatchObject({ stage: "QUALIFIED", status: "ON_HOLD" });
    expect((await getDeal(p.token, deal.id)).status).toBe("ON_HOLD");
  });

  it("refuses an unknown stage, a probability outside 0-100 and unknown fields", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const res = await call("POST", `/v1/deals/${deal.id}/move`, {
      token: p.token,
      body: { stage: "WON", probability: 101, colour: "red" },
    });
    expect(issuePairs(await expectCrmError(res, 422, "validation_error")).map((x) => x.split(":")[0])).toEqual([
      "colour",
      "probability",
      "stage",
    ]);
    const missing = await call("POST", `/v1/deals/${deal.id}/move`, { token: p.token, body: {} });
    expect(issuePairs(await expectCrmError(missing, 422, "validation_error"))).toEqual(["stage:required"]);
    expect(await getDeal(p.token, deal.id)).toEqual(deal);
  });
});

describe("DELETE /v1/deals/{id}", () => {
  it("deletes the deal with its tasks, documents, activities and history; deal.deleted carries only the id", async () => {
    const p = await createPrincipal();
    const deal = await createDeal(p.token);
    const keep = await createDeal(p.token);
    await createTask(p.token, deal.id);
    const upload = await call("POST", `/v1/deals/${deal.id}/documents`, {
      token: p.token,
      body: documentForm(undefined, { name: "Offer", type: "CONTRACT" }),
    });
    expect(upload.status).toBe(201);
    await moveDeal(p.token, deal.id, "QUALIFIED");
    const rows = async (id: string) => ({
      tasks: await count(p, "SELECT COUNT(*) AS n FROM tasks WHERE deal_id = ?", id),
      documents: await count(p, "SELECT COUNT(*) AS n FROM deal_documents WHERE deal_id = ?", id),
      activities: await count(p, "SELECT COUNT(*) AS n FROM deal_activities WHERE deal_id = ?", id),
      history: await count(p, "SELECT COUNT(*) AS n FROM deal_stage_changes WHERE deal_id = ?", id),
      deals: await count(p, "SELECT COUNT(*) AS n FROM deals WHERE id = ?", id),
    });
    expect(Object.values(await rows(deal.id)).every((n) => n > 0)).toBe(true);

    const res = await call("DELETE", `/v1/deals/${deal.id}`, { token: p.token });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true, message: expect.any(String), data: { id: deal.id, deleted: true } });
    await expectCrmError(await call("GET", `/v1/deals/${deal.id}`, { token: p.token }), 404, "not_found_error");
    await expectCrmError(await call("DELETE", `/v1/deals/${deal.id}`, { token: p.token }), 404, "not_found_error");
    await expectCrmError(
      await call("POST", `/v1/deals/${deal.id}/move`, { token: p.token, body: { stage: "LEAD" } }),
      404,
      "not_found_error",
    );
    expect(await rows(deal.id)).toEqual({ tasks: 0, documents: 0, activities: 0, history: 0, deals: 0 });
    expect((await rows(keep.id)).deals).toBe(1);
    expect(ids((await listDeals(p.token)).data)).toEqual([keep.id]);
    expect((await listDeals(p.token)).pagination.total).toBe(1);
    const deleted = (await eventsOf(p.organizationId)).filter((e) => e.type === "deal.deleted");
    expect(deleted.map((e) => e.data)).toEqual([{ object: { id: deal.id }, previousAttributes: null, changes: null }]);
  });
});

describe("deal events reach a subscribed receiver, signed", { timeout: 30_000 }, () => {
  it("deal.created and deal.stage_changed", async () => {
    const owner = await createPrincipal();
    const box = await openMailbox();
    const sub = await subscribe(owner, { url: box.url, events: ["deal.created", "deal.stage_changed"] });
    const deal = await createDeal(owner.token);
    await moveDeal(owner.token, deal.id, "QUALIFIED", { reason: "Pre-approved" });
    await vi.waitFor(async () => expect(await box.count()).toBe(2), { timeout: 20_000, interval: 200 });
    const received = await box.received();
    for (const r of received) expect(await verifyWebhook(sub.secret, r.headers, r.body)).toMatchObject({ ok: true });
    // Tampering breaks the signature.
    expect(await verifyWebhook(sub.secret, received[0]!.headers, received[0]!.body.replace(deal.id, "x"))).toMatchObject({ ok: false });
    const byEvent = Object.fromEntries(received.map((r) => [r.headers["x-service-event"], JSON.parse(r.body)]));
    expect(Object.keys(byEvent).sort()).toEqual(["deal.created", "deal.stage_changed"]);
    expect(byEvent["deal.created"]).toMatchObject({
      event: "deal.created",
      organization: { id: owner.organizationId },
      data: { object: { ...deal }, previousAttributes: null },
    });
    expect(byEvent["deal.stage_changed"]).toMatchObject({
      event: "deal.stage_changed",
      data: { object: { id: deal.id, stage: "QUALIFIED", probability: 20 }, previousAttributes: { stage: "LEAD" }, changes: ["stage"] },
    });
    // Nothing else was delivered (deal.updated is not subscribed).
    await tick(500);
    expect(await box.count()).toBe(2);
  });
});

describe("contacts with include=deals", () => {
  it("GET /v1/contacts/{id}?include=deals lists the contact's deals newest first; [] without deals", async () => {
    const p = await createPrincipal();
    const c = await createContact(p.token);
    const lonely = await createContact(p.token);
    const made: DealJson[] = [];
    for (const title of ["First", "Second", "Third"]) {
      made.push(await createDeal(p.token, { contactId: c.id, title }));
      await tick(3);
    }
    const otherContact = await createDeal(p.token, { title: "Someone else's" });
    const moved = await moveDeal(p.token, made[0]!.id, "NEGOTIATION");
    const read = await getContact(p.token, c.id, "?include=deals");
    expect(read.deals.map((d: DealJson) => d.title)).toEqual(["Third", "Second", "First"]);
    expect(read.deals).toEqual([made[2], made[1], moved]);
    expect(ids(read.deals)).not.toContain(otherContact.id);
    expect((await getContact(p.token, lonely.id, "?include=deals")).deals).toEqual([]);
    expect(await getContact(p.token, c.id)).not.toHaveProperty("deals");

    expect((await call("DELETE", `/v1/deals/${made[1]!.id}`, { token: p.token })).status).toBe(200);
    expect(ids((await getContact(p.token, c.id, "?include=deals")).deals)).toEqual([made[2]!.id, made[0]!.id]);
  });

  it("the contacts list with include=deals carries each contact's deals", async () => {
    const p = await createPrincipal();
    const stranger = await createPrincipal();
    const withDeals = await createContact(p.token);
    const without = await createContact(p.token);
    const d1 = await createDeal(p.token, { contactId: withDeals.id, title: "One" });
    await tick(3);
    const d2 = await createDeal(p.token, {
      contactId: withDeals.id,
      title: "Two",
      commission: { rate: 0.03 },
      timeline: { closingDate: "2026-12-01" },
    });
    await createDeal(stranger.token);
    const page = await listPage(p.token, "include=deals");
    const byId = Object.fromEntries(page.data.map((c) => [c.id, c]));
    expect(Object.keys(byId).sort()).toEqual([withDeals.id, without.id].sort());
    expect(byId[withDeals.id]!.deals).toEqual([d2, d1]);
    expect(byId[without.id]!.deals).toEqual([]);
  });
});
