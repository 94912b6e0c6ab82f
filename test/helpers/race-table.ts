import { env } from "cloudflare:workers";
import { expect, vi } from "vitest";
import { createDb } from "../../src/db/client";
import { decryptSecret } from "../../src/webhooks/secret-box";
import { handleReferralEvents } from "../../src/referrals/service";
import { sendDueSurveys } from "../../src/surveys/scheduling";
import { call, json } from "./client";
import { createContact, getContact, uniqueEmail } from "./contacts";
import { openAiGateway } from "./ai-gateway";
import { sha256Hex } from "../../src/lib/crypto";
import { createDocument, leaseCanonical, mailTo, sendForSignature } from "./documents";
import { createPrincipal, tenantDb, type TestPrincipal } from "./factories";
import { buildPdf, uploaded } from "./uploads";
import { MATRIX_APPOINTMENT, seedHostedSigner, VIEW_BODY } from "./route-table";
import { openMailbox } from "./receiver";
import { createDeal, createTask, documentForm, getDeal } from "./deals";
import { createProperty, getProperty, mlsListedProperty, mlsVars, photoForm, PNG_1X1, propertyBody, valuableProperty } from "./properties";
import { publishedProfile } from "./profiles";
import { seedPond, seedPondLead } from "./ponds";
import { aggregateOf, createTestimonial, move, publishedTestimonial } from "./testimonials";
import { createSurveyTemplate, publicSurvey, scheduleSurvey, seedSurvey, STANDARD_QUESTIONS } from "./surveys";

/**
 * Every write route of the API with a way to race it (issue 15), beside ROUTES. The write-path test drives each
 * entry concurrently through the Worker's fetch handler:
 *
 * - `independent`: `changes.length` requests at once that do not conflict (different fields, different tags …);
 *   every one answers 2xx and every change is there afterwards (no lost update).
 * - `once`: `copies` requests at once that can succeed only once (a delete, a state move) on each of `objects`
 *   objects; exactly one 2xx per object, and the counters and events of the move happen exactly once.
 * - `child`: writes under a parent racing the parent's delete; afterwards nothing is left under the parent.
 *
 * Each issue that adds write routes adds them here; the test fails for a write route of ROUTES missing from RACES.
 */
export type Params = Record<string, string>;
type Change = { path?: string; body?: unknown; rawBody?: Uint8Array; headers?: Record<string, string> };

export interface IndependentRace {
  kind: "independent";
  route: string;
  seed(owner: TestPrincipal): Promise<Params>;
  /** Configuration the writes need on top of the test env, from the seed's params. */
  vars?: (params: Params) => Record<string, string>;
  changes(owner: TestPrincipal, params: Params): Promise<Change[]>;
  /** The credential the writes are made with, when not the owner's session (a web form's key, say). */
  token?: (owner: TestPrincipal) => Promise<string>;
  /** Asserts that every change landed. */
  verify(owner: TestPrincipal, params: Params): Promise<void>;
}

export interface OnceRace {
  kind: "once";
  route: string;
  seed(owner: TestPrincipal): Promise<Params>;
  /** The request path with the seed's params, when the route's path does not name the object (a query does). */
  path?: string;
  /** The body of every copy, or made from the seed's params (a merge names the seeded source). */
  body?: unknown | ((params: Params) => unknown);
  objects?: number;
  copies?: number;
  /** A count the move changes, read through the API or D1, and how much each successful move changes it. */
  counter?: { read(owner: TestPrincipal): Promise<number>; perMove: number };
  /** The event each successful move emits once. */
  event?: string;
  /**
   * A move that may rightly succeed again once the previous one has ended (an organization export: one at a time, and
   * a near-empty one ends in a few hundred ms, so a late copy may start a second): the spans of every move made. Then
   * at least one copy succeeds, each success made exactly one move, and no two spans overlap.
   */
  serial?(owner: TestPrincipal): Promise<Array<{ start: string; end: string | null }>>;
}

export interface ChildRace {
  kind: "child";
  route: string;
  seed(owner: TestPrincipal): Promise<Params>;
  body: (i: number, params: Params) => unknown;
  /** The parent's delete, as a path pattern with the same params. */
  parentDelete: string;
  /** Configuration the child write needs on top of the test env, from the seed's params. */
  vars?: (params: Params) => Record<string, string>;
  /** Rows left under the parent (and counts that should be back to zero) after both have settled. */
  leftovers(owner: TestPrincipal, params: Params): Promise<Record<string, number>>;
}

export type Race = IndependentRace | OnceRace | ChildRace;

/** A count on the shard of `owner`'s organization. */
const RACED_TEMPLATE = {
  name: "Raced template",
  roles: [{ key: "buyer", label: "Buyer", role: "signer" }],
  fields: [{ role: "buyer", type: "signature", name: "sig", page: 1, x: 10, y: 80, width: 30, height: 6 }],
};
async function racedTemplate(owner: TestPrincipal): Promise<Params> {
  const doc = await uploaded(owner.token, await buildPdf([{}]));
  const res = await call("POST", "/api/templates", { token: owner.token, body: { documentId: doc.id, ...RACED_TEMPLATE } });
  expect(res.status).toBe(201);
  return { id: (await json(res)).template.id };
}

const count = async (owner: Pick<TestPrincipal, "organizationId">, sql: string, ...binds: unknown[]) =>
  (await (
    await tenantDb(owner.organizationId)
  )
    .prepare(sql)
    .bind(...binds)
    .first<{ n: number }>())!.n;

/** Outbox events of an organization, of one type. */
export const eventCount = (organizationId: string, type: string) =>
  count({ organizationId }, "SELECT COUNT(*) AS n FROM outbox_events WHERE organization_id = ? AND type = ?", organizationId, type);

const dealTotal = async (owner: TestPrincipal) =>
  (await json(await call("GET", "/v1/deals?limit=1", { token: owner.token }))).pagination.total as number;
const pipelineOf = async (owner: TestPrincipal) =>
  (await json(await call("GET", "/v1/deals/pipeline", { token: owner.token }))).data as {
    totalDeals: number;
    totalValue: number;
    stages: { stage: string; count: number }[];
  };

/** Changes of different fields of one deal, raced: every one must land. */
const DEAL_CHANGES: Record<string, unknown>[] = [
  { title: "Raced title" },
  { description: "Raced description" },
  { amount: 640000 },
  { probability: 33 },
  { source: "RACE" },
  { notes: "raced notes" },
  { tags: ["raced"] },
  { timeline: { closingDate: "2027-01-15" } },
  { type: "SALE" },
  { status: "ON_HOLD" },
];

const propertyTotal = async (owner: TestPrincipal) =>
  (await json(await call("GET", "/v1/properties?limit=1", { token: owner.token }))).pagination.total as number;

/** Changes of different fields of one property, raced: every one must land. */
const PROPERTY_CHANGES: Record<string, unknown>[] = [
  { address: { city: "Raced City" } },
  { details: { bedrooms: 7 } },
  { details: { pool: true } },
  { listing: { listPrice: 600000 } },
  { listing: { status: "PENDING" } },
  { marketing: { description: "raced" } },
  { hoa: { monthlyFee: 99 } },
  { taxes: { annualAmount: 1234 } },
  { features: { interior: ["Raced"] } },
  { mlsId: "RACED-1" },
  { media: { virtualTour: "https://tour.example.test/raced" } },
  { disclosure: { floodZone: "X" } },
];

/** Changes of different fields of the organization, raced: every one must land. */
const ORGANIZATION_CHANGES: Record<string, unknown>[] = [
  { displayName: "Raced Realty" },
  { timeZone: "Europe/Paris" },
  { settings: { defaultPhoneRegion: "FR" } },
  { settings: { leadRouting: { mode: "zip", zipRules: [] } } },
];

/** Changes of different fields of a user, raced: every one must land. */
const USER_CHANGES: Record<string, unknown>[] = [{ name: "Raced Name" }, { role: "admin" }, { acceptsLeads: false }];

/** The seeded object, deleted: it waits in the trash. */
async function trashed(owner: TestPrincipal, collection: string, seeded: Promise<Params>): Promise<Params> {
  const params = await seeded;
  expect((await call("DELETE", `${collection}/${params.id}`, { token: owner.token })).status).toBe(200);
  return params;
}

const contactParams = async (owner: TestPrincipal, overrides: Record<string, unknown> = {}) => ({
  id: (await createContact(owner.token, overrides)).id,
});
const contactTotal = async (owner: TestPrincipal) =>
  (await json(await call("GET", "/v1/contacts?limit=1", { token: owner.token }))).pagination.total as number;
/** A lead kept for review (issue 40), each with its own number (an accepted one's would match the next), and an e-mail for its accept. */
let reviewSeq = 0;
async function leadReviewParams(owner: TestPrincipal): Promise<Params> {
  const phone = `+1 415 555 ${1000 + (reviewSeq++ % 9000)}`;
  const res = await call("POST", "/v1/leads", {
    token: owner.token,
    body: { source: "WEBSITE", person: { firstName: "Phoned", phones: [phone] } },
  });
  expect(res.status).toBe(202);
  return { id: (await json(res)).data.reviewId, email: uniqueEmail("accepted") };
}
const reviewTotal = async (owner: TestPrincipal) =>
  (await json(await call("GET", "/v1/leads/reviews?limit=1", { token: owner.token }))).pagination.total as number;

async function seedWebhook(owner: TestPrincipal): Promise<Params> {
  const box = await openMailbox();
  const res = await call("POST", "/v1/webhooks", { token: owner.token, body: { url: box.url, events: ["contact.created"] } });
  expect(res.status).toBe(201);
  return { id: (await json(res)).data.id, box: box.id };
}

const TESTIMONIAL_CHANGES: Record<string, unknown>[] = [
  { headline: "Raced headline" },
  { body: "Raced body" },
  { isFeatured: true },
  { sortOrder: 7 },
  { displayName: "Raced Name" },
  { displayLocation: "Raced City" },
  { displayPhotoUrl: "https://photos.example.test/raced.jpg" },
  { permissionToPublishName: true },
  { permissionToPublishLocation: true },
  { permissionToPublishPhoto: true },
];

const CONTACT_CHANGES = (owner: TestPrincipal): Record<string, unknown>[] => [
  { firstName: "Raced" },
  { lastName: "Winner" },
  { phone: "+1 555 0100" },
  { secondaryPhone: "+1 555 0101" },
  { address: { street: "1 Race St", city: "Toronto", state: "ON", zipCode: "M5V 1A1" } },
  { type: "CLIENT" },
  { status: "INACTIVE" },
  { source: "OPEN_HOUSE" },
  { leadScore: 77 },
  { notes: "raced notes" },
  { preferences: { communicationMethod: "SMS" } },
  { assignedTo: owner.userId },
  { tags: ["raced"] },
];

export const RACES: Race[] = [
  // Contacts (issue 3).
  {
    kind: "independent",
    route: "PUT /v1/contacts/{id}",
    seed: (owner) => contactParams(owner),
    changes: async (owner) => [...CONTACT_CHANGES(owner), { email: "raced.winner@example.test" }].map((body) => ({ body })),
    async verify(owner, { id }) {
      const c = await getContact(owner.token, id!);
      for (const change of [...CONTACT_CHANGES(owner), { email: "raced.winner@example.test" }]) expect(c).toMatchObject(change);
      expect(await eventCount(owner.organizationId, "contact.updated")).toBe(14);
    },
  },
  {
    kind: "independent",
    route: "PATCH /v1/contacts/bulk",
    async seed(owner) {
      const ids = [];
      for (let i = 0; i < 5; i++) ids.push((await createContact(owner.token)).id);
      return { ids: ids.join(",") };
    },
    changes: async (owner, { ids }) => CONTACT_CHANGES(owner).map((updates) => ({ body: { contactIds: ids!.split(","), updates } })),
    async verify(owner, { ids }) {
      for (const id of ids!.split(",")) {
        const c = await getContact(owner.token, id);
        for (const change of CONTACT_CHANGES(owner)) expect(c).toMatchObject(change);
      }
      const tags = await json(await call("GET", "/v1/contacts/tags", { token: owner.token }));
      expect(tags.data).toEqual([expect.objectContaining({ name: "raced", count: 5 })]);
    },
  },
  {
    kind: "independent",
    route: "POST /v1/contacts/{id}/tags",
    seed: (owner) => contactParams(owner),
    changes: async () => Array.from({ length: 20 }, (_, i) => ({ body: { tags: [`t${i}`] } })),
    async verify(owner, { id }) {
      const c = await getContact(owner.token, id!);
      expect([...c.tags].sort()).toEqual(Array.from({ length: 20 }, (_, i) => `t${i}`).sort());
      const tags = await json(await call("GET", "/v1/contacts/tags?limit=100", { token: owner.token }));
      expect(tags.pagination.total).toBe(20);
      for (const t of tags.data) expect(t.count).toBe(1);
      expect(await eventCount(owner.organizationId, "contact.tagged")).toBe(20);
    },
  },
  {
    kind: "independent",
    route: "POST /v1/contacts/{id}/activities",
    seed: (owner) => contactParams(owner, { calculateLeadScore: true }),
    changes: async () => Array.from({ length: 20 }, (_, i) => ({ body: { type: "PHONE_CALL", description: `call ${i}` } })),
    async verify(owner, { id }) {
      const page = await json(await call("GET", `/v1/contacts/${id}/activities?limit=100`, { token: owner.token }));
      expect(page.pagination.total).toBe(20);
      const res = await call("GET", `/v1/contacts/${id}`, { token: owner.token });
      // Created at version 1; every activity moved it once.
      expect(res.headers.get("etag")).toBe('"21"');
      // Engagement saw all 20: 1.5 per activity (capped at 15) + 2 per call (capped at 10), recency 15, type LEAD 3.
      expect((await json(res)).data.leadScore).toBe(15 + 10 + 15 + 3);
    },
  },
  {
    kind: "independent",
    route: "POST /v1/contacts",
    seed: async () => ({}),
    changes: async () =>
      Array.from({ length: 20 }, (_, i) => ({ body: { firstName: "Many", lastName: `N${i}`, email: uniqueEmail("race") } })),
    async verify(owner) {
      expect(await contactTotal(owner)).toBe(20);
      expect(await count(owner, "SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ?", owner.organizationId)).toBe(20);
      expect(await eventCount(owner.organizationId, "contact.created")).toBe(20);
    },
  },
  // Lead intake (issue 33): concurrent intakes of one new person make one contact; every one answers 2xx (the
  // losers of the create match it on their retry), each logs its activity, and the contact is created once.
  {
    kind: "independent",
    route: "POST /v1/leads",
    seed: async () => ({ email: uniqueEmail("lead-race") }),
    changes: async (_owner, { email }) =>
      Array.from({ length: 30 }, (_, i) => ({
        body: {
          source: "WEBSITE",
          sourceEventId: `race-${i}`,
          person: { firstName: "Raced", emails: [i % 2 ? email!.toUpperCase() : email], phones: ["+1 415 555 0160"] },
        },
      })),
    async verify(owner) {
      expect(await contactTotal(owner)).toBe(1);
      expect(await count(owner, "SELECT COUNT(*) AS n FROM contact_activities WHERE organization_id = ?", owner.organizationId)).toBe(30);
      expect(await count(owner, "SELECT COUNT(*) AS n FROM lead_intakes WHERE organization_id = ?", owner.organizationId)).toBe(30);
      expect(await eventCount(owner.organizationId, "contact.created")).toBe(1);
    },
  },
  // Leads from a web form's key (issue 40): stored, answered 202 and taken in after the answer. Concurrent intakes of
  // one new person still make one contact, each logs its activity once, and nothing stays stored.
  {
    kind: "independent",
    route: "POST /v1/leads",
    seed: async () => ({ email: uniqueEmail("form-race") }),
    token: async (owner) =>
      (await json(await call("POST", "/v1/api-keys", { token: owner.token, body: { name: "Form", permissions: ["leads:write"] } }))).data
        .key,
    changes: async (_owner, { email }) =>
      Array.from({ length: 20 }, (_, i) => ({
        body: { source: "WEBSITE", sourceEventId: `form-race-${i}`, person: { firstName: "Formed", emails: [email] } },
      })),
    async verify(owner) {
      const stored = () => count(owner, "SELECT COUNT(*) AS n FROM lead_inbox WHERE organization_id = ?", owner.organizationId);
      // Taken in after the answers: wait for the deferred intakes to finish.
      for (let i = 0; i < 100 && (await stored()) > 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(await stored()).toBe(0);
      expect(await contactTotal(owner)).toBe(1);
      expect(await count(owner, "SELECT COUNT(*) AS n FROM contact_activities WHERE organization_id = ?", owner.organizationId)).toBe(20);
      expect(await count(owner, "SELECT COUNT(*) AS n FROM lead_intakes WHERE organization_id = ?", owner.organizationId)).toBe(20);
      expect(await eventCount(owner.organizationId, "contact.created")).toBe(1);
    },
  },
  // Leads kept for review (issue 40): phone-only intakes that match nobody each keep one review, repeats of one event
  // one between them; of concurrent accepts of a review one makes the contact (the others find it gone), and of
  // concurrent dismissals one deletes it.
  {
    kind: "independent",
    route: "POST /v1/leads",
    seed: async () => ({}),
    changes: async () =>
      Array.from({ length: 30 }, (_, i) => ({
        body: {
          source: "WEBSITE",
          sourceEventId: `review-race-${i < 20 ? i : "same"}`,
          person: { firstName: "Phoned", phones: ["+1 415 555 0161"] },
        },
      })),
    async verify(owner) {
      expect(await contactTotal(owner)).toBe(0);
      expect(await count(owner, "SELECT COUNT(*) AS n FROM lead_reviews WHERE organization_id = ?", owner.organizationId)).toBe(21);
      expect(
        await count(owner, "SELECT COUNT(*) AS n FROM lead_intakes WHERE organization_id = ? AND status = 202", owner.organizationId),
      ).toBe(21);
    },
  },
  {
    kind: "once",
    route: "POST /v1/leads/reviews/{id}/accept",
    seed: (owner) => leadReviewParams(owner),
    body: (params: Params) => ({ email: params.email }),
    objects: 5,
    copies: 5,
    counter: { read: contactTotal, perMove: 1 },
    event: "contact.created",
  },
  {
    kind: "once",
    route: "DELETE /v1/leads/reviews/{id}",
    seed: (owner) => leadReviewParams(owner),
    objects: 5,
    copies: 5,
    counter: { read: reviewTotal, perMove: -1 },
  },
  {
    kind: "once",
    route: "DELETE /v1/contacts/{id}",
    seed: (owner) => contactParams(owner, { tags: ["doomed"] }),
    objects: 10,
    copies: 5,
    counter: { read: contactTotal, perMove: -1 },
    event: "contact.deleted",
  },
  {
    kind: "once",
    route: "POST /v1/contacts/{id}/restore",
    seed: (owner) => trashed(owner, "/v1/contacts", contactParams(owner, { tags: ["back"] })),
    objects: 10,
    copies: 5,
    counter: { read: contactTotal, perMove: 1 },
    event: "contact.restored",
  },
  {
    kind: "child",
    route: "POST /v1/contacts/{id}/activities",
    seed: (owner) => contactParams(owner),
    body: (i) => ({ type: "NOTE", description: `note ${i}` }),
    parentDelete: "/v1/contacts/{id}",
    leftovers: async (owner) => ({
      activities: await count(owner, "SELECT COUNT(*) AS n FROM contact_activities WHERE organization_id = ?", owner.organizationId),
    }),
  },
  // Merge (issue 33): merges of different sources into one target all land (each re-reads the target it lost to);
  // copies of one merge land once, the others find the source merged (409 merged_contact).
  {
    kind: "independent",
    route: "POST /v1/contacts/{id}/merge",
    async seed(owner) {
      const sources = [];
      for (let i = 0; i < 10; i++) sources.push((await createContact(owner.token, { tags: [`m${i}`, "shared"] })).id);
      return { id: (await createContact(owner.token, { tags: ["shared"] })).id, sources: sources.join(",") };
    },
    changes: async (_, { sources }) => sources!.split(",").map((s) => ({ body: { sourceIds: [s] } })),
    async verify(owner, { id, sources }) {
      const c = await getContact(owner.token, id!);
      expect([...c.tags].sort()).toEqual(["shared", ...Array.from({ length: 10 }, (_, i) => `m${i}`)].sort());
      for (const s of sources!.split(",")) expect((await call("GET", `/v1/contacts/${s}`, { token: owner.token })).status).toBe(404);
      expect(await contactTotal(owner)).toBe(1);
      const tags = await json(await call("GET", "/v1/contacts/tags?limit=100", { token: owner.token }));
      expect(tags.data.find((t: { name: string }) => t.name === "shared").count).toBe(1);
      expect(tags.pagination.total).toBe(11);
      expect(await eventCount(owner.organizationId, "contact.deleted")).toBe(10);
    },
  },
  {
    kind: "once",
    route: "POST /v1/contacts/{id}/merge",
    seed: async (owner) => ({
      id: (await createContact(owner.token)).id,
      source: (await createContact(owner.token, { tags: ["dup"] })).id,
    }),
    body: (params: Params) => ({ sourceIds: [params.source] }),
    objects: 5,
    copies: 4,
    counter: { read: contactTotal, perMove: -1 },
    event: "contact.deleted",
  },
  // Communications (issue 32): each moves the contact's version under its compare-and-set, so all land; none outlives
  // the contact's delete outside the trash.
  {
    kind: "independent",
    route: "POST /v1/contacts/{id}/communications",
    seed: (owner) => contactParams(owner),
    changes: async () =>
      Array.from({ length: 20 }, (_, i) => ({
        body: {
          type: "sms",
          direction: i % 2 ? "inbound" : "outbound",
          body: `text ${i}`,
          occurredAt: new Date(Date.now() - (20 - i) * 60_000).toISOString(),
        },
      })),
    async verify(owner, { id }) {
      const page = await json(await call("GET", `/v1/contacts/${id}/communications?limit=100`, { token: owner.token }));
      expect(page.pagination.total).toBe(20);
      const res = await call("GET", `/v1/contacts/${id}`, { token: owner.token });
      expect(res.headers.get("etag")).toBe('"21"');
      // The latest of them, whatever order they landed in.
      expect((await json(res)).data.lastContactedAt).toBe(page.data[0].occurredAt);
      expect(
        (await eventCount(owner.organizationId, "communication.sms_sent")) +
          (await eventCount(owner.organizationId, "communication.sms_received")),
      ).toBe(20);
    },
  },
  {
    kind: "child",
    route: "POST /v1/contacts/{id}/communications",
    seed: (owner) => contactParams(owner),
    body: (i) => ({ type: "call", direction: "inbound", durationSeconds: i }),
    parentDelete: "/v1/contacts/{id}",
    leftovers: async (owner) => ({
      communications: await count(
        owner,
        "SELECT COUNT(*) AS n FROM contact_communications WHERE organization_id = ?",
        owner.organizationId,
      ),
    }),
  },
  {
    kind: "child",
    route: "POST /v1/contacts/{id}/tags",
    seed: (owner) => contactParams(owner, { tags: ["first"] }),
    body: (i) => ({ tags: [`child-${i}`] }),
    parentDelete: "/v1/contacts/{id}",
    leftovers: async (owner) => ({
      tagLinks: await count(owner, "SELECT COUNT(*) AS n FROM contact_tags WHERE organization_id = ?", owner.organizationId),
      listedTags: (await json(await call("GET", "/v1/contacts/tags", { token: owner.token }))).pagination.total,
      contacts: await contactTotal(owner),
    }),
  },
  {
    kind: "child",
    route: "PUT /v1/contacts/{id}",
    seed: (owner) => contactParams(owner),
    body: (i) => ({ notes: `edit ${i}`, tags: [`put-${i}`] }),
    parentDelete: "/v1/contacts/{id}",
    leftovers: async (owner) => ({
      contactRows: await count(owner, "SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ?", owner.organizationId),
      tagLinks: await count(owner, "SELECT COUNT(*) AS n FROM contact_tags WHERE organization_id = ?", owner.organizationId),
      tagRows: await count(owner, "SELECT COUNT(*) AS n FROM tags WHERE organization_id = ?", owner.organizationId),
    }),
  },

  // Webhooks (issue 4).
  {
    kind: "independent",
    route: "PATCH /v1/webhooks/{id}",
    seed: seedWebhook,
    changes: async () => [
      { body: { description: "raced description" } },
      { body: { events: ["contact.created", "contact.deleted"] } },
      { body: { filters: { "contact.source": { in: ["WEBSITE"] } } } },
      { body: { rotateSecret: true } },
      { body: { url: (await openMailbox()).url } },
    ],
    async verify(owner, { id }) {
      const w = (await json(await call("GET", `/v1/webhooks/${id}`, { token: owner.token }))).data;
      expect(w).toMatchObject({
        description: "raced description",
        events: ["contact.created", "contact.deleted"],
        filters: { "contact.source": { in: ["WEBSITE"] } },
      });
      expect(w.url).toMatch(/\/hooks\/m\d+$/);
    },
  },
  {
    kind: "independent",
    route: "POST /v1/webhooks",
    seed: async () => ({}),
    changes: async () =>
      Array.from({ length: 20 }, (_, i) => ({
        body: { url: `http://127.0.0.1:9/hooks/${i}`, events: ["contact.created"], enabled: false },
      })),
    async verify(owner) {
      expect((await json(await call("GET", "/v1/webhooks?limit=100", { token: owner.token }))).pagination.total).toBe(20);
    },
  },
  {
    kind: "independent",
    route: "POST /v1/webhooks/{id}/test",
    seed: seedWebhook,
    changes: async () => Array.from({ length: 20 }, () => ({})),
    async verify(owner, { id }) {
      expect((await json(await call("GET", `/v1/webhooks/${id}/deliveries?limit=100`, { token: owner.token }))).pagination.total).toBe(20);
    },
  },
  {
    kind: "once",
    route: "DELETE /v1/webhooks/{id}",
    seed: seedWebhook,
    objects: 5,
    copies: 10,
    counter: {
      read: async (owner) => (await json(await call("GET", "/v1/webhooks", { token: owner.token }))).pagination.total,
      perMove: -1,
    },
  },
  {
    kind: "once",
    route: "POST /v1/webhooks/{id}/deliveries/{deliveryId}/replay",
    async seed(owner) {
      const { id } = await seedWebhook(owner);
      const deliveryId = (await json(await call("POST", `/v1/webhooks/${id}/test`, { token: owner.token }))).data.id as string;
      for (let i = 0; i < 100; i++) {
        const log = await json(await call("GET", `/v1/webhooks/${id}/deliveries`, { token: owner.token }));
        if (log.data[0]?.status === "delivered") break;
        await new Promise((r) => setTimeout(r, 50));
      }
      return { id: id!, deliveryId };
    },
    objects: 1,
    copies: 10,
  },
  {
    kind: "once",
    route: "POST /v1/webhooks/{id}/events/{eventId}/replay",
    async seed(owner) {
      const { id } = await seedWebhook(owner);
      const eventId = crypto.randomUUID();
      await (await tenantDb(owner.organizationId))
        .prepare(
          "INSERT INTO outbox_events (id, organization_id, type, actor, occurred_at, data, sent_at) VALUES (?, ?, 'contact.created', ?, ?, ?, ?)",
        )
        .bind(
          eventId,
          owner.organizationId,
          JSON.stringify({ type: "user", userId: owner.userId }),
          new Date().toISOString(),
          JSON.stringify({ object: { id: "c1" } }),
          new Date().toISOString(),
        )
        .run();
      return { id: id!, eventId };
    },
    objects: 1,
    copies: 10,
    counter: {
      read: async (owner) => count(owner, "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE organization_id = ?", owner.organizationId),
      perMove: 1,
    },
  },
  // Endpoints that heal (issue 32).
  {
    // Every rotation lands (the version moves once each), and the overlap holds a secret a rotation replaced: never
    // the first one, which every rotation but the first to land found already replaced.
    kind: "independent",
    route: "POST /v1/webhooks/{id}/rotate-secret",
    async seed(owner) {
      const res = await call("POST", "/v1/webhooks", {
        token: owner.token,
        body: { url: (await openMailbox()).url, events: ["contact.created"] },
      });
      const { id, secret } = (await json(res)).data;
      return { id, secret };
    },
    changes: async () => Array.from({ length: 8 }, () => ({ body: { overlapSeconds: 3600 } })),
    async verify(owner, { id, secret }) {
      const row = (await (
        await tenantDb(owner.organizationId)
      )
        .prepare("SELECT secret_ciphertext, previous_secret_ciphertext, version FROM webhook_subscriptions WHERE id = ?")
        .bind(id)
        .first<Record<string, any>>())!;
      expect(row.version).toBe(1 + 8);
      const [current, previous] = await Promise.all([
        decryptSecret(env.WEBHOOK_SECRET_KEY!, id!, row.secret_ciphertext),
        decryptSecret(env.WEBHOOK_SECRET_KEY!, id!, row.previous_secret_ciphertext),
      ]);
      expect(new Set([current, previous, secret]).size).toBe(3);
    },
  },
  {
    // Copies of one recover at once: one queues the failed deliveries (each one chain more, once), the others find
    // them in flight (409 recovery_in_flight).
    kind: "once",
    route: "POST /v1/webhooks/{id}/recover",
    async seed(owner) {
      const res = await call("POST", "/v1/webhooks", {
        token: owner.token,
        body: { url: (await openMailbox({ fallback: 500 })).url, events: ["contact.created"] },
      });
      const { id } = (await json(res)).data;
      const db = await tenantDb(owner.organizationId);
      const at = new Date().toISOString();
      await db.batch(
        [0, 1, 2].map(() =>
          db
            .prepare(
              "INSERT INTO webhook_deliveries (id, organization_id, subscription_id, event_id, event, body, status, attempt_count, created_at, updated_at) VALUES (?, ?, ?, ?, 'contact.created', '{}', 'dead', 21, ?, ?)",
            )
            .bind(crypto.randomUUID(), owner.organizationId, id, crypto.randomUUID(), at, at),
        ),
      );
      return { id };
    },
    body: { since: new Date(Date.now() - 3_600_000).toISOString() },
    objects: 1,
    copies: 10,
    counter: {
      read: async (owner) =>
        count(owner, "SELECT COALESCE(SUM(chain), 0) AS n FROM webhook_deliveries WHERE organization_id = ?", owner.organizationId),
      perMove: 3,
    },
  },
  {
    kind: "child",
    route: "POST /v1/webhooks/{id}/test",
    seed: seedWebhook,
    body: () => undefined,
    parentDelete: "/v1/webhooks/{id}",
    leftovers: async (owner) => ({
      deliveries: await count(owner, "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE organization_id = ?", owner.organizationId),
      attempts: await count(owner, "SELECT COUNT(*) AS n FROM webhook_delivery_attempts WHERE organization_id = ?", owner.organizationId),
    }),
  },

  // Documents and signatures (issue 7).
  {
    kind: "independent",
    route: "POST /api/documents",
    seed: async () => ({}),
    changes: async () => Array.from({ length: 20 }, () => ({ body: { formKey: "on/standard-lease", canonical: leaseCanonical() } })),
    async verify(owner) {
      // The meter counted every generation exactly once.
      expect((await json(await call("GET", "/api/documents/usage", { token: owner.token }))).used).toBe(20);
      expect(await count(owner, "SELECT COUNT(*) AS n FROM documents WHERE organization_id = ?", owner.organizationId)).toBe(20);
    },
  },
  {
    kind: "once",
    route: "POST /api/documents/{id}/signature",
    seed: async (owner) => ({ id: (await createDocument(owner.token)).id }),
    body: {},
    objects: 3,
    copies: 10,
    counter: {
      read: async (owner) => count(owner, "SELECT COUNT(*) AS n FROM envelopes WHERE organization_id = ?", owner.organizationId),
      perMove: 1,
    },
  },
  {
    // Issue 44: uploads at once each land whole (a row and its file), and none moves the generation meter.
    kind: "independent",
    route: "POST /api/documents/uploads",
    seed: async () => ({}),
    changes: async () => {
      const pdf = await buildPdf([{}, { rotate: 90 }]);
      return Array.from({ length: 6 }, (_, i) => ({
        path: `/api/documents/uploads?title=Upload%20${i}`,
        rawBody: pdf,
        headers: { "content-type": "application/pdf" },
      }));
    },
    async verify(owner) {
      expect(
        await count(owner, "SELECT COUNT(*) AS n FROM documents WHERE organization_id = ? AND source = 'upload'", owner.organizationId),
      ).toBe(6);
      expect((await env.FILES.list({ prefix: `documents/${owner.organizationId}/` })).objects).toHaveLength(6);
      expect((await json(await call("GET", "/api/documents/usage", { token: owner.token }))).used).toBe(0);
    },
  },
  {
    // Issue 44: two sends of one uploaded document open one envelope.
    kind: "once",
    route: "POST /api/documents/{id}/signature",
    seed: async (owner) => ({ id: (await uploaded(owner.token, await buildPdf([{}]))).id }),
    body: {
      recipients: [{ key: "s", name: "Raced Signer", email: "raced@upload.test", role: "signer" }],
      fields: [{ recipient: "s", type: "signature", page: 1, x: 10, y: 80, width: 30, height: 8 }],
    },
    objects: 2,
    copies: 8,
    counter: {
      read: async (owner) => count(owner, "SELECT COUNT(*) AS n FROM envelopes WHERE organization_id = ?", owner.organizationId),
      perMove: 1,
    },
  },
  {
    // Issue 45: templates made at once from one upload each land whole (a row and its own copy of the PDF).
    kind: "independent",
    route: "POST /api/templates",
    seed: async (owner) => ({ documentId: (await uploaded(owner.token, await buildPdf([{}]))).id }),
    changes: async (_, { documentId }) =>
      Array.from({ length: 4 }, (_, i) => ({ body: { documentId, ...RACED_TEMPLATE, name: `Raced template ${i}` } })),
    async verify(owner) {
      expect(await count(owner, "SELECT COUNT(*) AS n FROM templates WHERE organization_id = ?", owner.organizationId)).toBe(4);
      expect((await env.FILES.list({ prefix: `templates/${owner.organizationId}/` })).objects).toHaveLength(4);
    },
  },
  {
    // Issue 45: a rename and new fields at once: both land, each a version.
    kind: "independent",
    route: "PATCH /api/templates/{id}",
    seed: racedTemplate,
    changes: async () => [{ body: { name: "Renamed" } }, { body: { fields: [{ ...RACED_TEMPLATE.fields[0], name: "signature" }] } }],
    async verify(owner, { id }) {
      const { template } = await json(await call("GET", `/api/templates/${id}`, { token: owner.token }));
      expect(template).toMatchObject({ name: "Renamed", version: 3, fields: [expect.objectContaining({ name: "signature" })] });
    },
  },
  {
    kind: "once",
    route: "DELETE /api/templates/{id}",
    seed: racedTemplate,
    objects: 2,
    copies: 6,
    event: "template.deleted",
    counter: {
      read: async (owner) =>
        count(owner, "SELECT COUNT(*) AS n FROM trash_entries WHERE organization_id = ? AND kind = 'template'", owner.organizationId),
      perMove: 1,
    },
  },
  {
    kind: "once",
    route: "POST /api/templates/{id}/restore",
    seed: async (owner) => {
      const params = await racedTemplate(owner);
      expect((await call("DELETE", `/api/templates/${params.id}`, { token: owner.token })).status).toBe(204);
      return params;
    },
    objects: 2,
    copies: 6,
    event: "template.restored",
    counter: {
      read: async (owner) => count(owner, "SELECT COUNT(*) AS n FROM templates WHERE organization_id = ?", owner.organizationId),
      perMove: 1,
    },
  },
  {
    // Issue 45: two uses (and more) of one template at once: each its own document, file and envelope.
    kind: "independent",
    route: "POST /api/templates/{id}/use",
    seed: racedTemplate,
    changes: async () =>
      Array.from({ length: 4 }, (_, i) => ({
        body: { recipients: { buyer: { name: `Raced Buyer ${i}`, email: `raced-${i}@template.test` } } },
      })),
    async verify(owner) {
      const org = owner.organizationId;
      expect(await count(owner, "SELECT COUNT(*) AS n FROM documents WHERE organization_id = ? AND template_id IS NOT NULL", org)).toBe(4);
      expect(await count(owner, "SELECT COUNT(*) AS n FROM envelopes WHERE organization_id = ? AND source = 'template'", org)).toBe(4);
      expect((await env.FILES.list({ prefix: `documents/${org}/` })).objects).toHaveLength(5); // the upload and 4 copies
    },
  },
  {
    // Issue 45: links issued at once: each answers its URL, and exactly one stays live.
    kind: "independent",
    route: "POST /api/templates/{id}/public-link",
    seed: racedTemplate,
    changes: async () => Array.from({ length: 3 }, () => ({ body: { role: "buyer" } })),
    async verify(owner, { id }) {
      expect(
        await count(owner, "SELECT COUNT(*) AS n FROM template_links WHERE template_id = ? AND enabled = 1 AND disabled_at IS NULL", id),
      ).toBe(1);
      expect(await count(owner, "SELECT COUNT(*) AS n FROM template_links WHERE template_id = ?", id)).toBe(3);
    },
  },
  {
    // Issue 20: two fields of the organization's signing defaults, changed at once, both land.
    kind: "independent",
    route: "PUT /api/signatures/settings",
    seed: async () => ({}),
    changes: async () => [{ body: { signerVerification: "code" } }, { body: { reminders: { firstAfterDays: 3, everyDays: 7 } } }],
    async verify(owner) {
      expect(await json(await call("GET", "/api/signatures/settings", { token: owner.token }))).toEqual({
        signerVerification: "code",
        reminders: { firstAfterDays: 3, everyDays: 7 },
      });
    },
  },
  {
    kind: "once",
    route: "DELETE /api/signatures/{envelopeId}",
    seed: async (owner) => ({ envelopeId: (await sendForSignature(owner.token, (await createDocument(owner.token)).id)).envelopeId }),
    objects: 3,
    copies: 10,
    counter: {
      read: async (owner) =>
        count(owner, "SELECT COUNT(*) AS n FROM envelope_audit WHERE organization_id = ? AND event = 'voided'", owner.organizationId),
      perMove: 1,
    },
  },

  {
    // Issue 29: resends of three signers, two each, at once: each lands (an audit entry each, the chain intact) and
    // leaves each signer exactly one live link, the last one minted.
    kind: "independent",
    route: "POST /api/signatures/{envelopeId}/signers/{signerId}/resend",
    seed: async (owner) => {
      const signers = [1, 2, 3].map((i) => ({ name: `Signer ${i}`, email: `${crypto.randomUUID()}@signer.test`, role: "tenant" }));
      const sent = await sendForSignature(owner.token, (await createDocument(owner.token)).id, { signers });
      return { envelopeId: sent.envelopeId, signerId: sent.links[0]!.signerId, signers: sent.links.map((l) => l.signerId).join(",") };
    },
    changes: async (_, params) =>
      params
        .signers!.split(",")
        .flatMap((signerId) => [1, 2].map(() => ({ path: `/api/signatures/${params.envelopeId}/signers/${signerId}/resend` }))),
    async verify(owner, params) {
      const trail = await json(await call("GET", `/api/signatures/${params.envelopeId}/audit`, { token: owner.token }));
      expect(trail.chain.valid).toBe(true);
      for (const signerId of params.signers!.split(",")) {
        expect(
          trail.events.filter((e: { event: string; signerId: string }) => e.event === "resent" && e.signerId === signerId),
        ).toHaveLength(2);
        expect(await count(owner, "SELECT COUNT(*) AS n FROM signing_links WHERE signer_id = ?", signerId)).toBe(1);
      }
    },
  },

  // Issue 45: five view URLs of one embedded recipient asked at once, and five host sessions: each lands (its own
  // URL, an audit entry each, the chain intact).
  ...(["view", "host-session"] as const).map(
    (what): IndependentRace => ({
      kind: "independent",
      route: `POST /api/signatures/{envelopeId}/signers/{signerId}/${what}`,
      seed: (owner) => seedHostedSigner(owner, what === "view" ? "embedded" : "inPerson"),
      changes: async () => Array.from({ length: 5 }, () => (what === "view" ? { body: VIEW_BODY } : {})),
      async verify(owner, params) {
        const trail = await json(await call("GET", `/api/signatures/${params.envelopeId}/audit`, { token: owner.token }));
        expect(trail.chain.valid).toBe(true);
        const event = what === "view" ? "view_requested" : "host_session_started";
        expect(trail.events.filter((e: { event: string }) => e.event === event)).toHaveLength(5);
      },
    }),
  ),

  // Reputation (issue 8).
  {
    kind: "independent",
    route: "POST /api/reputation/testimonials",
    seed: async () => ({}),
    changes: async (owner) =>
      Array.from({ length: 20 }, (_, i) => ({
        body: { agentUserId: owner.userId, category: "SELLER", rating: (i % 5) + 1, body: `Review ${i}` },
      })),
    async verify(owner) {
      expect(await count(owner, "SELECT COUNT(*) AS n FROM testimonials WHERE organization_id = ?", owner.organizationId)).toBe(20);
    },
  },
  {
    kind: "independent",
    route: "PATCH /api/reputation/testimonials/{id}",
    seed: async (owner) => ({ id: (await createTestimonial(owner)).id }),
    changes: async () => TESTIMONIAL_CHANGES.map((body) => ({ body })),
    async verify(owner, { id }) {
      const t = await json(await call("GET", `/api/reputation/testimonials/${id}`, { token: owner.token }));
      for (const change of TESTIMONIAL_CHANGES) expect(t).toMatchObject(change);
    },
  },
  ...(["approve", "reject"] as const).map(
    (verb): OnceRace => ({
      kind: "once",
      route: `POST /api/reputation/testimonials/{id}/${verb}`,
      seed: async (owner) => ({ id: (await createTestimonial(owner)).id }),
      objects: 3,
      copies: 8,
    }),
  ),
  {
    kind: "once",
    route: "POST /api/reputation/testimonials/{id}/publish",
    seed: async (owner) => {
      const t = await createTestimonial(owner);
      await move(owner, t.id, "approve");
      return { id: t.id };
    },
    objects: 3,
    copies: 8,
    counter: { read: async (owner) => (await aggregateOf(owner, owner.userId)).totalReviews, perMove: 1 },
    event: "REVIEW_PUBLISHED",
  },
  {
    kind: "once",
    route: "POST /api/reputation/testimonials/{id}/unpublish",
    seed: async (owner) => ({ id: (await publishedTestimonial(owner)).id }),
    objects: 3,
    copies: 8,
    counter: { read: async (owner) => (await aggregateOf(owner)).totalReviews, perMove: -1 },
    event: "REVIEW_UNPUBLISHED",
  },
  {
    kind: "independent",
    route: "PUT /api/reputation/profile",
    seed: async () => ({}),
    changes: async () => Array.from({ length: 10 }, (_, i) => ({ body: { draftConfig: { displayName: `Draft ${i}` } } })),
    async verify(owner) {
      // Every save was applied in turn: created at version 1, then one version per later save.
      const res = await call("GET", "/api/reputation/profile", { token: owner.token });
      expect(res.headers.get("etag")).toBe('"10"');
      expect(await count(owner, "SELECT COUNT(*) AS n FROM agent_profiles WHERE organization_id = ?", owner.organizationId)).toBe(1);
    },
  },
  {
    kind: "independent",
    route: "POST /api/reputation/profile/publish",
    seed: async (owner) => {
      expect(
        (await call("PUT", "/api/reputation/profile", { token: owner.token, body: { draftConfig: { displayName: "Racer" } } })).status,
      ).toBe(200);
      return {};
    },
    changes: async () => Array.from({ length: 10 }, () => ({ body: {} })),
    async verify(owner) {
      expect((await json(await call("GET", "/api/reputation/profile", { token: owner.token }))).status).toBe("PUBLISHED");
    },
  },
  {
    // A profile is the agent's: each object is another agent of the organization, named by the delete's agentUserId.
    kind: "once",
    route: "DELETE /api/reputation/profile",
    path: "/api/reputation/profile?agentUserId={agentUserId}",
    async seed(owner) {
      const agent = await createPrincipal({ organizationId: owner.organizationId });
      await publishedProfile(agent);
      return { agentUserId: agent.userId };
    },
    objects: 10,
    copies: 5,
    // Each profile's version moves once: a repeated delete changes nothing.
    counter: {
      read: async (owner) =>
        count(owner, "SELECT COALESCE(SUM(version), 0) AS n FROM agent_profiles WHERE organization_id = ?", owner.organizationId),
      perMove: 1,
    },
  },

  // Referrals (issue 13): concurrent referrals all land, each with its REFERRAL_RECEIVED.
  {
    kind: "independent",
    route: "POST /api/reputation/referrals",
    seed: async () => ({}),
    changes: async (owner) =>
      Array.from({ length: 20 }, (_, i) => ({
        body: {
          agentUserId: owner.userId,
          referredName: `Referred ${i}`,
          referredContact: uniqueEmail("race"),
          rewardType: "CASH",
          rewardValue: i,
        },
      })),
    async verify(owner) {
      expect(await count(owner, "SELECT COUNT(*) AS n FROM referrals WHERE organization_id = ?", owner.organizationId)).toBe(20);
      expect(
        await count(
          owner,
          "SELECT COUNT(*) AS n FROM outbox_events WHERE organization_id = ? AND type = 'REFERRAL_RECEIVED'",
          owner.organizationId,
        ),
      ).toBe(20);
    },
  },

  // Surveys (issue 13).
  {
    // Concurrent creates all land, and the organization ends with exactly one default template.
    kind: "independent",
    route: "POST /api/reputation/surveys/templates",
    seed: async () => ({}),
    changes: async () =>
      Array.from({ length: 10 }, (_, i) => ({
        body: { name: `Raced ${i}`, questions: STANDARD_QUESTIONS, ...(i % 3 === 0 ? { isDefault: true } : {}) },
      })),
    async verify(owner) {
      expect(await count(owner, "SELECT COUNT(*) AS n FROM survey_templates WHERE organization_id = ?", owner.organizationId)).toBe(10);
      expect(
        await count(owner, "SELECT COUNT(*) AS n FROM survey_templates WHERE organization_id = ? AND is_default = 1", owner.organizationId),
      ).toBe(1);
    },
  },
  {
    // Concurrent LINK surveys all land, each with its SURVEY_SCHEDULED, each counted as sent once.
    kind: "independent",
    route: "POST /api/reputation/surveys",
    seed: async (owner) => ({ templateId: (await createSurveyTemplate(owner)).id, contactId: (await createContact(owner.token)).id }),
    changes: async (owner, { templateId, contactId }) =>
      Array.from({ length: 10 }, () => ({
        body: { templateId, recipientPersonId: contactId, agentUserId: owner.userId, channel: "LINK" },
      })),
    async verify(owner) {
      expect(await count(owner, "SELECT COUNT(*) AS n FROM surveys WHERE organization_id = ?", owner.organizationId)).toBe(10);
      expect(await eventCount(owner.organizationId, "SURVEY_SCHEDULED")).toBe(10);
      expect(
        await count(owner, "SELECT SUM(surveys_sent) AS n FROM reputation_aggregates WHERE organization_id = ?", owner.organizationId),
      ).toBe(20); // the agent's row and the organization's
    },
  },
  {
    // Concurrent re-issues all land in turn, and the one live token is the one the cron mails.
    kind: "independent",
    route: "POST /api/reputation/surveys/{id}/reissue",
    seed: async (owner) => {
      const contact = await createContact(owner.token);
      const survey = await scheduleSurvey(owner, {
        templateId: (await createSurveyTemplate(owner)).id,
        recipientPersonId: contact.id,
        channel: "EMAIL",
      });
      return { id: survey.id, email: contact.email };
    },
    changes: async () => Array.from({ length: 6 }, () => ({})),
    async verify(owner, { id, email }) {
      expect(await count(owner, "SELECT version AS n FROM surveys WHERE id = ?", id)).toBe(7);
      // Due now, then the cron's survey pass over the organization's shard.
      const db = await tenantDb(owner.organizationId);
      await db
        .prepare("UPDATE surveys SET send_at = ? WHERE id = ?")
        .bind(new Date(Date.now() - 1000).toISOString(), id)
        .run();
      await sendDueSurveys(env, createDb(db));
      const mail = await mailTo(email!);
      expect(mail).toHaveLength(1);
      const token = mail[0]!.text.match(/\/survey\/(\S+)/)![1]!;
      expect((await publicSurvey("GET", token)).status).toBe(200);
    },
  },
  {
    kind: "once",
    route: "POST /api/reputation/surveys/{id}/skip",
    seed: (owner) => seedSurvey(owner),
    objects: 3,
    copies: 6,
    counter: {
      read: async (owner) =>
        count(owner, "SELECT COUNT(*) AS n FROM surveys WHERE organization_id = ? AND status = 'SKIPPED'", owner.organizationId),
      perMove: 1,
    },
  },

  // Plant store.
  {
    kind: "independent",
    route: "POST /plants",
    seed: async () => ({}),
    changes: async () => Array.from({ length: 20 }, (_, i) => ({ body: { id: 1000 + i, name: `Plant ${i}` } })),
    async verify(owner) {
      expect(await count(owner, "SELECT COUNT(*) AS n FROM plants WHERE organization_id = ?", owner.organizationId)).toBe(20);
      expect(await eventCount(owner.organizationId, "plant.created")).toBe(20);
    },
  },
  {
    kind: "once",
    route: "DELETE /plants/{id}",
    async seed(owner) {
      const id = String(Math.floor(Math.random() * 1e9));
      expect((await call("POST", "/plants", { token: owner.token, body: { id: Number(id), name: "Doomed" } })).status).toBe(200);
      return { id };
    },
    objects: 10,
    copies: 5,
    counter: {
      read: async (owner) => count(owner, "SELECT COUNT(*) AS n FROM plants WHERE organization_id = ?", owner.organizationId),
      perMove: -1,
    },
    event: "plant.deleted",
  },

  // Properties (issue 9).
  {
    kind: "independent",
    route: "POST /v1/properties",
    seed: async () => ({}),
    changes: async () => Array.from({ length: 10 }, (_, i) => ({ body: propertyBody({ mlsId: `RACE-${i}` }) })),
    async verify(owner) {
      expect(await propertyTotal(owner)).toBe(10);
      expect(await eventCount(owner.organizationId, "property.created")).toBe(10);
    },
  },
  {
    kind: "independent",
    route: "PUT /v1/properties/{id}",
    seed: async (owner) => ({ id: (await createProperty(owner.token)).id }),
    changes: async () => PROPERTY_CHANGES.map((body) => ({ body })),
    async verify(owner, { id }) {
      const p = await getProperty(owner.token, id!);
      for (const change of PROPERTY_CHANGES) expect(p).toMatchObject(change);
      expect(p.listing.priceHistory.map((h: { event: string }) => h.event)).toEqual(["LISTED", "PRICE_REDUCTION"]);
      expect(await eventCount(owner.organizationId, "property.updated")).toBe(PROPERTY_CHANGES.length);
      expect(await eventCount(owner.organizationId, "property.status_changed")).toBe(1);
      expect(await eventCount(owner.organizationId, "property.price_changed")).toBe(1);
    },
  },
  {
    kind: "once",
    route: "DELETE /v1/properties/{id}",
    seed: async (owner) => ({ id: (await createProperty(owner.token)).id }),
    objects: 5,
    copies: 5,
    counter: { read: propertyTotal, perMove: -1 },
    event: "property.deleted",
  },
  {
    kind: "once",
    route: "POST /v1/properties/{id}/restore",
    seed: async (owner) => trashed(owner, "/v1/properties", Promise.resolve({ id: (await createProperty(owner.token)).id })),
    objects: 5,
    copies: 5,
    counter: { read: propertyTotal, perMove: 1 },
    event: "property.restored",
  },
  {
    kind: "independent",
    route: "POST /v1/properties/{id}/photos",
    seed: async (owner) => ({ id: (await createProperty(owner.token)).id }),
    changes: async () => Array.from({ length: 6 }, (_, i) => ({ body: photoForm([{ bytes: PNG_1X1 }], { captions: [`raced ${i}`] }) })),
    async verify(owner, { id }) {
      const p = await getProperty(owner.token, id!);
      expect(p.media.photos.map((x: { caption: string }) => x.caption).sort()).toEqual(Array.from({ length: 6 }, (_, i) => `raced ${i}`));
      expect((await env.FILES.list({ prefix: `properties/${owner.organizationId}/${id}/` })).objects).toHaveLength(6);
      expect(await eventCount(owner.organizationId, "property.photos_uploaded")).toBe(6);
    },
  },
  {
    kind: "independent",
    route: "PUT /v1/properties/{id}/photos/order",
    async seed(owner) {
      const { id } = await createProperty(owner.token);
      const res = await call("POST", `/v1/properties/${id}/photos`, {
        token: owner.token,
        body: photoForm(Array.from({ length: 8 }, () => ({ bytes: PNG_1X1 }))),
      });
      return { id, photos: (await json(res)).data.map((x: { id: string }) => x.id).join(",") };
    },
    changes: async (_owner, { photos }) =>
      photos!.split(",").map((photo, i) => ({ body: { photoOrder: [{ id: photo, order: 100 - i }] } })),
    async verify(owner, { id, photos }) {
      const p = await getProperty(owner.token, id!);
      expect(p.media.photos.map((x: { id: string; order: number }) => [x.id, x.order])).toEqual(
        photos!
          .split(",")
          .map((photo, i) => [photo, 100 - i])
          .reverse(),
      );
    },
  },
  {
    kind: "independent",
    route: "POST /v1/properties/{id}/signals",
    seed: async (owner) => ({ id: (await createProperty(owner.token)).id }),
    changes: async () => [
      ...Array.from({ length: 20 }, (_, i) => ({ body: { type: "VIEW", visitorId: `v${i % 4}` } })),
      ...Array.from({ length: 5 }, () => ({ body: { type: "INQUIRY" } })),
    ],
    async verify(owner, { id }) {
      const a = (await json(await call("GET", `/v1/properties/${id}/analytics`, { token: owner.token }))).data;
      expect(a).toMatchObject({ views: 20, uniqueViews: 4, inquiries: 5 });
      expect(await eventCount(owner.organizationId, "property.inquiry_received")).toBe(5);
    },
  },
  {
    kind: "independent",
    route: "POST /v1/properties/{id}/valuation",
    seed: async (owner) => ({ id: (await valuableProperty(owner.token)).id }),
    changes: async () => Array.from({ length: 5 }, () => ({})),
    async verify(owner, { id }) {
      expect(await count(owner, "SELECT COUNT(*) AS n FROM property_valuations WHERE property_id = ?", id)).toBe(5);
      expect((await getProperty(owner.token, id!)).valuation).toMatchObject({ estimatedValue: expect.any(Number) });
    },
  },
  {
    kind: "independent",
    route: "POST /v1/properties/{id}/reports",
    seed: async (owner) => ({ id: (await createProperty(owner.token)).id }),
    changes: async () => Array.from({ length: 4 }, (_, i) => ({ body: { reportType: i % 2 ? "LISTING_SHEET" : "MARKET_ANALYSIS" } })),
    async verify(owner, { id }) {
      expect((await env.FILES.list({ prefix: `properties/${owner.organizationId}/${id}/reports/` })).objects).toHaveLength(4);
    },
  },
  {
    kind: "child",
    route: "POST /v1/properties/{id}/signals",
    seed: async (owner) => ({ id: (await createProperty(owner.token)).id }),
    body: (i) => ({ type: i % 2 ? "VIEW" : "INQUIRY", visitorId: `v${i}` }),
    parentDelete: "/v1/properties/{id}",
    leftovers: async (owner, { id }) => ({
      stats: await count(owner, "SELECT COUNT(*) AS n FROM property_stats WHERE property_id = ?", id),
      days: await count(owner, "SELECT COUNT(*) AS n FROM property_daily_stats WHERE property_id = ?", id),
      visitors: await count(owner, "SELECT COUNT(*) AS n FROM property_daily_visitors WHERE property_id = ?", id),
      referrers: await count(owner, "SELECT COUNT(*) AS n FROM property_daily_referrers WHERE property_id = ?", id),
    }),
  },
  {
    kind: "child",
    route: "POST /v1/properties/{id}/photos",
    seed: async (owner) => ({ id: (await createProperty(owner.token)).id }),
    body: () => photoForm([{ bytes: PNG_1X1 }]),
    parentDelete: "/v1/properties/{id}",
    async leftovers(owner, { id }) {
      // Files are removed after the answers (the request's waitUntil): wait for them to go.
      const files = async () => (await env.FILES.list({ prefix: `properties/${owner.organizationId}/${id}/` })).objects.length;
      await vi.waitFor(async () => expect(await files()).toBe(0), { timeout: 5000 });
      return { files: await files(), rows: await count(owner, "SELECT COUNT(*) AS n FROM properties WHERE id = ?", id) };
    },
  },
  {
    kind: "child",
    route: "PUT /v1/properties/{id}",
    seed: async (owner) => ({ id: (await createProperty(owner.token)).id }),
    body: (i) => ({ details: { bedrooms: i } }),
    parentDelete: "/v1/properties/{id}",
    leftovers: async (owner, { id }) => ({ rows: await count(owner, "SELECT COUNT(*) AS n FROM properties WHERE id = ?", id) }),
  },
  {
    // A sync that read the property before its delete must not write it back.
    kind: "child",
    route: "POST /v1/properties/{id}/mls-sync",
    seed: (owner) => mlsListedProperty(owner.token),
    body: () => undefined,
    vars: mlsVars,
    parentDelete: "/v1/properties/{id}",
    leftovers: async (owner, { id }) => ({ rows: await count(owner, "SELECT COUNT(*) AS n FROM properties WHERE id = ?", id) }),
  },

  // Deals (issue 10).
  {
    kind: "independent",
    route: "POST /v1/deals",
    seed: async () => ({}),
    changes: async (owner) => {
      const contactId = (await createDeal(owner.token)).contactId;
      return Array.from({ length: 10 }, (_, i) => ({ body: { title: `Race ${i}`, type: "SALE", amount: 1000 * (i + 1), contactId } }));
    },
    async verify(owner) {
      expect(await dealTotal(owner)).toBe(11);
      expect(await eventCount(owner.organizationId, "deal.created")).toBe(11);
      const pipeline = await pipelineOf(owner);
      expect(pipeline.totalDeals).toBe(11);
      expect(pipeline.totalValue).toBe(500000 + 55000);
    },
  },
  {
    kind: "independent",
    route: "PUT /v1/deals/{id}",
    seed: async (owner) => ({ id: (await createDeal(owner.token)).id }),
    changes: async () => DEAL_CHANGES.map((body) => ({ body })),
    async verify(owner, { id }) {
      const d = await getDeal(owner.token, id!);
      for (const change of DEAL_CHANGES) expect(d).toMatchObject(change);
      expect(await eventCount(owner.organizationId, "deal.updated")).toBe(DEAL_CHANGES.length);
      // The pipeline holds the deal once, at its final amount and probability.
      const lead = (await pipelineOf(owner)).stages.find((s) => s.stage === "LEAD")!;
      expect(lead).toMatchObject({ count: 1, value: 640000, averageProbability: 33 });
    },
  },
  {
    kind: "once",
    route: "DELETE /v1/deals/{id}",
    seed: async (owner) => ({ id: (await createDeal(owner.token)).id }),
    objects: 5,
    copies: 5,
    counter: { read: dealTotal, perMove: -1 },
    event: "deal.deleted",
  },
  {
    kind: "once",
    route: "POST /v1/deals/{id}/restore",
    seed: async (owner) => trashed(owner, "/v1/deals", Promise.resolve({ id: (await createDeal(owner.token)).id })),
    objects: 5,
    copies: 5,
    counter: { read: async (owner) => (await pipelineOf(owner)).totalDeals, perMove: 1 },
    event: "deal.restored",
  },
  {
    kind: "once",
    route: "POST /v1/deals/{id}/move",
    seed: async (owner) => ({ id: (await createDeal(owner.token)).id }),
    body: { stage: "CLOSED", reason: "raced" },
    objects: 5,
    copies: 5,
    counter: {
      read: async (owner) =>
        count(
          owner,
          "SELECT COUNT(*) AS n FROM deal_activities WHERE organization_id = ? AND type = 'STAGE_CHANGED'",
          owner.organizationId,
        ),
      perMove: 1,
    },
    event: "DEAL_WON",
  },
  {
    kind: "independent",
    route: "POST /v1/deals/{id}/tasks",
    seed: async (owner) => ({ id: (await createDeal(owner.token)).id }),
    changes: async () => Array.from({ length: 10 }, (_, i) => ({ body: { title: `Raced task ${i}` } })),
    async verify(owner, { id }) {
      expect((await getDeal(owner.token, id!, "?include=tasks")).tasks).toHaveLength(10);
      expect(await eventCount(owner.organizationId, "deal.task_created")).toBe(10);
    },
  },
  {
    kind: "once",
    route: "POST /v1/deals/{id}/tasks/{taskId}/complete",
    seed: async (owner) => {
      const { id } = await createDeal(owner.token);
      return { id, taskId: (await createTask(owner.token, id)).id };
    },
    objects: 3,
    copies: 5,
    event: "deal.task_completed",
  },
  {
    kind: "independent",
    route: "POST /v1/deals/{id}/documents",
    seed: async (owner) => ({ id: (await createDeal(owner.token)).id }),
    changes: async () => Array.from({ length: 6 }, (_, i) => ({ body: documentForm(undefined, { name: `Raced ${i}`, type: "CONTRACT" }) })),
    async verify(owner, { id }) {
      expect((await getDeal(owner.token, id!, "?include=documents")).documents).toHaveLength(6);
      expect((await env.FILES.list({ prefix: `deals/${owner.organizationId}/${id}/` })).objects).toHaveLength(6);
      expect(await eventCount(owner.organizationId, "deal.document_uploaded")).toBe(6);
    },
  },
  {
    kind: "child",
    route: "POST /v1/deals/{id}/tasks",
    seed: async (owner) => ({ id: (await createDeal(owner.token)).id }),
    body: (i) => ({ title: `Orphan ${i}` }),
    parentDelete: "/v1/deals/{id}",
    leftovers: async (owner, { id }) => ({
      tasks: await count(owner, "SELECT COUNT(*) AS n FROM tasks WHERE deal_id = ?", id),
      activities: await count(owner, "SELECT COUNT(*) AS n FROM deal_activities WHERE deal_id = ?", id),
    }),
  },
  {
    kind: "child",
    route: "POST /v1/deals/{id}/documents",
    seed: async (owner) => ({ id: (await createDeal(owner.token)).id }),
    body: () => documentForm(),
    parentDelete: "/v1/deals/{id}",
    async leftovers(owner, { id }) {
      const files = async () => (await env.FILES.list({ prefix: `deals/${owner.organizationId}/${id}/` })).objects.length;
      await vi.waitFor(async () => expect(await files()).toBe(0), { timeout: 5000 });
      return { files: await files(), rows: await count(owner, "SELECT COUNT(*) AS n FROM deal_documents WHERE deal_id = ?", id) };
    },
  },
  {
    kind: "child",
    route: "PUT /v1/deals/{id}",
    seed: async (owner) => ({ id: (await createDeal(owner.token)).id }),
    body: (i) => ({ stage: i % 2 ? "QUALIFIED" : "NEGOTIATION", amount: 1000 * i }),
    parentDelete: "/v1/deals/{id}",
    async leftovers(owner, { id }) {
      const pipeline = await pipelineOf(owner);
      return {
        rows: await count(owner, "SELECT COUNT(*) AS n FROM deals WHERE id = ?", id),
        history: await count(owner, "SELECT COUNT(*) AS n FROM deal_stage_changes WHERE deal_id = ?", id),
        pipelineDeals: pipeline.totalDeals,
        pipelineValue: pipeline.totalValue,
      };
    },
  },

  // Clickwrap (issue 11).
  {
    // Concurrent first publishes of one key: one agreement, one version, every answer naming it.
    kind: "independent",
    route: "POST /api/clickwrap",
    seed: async () => ({}),
    changes: async () => Array.from({ length: 10 }, () => ({ body: { key: "raced", title: "Raced terms", body: "One text." } })),
    async verify(owner) {
      expect(
        await count(
          owner,
          "SELECT COUNT(*) AS n FROM clickwrap_agreements WHERE organization_id = ? AND key = 'raced'",
          owner.organizationId,
        ),
      ).toBe(1);
      expect(await count(owner, "SELECT COUNT(*) AS n FROM clickwrap_versions WHERE organization_id = ?", owner.organizationId)).toBe(1);
    },
  },
  {
    kind: "independent",
    route: "POST /api/clickwrap/{agreementId}/deactivate",
    seed: async (owner) => ({
      agreementId: (await json(await call("POST", "/api/clickwrap", { token: owner.token, body: { key: "off", title: "T", body: "B" } })))
        .id,
    }),
    changes: async () => Array.from({ length: 6 }, () => ({})),
    async verify(owner, { agreementId }) {
      expect((await json(await call("GET", `/api/clickwrap/${agreementId}`, { token: owner.token }))).agreement.active).toBe(false);
      expect((await call("GET", `/api/public/clickwrap/${agreementId}`)).status).toBe(404);
    },
  },
  {
    kind: "independent",
    route: "POST /api/clickwrap/{agreementId}/activate",
    seed: async (owner) => {
      const { id } = await json(await call("POST", "/api/clickwrap", { token: owner.token, body: { key: "on", title: "T", body: "B" } }));
      await call("POST", `/api/clickwrap/${id}/deactivate`, { token: owner.token });
      return { agreementId: id };
    },
    changes: async () => Array.from({ length: 6 }, () => ({})),
    async verify(owner, { agreementId }) {
      expect((await json(await call("GET", `/api/clickwrap/${agreementId}`, { token: owner.token }))).agreement.active).toBe(true);
      expect((await call("GET", `/api/public/clickwrap/${agreementId}`)).status).toBe(200);
    },
  },

  // Document drafts (issue 12): nothing is stored, whatever runs at once; each draft asks the model once.
  {
    kind: "independent",
    route: "POST /api/documents/draft",
    seed: async () => ({
      gateway: (await openAiGateway({ chat: JSON.stringify({ ...leaseCanonical(), provenance: { aiDrafted: false } }) })).url,
    }),
    vars: ({ gateway }) => ({ AI_GATEWAY_URL: gateway!, AI_GATEWAY_TOKEN: "ai-test-token" }),
    changes: async () => Array.from({ length: 5 }, (_, i) => ({ body: { prompt: `Lease number ${i} of 1 Queen St W` } })),
    async verify(owner, { gateway }) {
      expect(await count(owner, "SELECT COUNT(*) AS n FROM documents WHERE organization_id = ?", owner.organizationId)).toBe(0);
      const seen = (await (await fetch(`${gateway}/requests`)).json()) as { requests: unknown[] };
      expect(seen.requests).toHaveLength(5);
    },
  },
  // The organization and its users (issue 32): the shard's row by compare-and-set, the directory's copy following.
  {
    kind: "independent",
    route: "PATCH /v1/organization",
    seed: async () => ({}),
    changes: async () => ORGANIZATION_CHANGES.map((body) => ({ body })),
    async verify(owner) {
      const res = await call("GET", "/v1/organization", { token: owner.token });
      const organization = (await json(res)).data;
      for (const change of ORGANIZATION_CHANGES) expect(organization).toMatchObject(change);
      expect(res.headers.get("etag")).toBe(`"${ORGANIZATION_CHANGES.length + 1}"`);
      expect(await env.DB.prepare("SELECT version FROM organizations WHERE id = ?").bind(owner.organizationId).first("version")).toBe(
        ORGANIZATION_CHANGES.length + 1,
      );
      expect(await eventCount(owner.organizationId, "organization.updated")).toBe(ORGANIZATION_CHANGES.length);
    },
  },
  {
    kind: "once",
    route: "POST /v1/users",
    seed: async () => ({ email: uniqueEmail("raced-invitee") }),
    // The same address 3 times at once (the invitations one organization may mail it a day): one user, one user.created.
    body: ({ email }: Params) => ({ email, name: "Raced Invitee" }),
    objects: 1,
    copies: 3,
    event: "user.created",
  },
  {
    kind: "independent",
    route: "PATCH /v1/users/{id}",
    seed: async (owner) => ({
      id: (
        await json(await call("POST", "/v1/users", { token: owner.token, body: { email: uniqueEmail("raced-user"), name: "Raced User" } }))
      ).data.id,
    }),
    changes: async () => USER_CHANGES.map((body) => ({ body })),
    async verify(owner, { id }) {
      const user = (await json(await call("GET", `/v1/users/${id}`, { token: owner.token }))).data;
      for (const change of USER_CHANGES) expect(user).toMatchObject(change);
      expect(
        await env.DB.prepare("SELECT name, role, accepts_leads AS acceptsLeads, version FROM users WHERE id = ?").bind(id).first(),
      ).toEqual({ name: "Raced Name", role: "admin", acceptsLeads: 0, version: 4 });
      expect(await eventCount(owner.organizationId, "user.updated")).toBe(USER_CHANGES.length);
    },
  },
  {
    kind: "independent",
    route: "POST /v1/users/{id}/invitation",
    seed: async (owner) => {
      const email = uniqueEmail("reinvited");
      return {
        id: (await json(await call("POST", "/v1/users", { token: owner.token, body: { email, name: "Re Invited" } }))).data.id,
        email,
      };
    },
    // Two resends at once after the invitation: the three mails an organization may send an address a day.
    changes: async () => Array.from({ length: 2 }, () => ({})),
    async verify(_owner, { id, email }) {
      // One live invitation, and it is one of the links mailed.
      const live = await env.DB.prepare("SELECT token_hash AS tokenHash FROM user_invitations WHERE user_id = ?")
        .bind(id)
        .all<{ tokenHash: string }>();
      expect(live.results).toHaveLength(1);
      const mailed = (await mailTo(email!))
        .map((m) => m.text.match(/\/invite\/(inv_[A-Za-z0-9_-]+)/)?.[1])
        .filter((t): t is string => t !== undefined);
      expect(mailed).toHaveLength(3);
      expect(await Promise.all(mailed.map(sha256Hex))).toContain(live.results[0]!.tokenHash);
    },
  },

  // API keys (issue 32): each creation is one key and one integration.connected; of concurrent deletes of a key one
  // wins and emits integration.disconnected once (the events go from the directory to the shard: directory-outbox.ts).
  {
    kind: "independent",
    route: "POST /v1/api-keys",
    seed: async () => ({}),
    changes: async () => Array.from({ length: 20 }, (_, i) => ({ body: { name: `Raced key ${i}`, permissions: ["contacts:read"] } })),
    async verify(owner) {
      expect((await json(await call("GET", "/v1/api-keys?limit=100", { token: owner.token }))).pagination.total).toBe(20);
      expect(await eventCount(owner.organizationId, "integration.connected")).toBe(20);
    },
  },
  {
    kind: "once",
    route: "DELETE /v1/api-keys/{id}",
    async seed(owner) {
      const res = await call("POST", "/v1/api-keys", {
        token: owner.token,
        body: { name: "Raced delete", permissions: ["contacts:read"] },
      });
      expect(res.status).toBe(201);
      return { id: (await json(res)).data.id };
    },
    objects: 5,
    copies: 10,
    counter: {
      read: async (owner) => (await json(await call("GET", "/v1/api-keys", { token: owner.token }))).pagination.total,
      perMove: -1,
    },
    event: "integration.disconnected",
  },

  // Custom fields (issue 33): concurrent creations of one key make one field (the others 409 duplicate_key); of
  // concurrent deletes of a field one answers 204.
  {
    kind: "once",
    route: "POST /v1/custom-fields",
    seed: async () => ({}),
    body: { object: "contact", key: "raced_key", label: "Raced", type: "number" },
    objects: 1,
    copies: 8,
    counter: {
      read: async (owner) => (await json(await call("GET", "/v1/custom-fields", { token: owner.token }))).pagination.total,
      perMove: 1,
    },
  },
  {
    kind: "once",
    route: "DELETE /v1/custom-fields/{id}",
    async seed(owner) {
      const res = await call("POST", "/v1/custom-fields", {
        token: owner.token,
        body: { object: "deal", key: `raced_${crypto.randomUUID().slice(0, 8)}`, label: "Raced delete", type: "text" },
      });
      expect(res.status).toBe(201);
      return { id: (await json(res)).data.id };
    },
    objects: 5,
    copies: 6,
    counter: {
      read: async (owner) => (await json(await call("GET", "/v1/custom-fields", { token: owner.token }))).pagination.total,
      perMove: -1,
    },
  },
  // Imports (issue 33): several imports of the same people at once leave one contact each; the chunks that lose the
  // race to another import's e-mail plan again and match it.
  {
    kind: "independent",
    route: "POST /v1/imports",
    seed: async () => ({ run: crypto.randomUUID().slice(0, 8) }),
    changes: async (_owner, { run }) =>
      Array.from({ length: 4 }, (_, i) => ({
        body: { kind: "contacts", onDuplicate: "merge", rows: SAME_PEOPLE(run!).map((p) => ({ ...p, tags: `import-${i}` })) },
      })),
    async verify(owner, { run }) {
      await importsSettled(owner);
      for (const p of SAME_PEOPLE(run!))
        expect(
          await count(
            owner,
            "SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ? AND email_key = ?",
            owner.organizationId,
            p.email,
          ),
          p.email,
        ).toBe(1);
      expect(await contactTotal(owner)).toBe(SAME_PEOPLE(run!).length);
      expect(await count(owner, "SELECT COALESCE(SUM(created), 0) AS n FROM imports WHERE organization_id = ?", owner.organizationId)).toBe(
        SAME_PEOPLE(run!).length,
      );
      expect(
        await count(owner, "SELECT COUNT(*) AS n FROM imports WHERE organization_id = ? AND status = 'completed'", owner.organizationId),
      ).toBe(4);
    },
  },
  {
    // An import that updates a contact (by its e-mail) racing the contact's delete: the update is guarded on the
    // version it read, so it never brings the deleted contact back; a chunk that runs after the delete makes a new one.
    kind: "child",
    route: "POST /v1/imports",
    seed: async (owner) => {
      const email = uniqueEmail("raced-import");
      return { ...(await contactParams(owner, { email })), email };
    },
    body: (i, { email }) => ({
      kind: "contacts",
      onDuplicate: "update",
      rows: [{ firstName: "Raced", lastName: `Import ${i}`, email: email!, notes: `import ${i}` }],
    }),
    parentDelete: "/v1/contacts/{id}",
    async leftovers(owner, { id, email }) {
      await importsSettled(owner);
      return {
        deletedContactLive: await count(
          owner,
          "SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ? AND id = ?",
          owner.organizationId,
          id,
        ),
        deletedContactNotInTrash:
          1 -
          (await count(
            owner,
            "SELECT COUNT(*) AS n FROM trash_entries WHERE organization_id = ? AND record_id = ? AND state = 'trashed'",
            owner.organizationId,
            id,
          )),
        duplicatesOfTheEmail: Math.max(
          0,
          (await count(
            owner,
            "SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ? AND email_key = ?",
            owner.organizationId,
            email!.toLowerCase(),
          )) - 1,
        ),
      };
    },
  },
  {
    kind: "once",
    route: "POST /v1/imports/{id}/cancel",
    // A queued import no consumer will pick up (no message was sent), so only the cancels race for it.
    async seed(owner) {
      const id = crypto.randomUUID();
      const at = new Date().toISOString();
      await (await tenantDb(owner.organizationId))
        .prepare(
          "INSERT INTO imports (id, organization_id, kind, status, source_key, size_bytes, on_duplicate, created_at, updated_at, progress_at) VALUES (?, ?, 'contacts', 'queued', ?, 10, 'skip', ?, ?, ?)",
        )
        .bind(id, owner.organizationId, `imports/${owner.organizationId}/${id}.csv`, at, at, at)
        .run();
      return { id };
    },
    objects: 3,
    copies: 6,
    counter: {
      read: (owner) =>
        count(owner, "SELECT COUNT(*) AS n FROM imports WHERE organization_id = ? AND status = 'cancelled'", owner.organizationId),
      perMove: 1,
    },
  },
  // Exports: one job queued or running per organization; a request while one is answers 409 export_running, and one
  // after it ended starts the next.
  {
    kind: "once",
    route: "POST /v1/organization/export",
    seed: async () => ({}),
    objects: 1,
    copies: 5,
    counter: {
      read: (owner) => count(owner, "SELECT COUNT(*) AS n FROM organization_exports WHERE organization_id = ?", owner.organizationId),
      perMove: 1,
    },
    serial: async (owner) => {
      await exportsEnded(owner);
      const { results } = await (await tenantDb(owner.organizationId))
        .prepare(
          "SELECT created_at AS start, COALESCE(completed_at, updated_at) AS end FROM organization_exports WHERE organization_id = ? ORDER BY created_at",
        )
        .bind(owner.organizationId)
        .all<{ start: string; end: string }>();
      return results;
    },
  },
  // Ponds and lead routing (issue 46): two claims of one lead, one wins.
  {
    kind: "independent",
    route: "POST /v1/ponds",
    seed: async () => ({}),
    changes: async (owner) => Array.from({ length: 5 }, (_, i) => ({ body: { name: `Raced pond ${i}`, members: [owner.userId] } })),
    verify: async (owner) => expect((await json(await call("GET", "/v1/ponds", { token: owner.token }))).pagination.total).toBe(5),
  },
  {
    kind: "independent",
    route: "PATCH /v1/ponds/{id}",
    seed: (owner) => seedPond(owner),
    changes: async (owner) => [{ body: { name: "Raced name" } }, { body: { members: [owner.userId] } }],
    verify: async (owner, params) =>
      expect((await json(await call("GET", `/v1/ponds/${params.id}`, { token: owner.token }))).data).toMatchObject({
        name: "Raced name",
        members: [owner.userId],
      }),
  },
  {
    kind: "once",
    route: "DELETE /v1/ponds/{id}",
    seed: (owner) => seedPond(owner),
    objects: 3,
    copies: 5,
    counter: { read: async (owner) => (await json(await call("GET", "/v1/ponds", { token: owner.token }))).pagination.total, perMove: -1 },
  },
  {
    kind: "once",
    route: "POST /v1/contacts/{id}/claim",
    seed: (owner) => seedPondLead(owner),
    objects: 3,
    copies: 2,
    event: "contact.claimed",
  },
  {
    kind: "independent",
    route: "POST /v1/leads/route-preview",
    seed: async () => ({}),
    changes: async () =>
      Array.from({ length: 5 }, (_, i) => ({ body: { source: "WEBSITE", person: { emails: [`preview${i}@race.test`] } } })),
    verify: async (owner) => expect(await contactTotal(owner)).toBe(0),
  },
];

/** Waits for every export of the organization to end (the queue consumer runs them in the background). */
async function exportsEnded(owner: TestPrincipal): Promise<void> {
  await vi.waitFor(
    async () =>
      expect(
        await count(
          owner,
          "SELECT COUNT(*) AS n FROM organization_exports WHERE organization_id = ? AND status IN ('queued', 'running')",
          owner.organizationId,
        ),
      ).toBe(0),
    { timeout: 25_000, interval: 200 },
  );
}

/** The same 30 people for every import of a race. */
const SAME_PEOPLE = (run: string) =>
  Array.from({ length: 30 }, (_, i) => ({ firstName: "Same", lastName: `Person ${i}`, email: `same.${run}.${i}@example.test` }));

/** Waits for every import of the organization to end (the queue consumer runs them in the background). */
async function importsSettled(owner: TestPrincipal): Promise<void> {
  await vi.waitFor(
    async () =>
      expect(
        await count(
          owner,
          "SELECT COUNT(*) AS n FROM imports WHERE organization_id = ? AND status IN ('queued', 'running')",
          owner.organizationId,
        ),
      ).toBe(0),
    { timeout: 25_000, interval: 200 },
  );
}

/**
 * Public writes raced (no token, so outside the route-table races): each `run` sends its requests at once through
 * the Worker's fetch handler and asserts what is left.
 */
export const PUBLIC_RACES: { name: string; run(owner: TestPrincipal): Promise<void> }[] = [
  {
    // Issue 45: a single-use view URL opened ten times at once opens once: one page, nine 410s, one link minted.
    name: "GET /sign/session/{token}: a view URL opened 10 times at once opens exactly once",
    async run(owner) {
      const { envelopeId, signerId } = await seedHostedSigner(owner, "embedded");
      const res = await call("POST", `/api/signatures/${envelopeId}/signers/${signerId}/view`, { token: owner.token, body: VIEW_BODY });
      expect(res.status).toBe(201);
      const path = new URL((await json(res)).url).pathname;
      const statuses = await Promise.all(
        Array.from({ length: 10 }, async (_, i) => {
          const page = await call("GET", path, { headers: { "cf-connecting-ip": `10.95.${Math.floor(Math.random() * 250)}.${i + 1}` } });
          await page.arrayBuffer();
          return page.status;
        }),
      );
      expect(statuses.sort()).toEqual([200, ...Array<number>(9).fill(410)]);
      expect(await count(owner, "SELECT COUNT(*) AS n FROM signing_links WHERE signer_id = ? AND via = 'embedded'", signerId)).toBe(1);
      expect(
        await count(owner, "SELECT COUNT(*) AS n FROM envelope_audit WHERE envelope_id = ? AND event = 'session_opened'", envelopeId),
      ).toBe(1);
    },
  },
  {
    // Issue 23: the same referral 20 times at once (from 20 addresses, under the per-address limit) is one referral,
    // one REFERRAL_RECEIVED and, once the workflow ran, one lead; every copy answers 202 naming that referral.
    name: "POST /api/public/referral/{agentSlug}: 20 identical referrals at once leave one referral and one lead",
    async run(owner) {
      const slug = await publishedProfile(owner);
      const body = {
        referrerName: "Rita Racer",
        referrerEmail: uniqueEmail("race-referrer"),
        referredName: "Lee Raced",
        referredEmail: uniqueEmail("race-lead"),
      };
      // The referrer is a contact already (an earlier referral of someone else), so no contact insert of the referrer
      // serializes the copies: only the referral's own guard does.
      const earlier = await call("POST", `/api/public/referral/${slug}`, {
        body: { ...body, referredEmail: uniqueEmail("earlier") },
        headers: { "cf-connecting-ip": "10.94.0.1" },
      });
      expect(earlier.status).toBe(202);
      const answers = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const res = await call("POST", `/api/public/referral/${slug}`, {
            body,
            headers: { "cf-connecting-ip": `10.93.${Math.floor(Math.random() * 250)}.${i + 1}` },
          });
          return { status: res.status, body: await json(res) };
        }),
      );
      for (const a of answers) expect(a.status, JSON.stringify(a.body)).toBe(202);
      const ids = new Set(answers.map((a) => a.body.referralId));
      expect(ids.size).toBe(1);
      expect(
        await count(
          owner,
          "SELECT COUNT(*) AS n FROM referrals WHERE organization_id = ? AND referred_email_key = ?",
          owner.organizationId,
          body.referredEmail.toLowerCase(),
        ),
      ).toBe(1);
      expect(await eventCount(owner.organizationId, "REFERRAL_RECEIVED")).toBe(2); // the earlier referral's and this one's
      // The workflow, twice over (a redelivery): still one lead.
      const db = await tenantDb(owner.organizationId);
      const { results } = await db
        .prepare(
          "SELECT id, type, organization_id, actor, occurred_at, data FROM outbox_events WHERE organization_id = ? AND type = 'REFERRAL_RECEIVED'",
        )
        .bind(owner.organizationId)
        .all<{ id: string; type: string; organization_id: string; actor: string; occurred_at: string; data: string }>();
      const events = results.map((r) => ({
        id: r.id,
        type: r.type,
        organizationId: r.organization_id,
        actor: JSON.parse(r.actor),
        occurredAt: r.occurred_at,
        data: JSON.parse(r.data),
      }));
      await handleReferralEvents(env, createDb(db), events);
      await handleReferralEvents(env, createDb(db), events);
      expect(
        await count(
          owner,
          "SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ? AND email_key = ?",
          owner.organizationId,
          body.referredEmail.toLowerCase(),
        ),
      ).toBe(1);
      expect(
        await count(
          owner,
          "SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ? AND email_key = ?",
          owner.organizationId,
          body.referrerEmail.toLowerCase(),
        ),
      ).toBe(1);
      expect(await count(owner, "SELECT COUNT(*) AS n FROM referral_keys WHERE organization_id = ?", owner.organizationId)).toBe(2);
    },
  },
];

// Smart lists (issue 46): creations all land, a rename and a re-query of one list both land, a delete happens once.
const smartListsTotal = async (owner: TestPrincipal) =>
  (await json(await call("GET", "/v1/smart-lists", { token: owner.token }))).pagination.total as number;
const seedSmartList = async (owner: TestPrincipal): Promise<Params> => {
  const res = await call("POST", "/v1/smart-lists", { token: owner.token, body: { name: "Raced", query: { assignedTo: "none" } } });
  expect(res.status).toBe(201);
  return { id: (await json(res)).data.id };
};
RACES.push(
  {
    kind: "independent",
    route: "POST /v1/smart-lists",
    seed: async () => ({}),
    changes: async () => Array.from({ length: 4 }, (_, i) => ({ body: { name: `List ${i}`, query: { "createdAt[gte]": `-P${i + 1}D` } } })),
    async verify(owner) {
      expect(await smartListsTotal(owner)).toBe(4);
    },
  },
  {
    kind: "independent",
    route: "PATCH /v1/smart-lists/{id}",
    seed: seedSmartList,
    changes: async () => [{ body: { name: "Renamed" } }, { body: { query: { lastContactedAt: "never" } } }],
    async verify(owner, { id }) {
      const list = (await json(await call("GET", `/v1/smart-lists/${id}`, { token: owner.token }))).data;
      expect(list).toMatchObject({ name: "Renamed", query: { lastContactedAt: "never" } });
    },
  },
  {
    kind: "once",
    route: "DELETE /v1/smart-lists/{id}",
    seed: seedSmartList,
    objects: 3,
    copies: 5,
    counter: { read: smartListsTotal, perMove: -1 },
  },
);

// Tasks (issue 46 part 1): two completes (or deletes) of one task, one wins; concurrent changes of different fields all land.
const seedTask = async (owner: TestPrincipal, body: Record<string, unknown> = {}) => {
  const res = await call("POST", "/v1/tasks", { token: owner.token, body: { title: "Raced task", ...body } });
  if (res.status !== 201) throw new Error(`seeding a task failed: ${res.status} ${await res.text()}`);
  return { id: (await json(res)).data.id as string };
};
RACES.push(
  {
    kind: "independent",
    route: "POST /v1/tasks",
    seed: async () => ({}),
    changes: async () => Array.from({ length: 10 }, (_, i) => ({ body: { title: `Raced task ${i}` } })),
    async verify(owner) {
      const page = await json(await call("GET", "/v1/tasks?assignedTo=me&limit=100", { token: owner.token }));
      expect(page.pagination.total).toBe(10);
      expect(await eventCount(owner.organizationId, "task.created")).toBe(10);
    },
  },
  {
    kind: "independent",
    route: "PATCH /v1/tasks/{id}",
    seed: (owner) => seedTask(owner),
    changes: async () => [
      { body: { title: "Raced title" } },
      { body: { priority: "URGENT" } },
      { body: { type: "call" } },
      { body: { notes: "Raced notes" } },
      { body: { dueAt: "2031-05-01T09:00:00Z" } },
    ],
    async verify(owner, { id }) {
      const task = (await json(await call("GET", `/v1/tasks/${id}`, { token: owner.token }))).data;
      expect(task).toMatchObject({
        title: "Raced title",
        priority: "URGENT",
        type: "call",
        notes: "Raced notes",
        dueAt: "2031-05-01T09:00:00.000Z",
        version: 6,
      });
      expect(await eventCount(owner.organizationId, "task.updated")).toBe(5);
    },
  },
  { kind: "once", route: "DELETE /v1/tasks/{id}", seed: (owner) => seedTask(owner), objects: 3, copies: 5, event: "task.deleted" },
  {
    kind: "once",
    route: "POST /v1/tasks/{id}/complete",
    seed: async (owner) => seedTask(owner, { contactId: (await createContact(owner.token)).id }),
    objects: 3,
    copies: 5,
    event: "task.completed",
  },
);

// Appointments and calendar feeds (issue 46).
const APPOINTMENT_CHANGES = [{ title: "Raced title" }, { notes: "Raced notes" }, { type: "closing" }, { location: "Raced place" }];
const appointmentOf = async (owner: TestPrincipal, id: string) =>
  (await json(await call("GET", `/v1/appointments/${id}`, { token: owner.token }))).data as Record<string, unknown>;
const seedRacedAppointment = async (owner: TestPrincipal) => {
  const res = await call("POST", "/v1/appointments", { token: owner.token, body: MATRIX_APPOINTMENT });
  expect(res.status).toBe(201);
  return { id: (await json(res)).data.id as string };
};
const liveFeeds = (owner: TestPrincipal) =>
  count(owner, "SELECT COUNT(*) AS n FROM calendar_feeds WHERE organization_id = ? AND user_id = ?", owner.organizationId, owner.userId);
RACES.push(
  {
    kind: "independent",
    route: "POST /v1/appointments",
    seed: async () => ({}),
    changes: async () => Array.from({ length: 10 }, (_, i) => ({ body: { ...MATRIX_APPOINTMENT, title: `Raced ${i}` } })),
    async verify(owner) {
      expect((await json(await call("GET", "/v1/appointments?limit=1", { token: owner.token }))).pagination.total).toBe(10);
      expect(await eventCount(owner.organizationId, "appointment.created")).toBe(10);
    },
  },
  {
    // Two (here four) concurrent PATCHes of different fields all land; the place change moves SEQUENCE once.
    kind: "independent",
    route: "PATCH /v1/appointments/{id}",
    seed: seedRacedAppointment,
    changes: async () => APPOINTMENT_CHANGES.map((body) => ({ body })),
    async verify(owner, { id }) {
      const a = await appointmentOf(owner, id!);
      for (const change of APPOINTMENT_CHANGES) expect(a).toMatchObject(change);
      expect(a).toMatchObject({ sequence: 1, version: 1 + APPOINTMENT_CHANGES.length });
      expect(await eventCount(owner.organizationId, "appointment.updated")).toBe(APPOINTMENT_CHANGES.length);
    },
  },
  {
    kind: "once",
    route: "POST /v1/appointments/{id}/cancel",
    seed: seedRacedAppointment,
    body: {},
    objects: 3,
    copies: 5,
    event: "appointment.cancelled",
  },
  {
    // Racing issues each answer a URL; one of them is live.
    kind: "independent",
    route: "POST /v1/users/me/calendar-feed",
    seed: async () => ({}),
    changes: async () => Array.from({ length: 6 }, () => ({})),
    async verify(owner) {
      expect(await liveFeeds(owner)).toBe(1);
      expect((await json(await call("GET", "/v1/users/me/calendar-feed", { token: owner.token }))).data.exists).toBe(true);
    },
  },
  {
    kind: "independent",
    route: "DELETE /v1/users/me/calendar-feed",
    seed: async (owner) => {
      expect((await call("POST", "/v1/users/me/calendar-feed", { token: owner.token })).status).toBe(201);
      return {};
    },
    changes: async () => Array.from({ length: 4 }, () => ({})),
    async verify(owner) {
      expect(await liveFeeds(owner)).toBe(0);
    },
  },
);

// Action plans (issue 46). The pass racing a reply and two passes at once are in test/action-plans/ (the pass is not a route).
const racedPlan = async (owner: TestPrincipal, steps: unknown[] = [{ type: "notify", delay: "P1D" }]) =>
  (await json(await call("POST", "/v1/action-plans", { token: owner.token, body: { name: "Raced plan", steps } }))).data as { id: string };
async function racedEnrollment(owner: TestPrincipal, pause = false): Promise<Params> {
  const plan = await racedPlan(owner);
  const contact = await createContact(owner.token);
  const e = (
    await json(await call("POST", `/v1/action-plans/${plan.id}/enrollments`, { token: owner.token, body: { contactId: contact.id } }))
  ).data as { id: string };
  if (pause) await call("POST", `/v1/action-plans/${plan.id}/enrollments/${e.id}/pause`, { token: owner.token });
  return { id: plan.id, enrollmentId: e.id };
}
const PLAN_CHANGES = [
  { name: "Renamed in a race" },
  { triggers: [{ event: "contact.tagged", tag: "raced" }] },
  { steps: [{ type: "add_tag", delay: "PT1H", tag: "raced" }] },
];
RACES.push(
  {
    kind: "independent",
    route: "POST /v1/action-plans",
    seed: async () => ({}),
    changes: async () =>
      Array.from({ length: 10 }, (_, i) => ({ body: { name: `Plan ${i}`, steps: [{ type: "notify", delay: "PT0S" }] } })),
    async verify(owner) {
      expect((await json(await call("GET", "/v1/action-plans", { token: owner.token }))).pagination.total).toBe(10);
    },
  },
  {
    kind: "independent",
    route: "PATCH /v1/action-plans/{id}",
    seed: async (owner) => ({ id: (await racedPlan(owner)).id }),
    changes: async () => PLAN_CHANGES.map((body) => ({ body })),
    async verify(owner, { id }) {
      const plan = (await json(await call("GET", `/v1/action-plans/${id}`, { token: owner.token }))).data;
      for (const change of PLAN_CHANGES) expect(plan).toMatchObject(change);
      expect(plan.version).toBe(1 + PLAN_CHANGES.length);
    },
  },
  {
    kind: "once",
    route: "DELETE /v1/action-plans/{id}",
    seed: async (owner) => ({ id: (await racedPlan(owner)).id }),
    objects: 5,
    copies: 5,
  },
  {
    kind: "once",
    route: "POST /v1/action-plans/{id}/enrollments",
    seed: async (owner) => ({ id: (await racedPlan(owner)).id, contactId: (await createContact(owner.token)).id }),
    body: (p: Params) => ({ contactId: p.contactId }),
    objects: 5,
    copies: 5,
    counter: {
      read: (owner) => count(owner, "SELECT COUNT(*) AS n FROM plan_enrollments WHERE organization_id = ?", owner.organizationId),
      perMove: 1,
    },
    event: "action_plan.enrolled",
  },
  {
    kind: "once",
    route: "POST /v1/action-plans/{id}/enrollments/{enrollmentId}/pause",
    seed: (owner) => racedEnrollment(owner),
    objects: 5,
    copies: 5,
    event: "action_plan.paused",
  },
  {
    kind: "once",
    route: "POST /v1/action-plans/{id}/enrollments/{enrollmentId}/resume",
    seed: (owner) => racedEnrollment(owner, true),
    objects: 5,
    copies: 5,
  },
  {
    kind: "once",
    route: "POST /v1/action-plans/{id}/enrollments/{enrollmentId}/stop",
    seed: (owner) => racedEnrollment(owner),
    objects: 5,
    copies: 5,
  },
);
