import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { planPage } from "../../src/merge/duplicates";
import { createDb } from "../../src/db/client";
import { purgeTrash } from "../../src/trash/service";
import { call, json } from "../helpers/client";
import { createContact, expectCrmError, getContact, listPage, logActivity, logCommunication } from "../helpers/contacts";
import { createDeal, getDeal } from "../helpers/deals";
import { expectDerivedFiguresExact } from "../helpers/derived-figures";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { settledImport, startRowsImport } from "../helpers/imports";
import { eventCount } from "../helpers/race-table";
import { openMailbox } from "../helpers/receiver";
import { createTestimonial } from "../helpers/testimonials";
import { createSurveyTemplate, scheduleSurvey, surveyDetail } from "../helpers/surveys";
import { subscribe } from "../helpers/webhooks";

const merge = (p: TestPrincipal, id: string, sourceIds: string[], headers?: Record<string, string>) =>
  call("POST", `/v1/contacts/${id}/merge`, { token: p.token, body: { sourceIds }, headers });

async function merged(p: TestPrincipal, id: string, sourceIds: string[]) {
  const res = await merge(p, id, sourceIds);
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(200);
  return { contact: body.data, etag: res.headers.get("etag") };
}

const tagsOf = async (p: TestPrincipal) => {
  const page = await json(await call("GET", "/v1/contacts/tags?limit=100", { token: p.token }));
  return {
    total: page.pagination.total as number,
    counts: Object.fromEntries(page.data.map((t: { name: string; count: number }) => [t.name, t.count])),
  };
};
const totalOf = async (p: TestPrincipal, path: string) =>
  (await json(await call("GET", path, { token: p.token }))).pagination.total as number;
const searchIds = async (p: TestPrincipal, list: string, q: string) => {
  const page = await json(await call("GET", `${list}?q=${encodeURIComponent(q)}&limit=100`, { token: p.token }));
  return { total: page.pagination.total as number, ids: page.data.map((r: { id: string }) => r.id).sort() };
};

describe("POST /v1/contacts/{id}/merge", () => {
  it("moves every kind of record onto the target, fills its empty fields, unites tags, and trashes the sources with mergedInto", async () => {
    const p = await createPrincipal();
    const target = await createContact(p.token, { firstName: "Tara", lastName: "Quill", tags: ["buyer"] });
    const s1 = await createContact(p.token, {
      firstName: "Tara",
      lastName: "Quill",
      phone: "(416) 555-0199",
      address: { street: "12 Elm St", city: "Toronto", state: "ON", zipCode: "M5V 1A1" },
      notes: "met at the open house",
      source: "OPEN_HOUSE",
      tags: ["buyer", "open-house"],
    });
    // The same number as s1's, written another way: not taken twice. Its second number fills the free slot.
    const s2 = await createContact(p.token, {
      firstName: "T.",
      lastName: "Quill",
      phone: "+1 416 555 0199",
      secondaryPhone: "416-555-0142",
      tags: ["vip"],
      notes: "second notes",
    });
    await logActivity(p.token, target.id, { type: "NOTE", description: "target's own" });
    await logActivity(p.token, s1.id, { type: "PHONE_CALL", description: "s1 call" });
    await logActivity(p.token, s2.id, { type: "MEETING", description: "s2 meeting" });
    await logCommunication(p.token, s1.id, { type: "email", direction: "inbound", subject: "About Elm St" });
    const deal1 = await createDeal(p.token, { contactId: s1.id, title: "Elm St purchase" });
    const deal2 = await createDeal(p.token, { contactId: s2.id, title: "Oak Ave sale", type: "SALE" });
    const trashedDeal = await createDeal(p.token, { contactId: s1.id, title: "Old deal" });
    expect((await call("DELETE", `/v1/deals/${trashedDeal.id}`, { token: p.token })).status).toBe(200);
    const testimonial = await createTestimonial(p, { authorPersonId: s1.id });
    const template = await createSurveyTemplate(p);
    const survey = await scheduleSurvey(p, { templateId: template.id, recipientPersonId: s2.id });
    const referral = await json(
      await call("POST", "/api/reputation/referrals", {
        token: p.token,
        body: { agentUserId: p.userId, referrerPersonId: s1.id, referredName: "A Friend" },
      }),
    );
    expect(referral.id).toEqual(expect.any(String));
    const contactsBefore = await totalOf(p, "/v1/contacts?limit=1");
    expect(await tagsOf(p)).toEqual({ total: 3, counts: { buyer: 2, "open-house": 1, vip: 1 } });

    const { contact, etag } = await merged(p, target.id, [s1.id, s2.id]);
    expect(contact).toMatchObject({
      id: target.id,
      firstName: "Tara",
      lastName: "Quill",
      email: target.email,
      phone: "(416) 555-0199",
      secondaryPhone: "416-555-0142",
      address: { street: "12 Elm St", city: "Toronto", state: "ON", zipCode: "M5V 1A1" },
      notes: "met at the open house",
      source: "OPEN_HOUSE",
      tags: ["buyer", "open-house", "vip"],
    });
    expect(await getContact(p.token, target.id)).toEqual(contact);
    expect(etag).toBe((await call("GET", `/v1/contacts/${target.id}`, { token: p.token })).headers.get("etag"));

    // Every record is on the target, counted exactly.
    const activities = await json(await call("GET", `/v1/contacts/${target.id}/activities?limit=100`, { token: p.token }));
    expect(activities.pagination.total).toBe(3);
    expect(activities.data.map((a: { description: string }) => a.description).sort()).toEqual(["s1 call", "s2 meeting", "target's own"]);
    const communications = await json(await call("GET", `/v1/contacts/${target.id}/communications?limit=100`, { token: p.token }));
    expect(communications.pagination.total).toBe(1);
    expect(communications.data[0].subject).toBe("About Elm St");
    const withDeals = await getContact(p.token, target.id, "?include=deals");
    expect(withDeals.deals.map((d: { id: string }) => d.id).sort()).toEqual([deal1.id, deal2.id].sort());
    expect((await getDeal(p.token, deal1.id)).contactId).toBe(target.id);
    expect((await json(await call("GET", `/api/reputation/testimonials/${testimonial.id}`, { token: p.token }))).authorPersonId).toBe(
      target.id,
    );
    expect((await surveyDetail(p, survey.id)).recipientPersonId).toBe(target.id);
    const referrals = await json(await call("GET", "/api/reputation/referrals?limit=100", { token: p.token }));
    expect(referrals.referrals.find((r: { id: string }) => r.id === referral.id).referrerPersonId).toBe(target.id);

    // The sources are gone from reads, lists and counts, and wait in the trash naming the target.
    for (const s of [s1, s2]) expect((await call("GET", `/v1/contacts/${s.id}`, { token: p.token })).status).toBe(404);
    expect(await totalOf(p, "/v1/contacts?limit=1")).toBe(contactsBefore - 2);
    expect((await listPage(p.token, "limit=100")).data.map((c) => c.id)).not.toContain(s1.id);
    expect(await tagsOf(p)).toEqual({ total: 3, counts: { buyer: 1, "open-house": 1, vip: 1 } });
    expect(await totalOf(p, "/v1/contacts?tags=buyer")).toBe(1);
    const trash = await json(await call("GET", "/v1/trash?kind=contact", { token: p.token }));
    expect(trash.data.map((t: { id: string; mergedInto: string }) => [t.id, t.mergedInto]).sort()).toEqual(
      [
        [s1.id, target.id],
        [s2.id, target.id],
      ].sort(),
    );
    await expectDerivedFiguresExact(p.organizationId);

    // A merged contact is not restored: its records live on the target.
    const errors = await expectCrmError(await call("POST", `/v1/contacts/${s1.id}/restore`, { token: p.token }), 409, "conflict_error");
    expect(errors).toEqual([{ field: "mergedInto", code: "merged_contact", message: target.id }]);
    // A deal of a source that waited in the trash comes back on the target.
    expect((await call("POST", `/v1/deals/${trashedDeal.id}/restore`, { token: p.token })).status).toBe(200);
    expect((await getDeal(p.token, trashedDeal.id)).contactId).toBe(target.id);
  });

  it("fills only what the target lacks and never overwrites a field", async () => {
    const p = await createPrincipal();
    const target = await createContact(p.token, {
      phone: "+1 212 555 0100",
      notes: "mine",
      address: { city: "Boston" },
      type: "CLIENT",
      status: "INACTIVE",
      leadScore: 40,
    });
    const source = await createContact(p.token, {
      phone: "+1 212 555 0111",
      secondaryPhone: "+1 212 555 0122",
      notes: "theirs",
      address: { city: "Austin", zipCode: "73301" },
      type: "VENDOR",
      leadScore: 90,
      preferences: { communicationMethod: "SMS" },
    });
    const { contact } = await merged(p, target.id, [source.id]);
    expect(contact).toMatchObject({
      phone: "+1 212 555 0100",
      secondaryPhone: "+1 212 555 0111",
      notes: "mine",
      address: { city: "Boston" },
      type: "CLIENT",
      status: "INACTIVE",
      leadScore: 40,
      preferences: { communicationMethod: "SMS" },
    });
  });

  it("fills the custom fields the target lacks, key by key, the first source first", async () => {
    const p = await createPrincipal();
    for (const [key, type] of [
      ["budget", "number"],
      ["side", "text"],
      ["preapproved", "boolean"],
    ]) {
      expect((await call("POST", "/v1/custom-fields", { token: p.token, body: { object: "contact", key, label: key, type } })).status).toBe(
        201,
      );
    }
    const target = await createContact(p.token, { customFields: { budget: 500000 } });
    const first = await createContact(p.token, { customFields: { budget: 1, side: "buyer" } });
    const second = await createContact(p.token, { customFields: { side: "seller", preapproved: true } });
    const { contact } = await merged(p, target.id, [first.id, second.id]);
    expect(contact.customFields).toEqual({ budget: 500000, side: "buyer", preapproved: true });
  });

  it("keeps the lead score rule: an automatic score is computed anew with every merged activity", async () => {
    const p = await createPrincipal();
    const target = await createContact(p.token, { calculateLeadScore: true });
    expect(target.leadScore).toBe(3);
    const source = await createContact(p.token);
    for (let i = 0; i < 4; i++) await logActivity(p.token, source.id, { type: "PHONE_CALL", description: `call ${i}` });
    const { contact } = await merged(p, target.id, [source.id]);
    // LEAD 3 + engagement (4 × 1.5 + 4 × 2) + recency 15 (the calls are minutes old).
    expect(contact.leadScore).toBe(3 + 6 + 8 + 15);
  });

  it("emits contact.updated with mergedFrom and contact.deleted per source with mergedInto, delivered to webhooks", async () => {
    const p = await createPrincipal();
    const box = await openMailbox();
    await subscribe(p, { url: box.url, events: ["contact.updated", "contact.deleted"] });
    const target = await createContact(p.token);
    const s1 = await createContact(p.token, { tags: ["x"] });
    const s2 = await createContact(p.token);
    await merged(p, target.id, [s1.id, s2.id]);
    expect(await eventCount(p.organizationId, "contact.updated")).toBe(1);
    expect(await eventCount(p.organizationId, "contact.deleted")).toBe(2);
    let received: { event: string; data: Record<string, any> }[] = [];
    for (let i = 0; i < 200 && received.length < 3; i++) {
      await new Promise((r) => setTimeout(r, 50));
      received = (await box.received()).map((r) => JSON.parse(r.body));
    }
    const updated = received.filter((r) => r.event === "contact.updated");
    expect(updated).toHaveLength(1);
    expect(updated[0]!.data).toMatchObject({ object: { id: target.id, tags: ["x"] }, mergedFrom: [s1.id, s2.id] });
    expect(
      received
        .filter((r) => r.event === "contact.deleted")
        .map((r) => r.data)
        .sort((a, b) => (a.object.id < b.object.id ? -1 : 1)),
    ).toEqual(
      [s1, s2]
        .map((s) => ({ object: { id: s.id }, previousAttributes: null, changes: null, mergedInto: target.id }))
        .sort((a, b) => (a.object.id < b.object.id ? -1 : 1)),
    );
  });

  it("search: the target is found by the words it took, the sources' own words are gone, totals exact", async () => {
    const p = await createPrincipal();
    const target = await createContact(p.token, { firstName: "Ingrid", lastName: "Okafor" });
    const source = await createContact(p.token, {
      firstName: "Ingrid",
      lastName: "Okonkwo",
      phone: "(416) 555-0177",
      tags: ["golfer"],
      notes: "asked about zanzibar",
    });
    const deal = await createDeal(p.token, { contactId: source.id, title: "Zephyr Lane purchase" });
    expect(await searchIds(p, "/v1/contacts", "okonkwo")).toEqual({ total: 1, ids: [source.id] });
    expect(await searchIds(p, "/v1/contacts", "golfer")).toEqual({ total: 1, ids: [source.id] });
    expect(await searchIds(p, "/v1/contacts", "4165550177")).toEqual({ total: 1, ids: [source.id] });
    expect(await searchIds(p, "/v1/contacts", "ingrid")).toEqual({ total: 2, ids: [target.id, source.id].sort() });
    await merged(p, target.id, [source.id]);
    expect(await searchIds(p, "/v1/contacts", "okonkwo")).toEqual({ total: 0, ids: [] });
    expect(await searchIds(p, "/v1/contacts", "golfer")).toEqual({ total: 1, ids: [target.id] });
    expect(await searchIds(p, "/v1/contacts", "416 555 0177")).toEqual({ total: 1, ids: [target.id] });
    expect(await searchIds(p, "/v1/contacts", "zanzibar")).toEqual({ total: 1, ids: [target.id] });
    expect(await searchIds(p, "/v1/contacts", "ingrid")).toEqual({ total: 1, ids: [target.id] });
    expect(await searchIds(p, "/v1/deals", "zephyr")).toEqual({ total: 1, ids: [deal.id] });
    expect((await getDeal(p.token, deal.id)).contactId).toBe(target.id);
    // The index holds nothing of the source any more.
    const left = await (await tenantDb(p.organizationId))
      .prepare("SELECT COUNT(*) AS n FROM search_terms WHERE record_id = ?")
      .bind(source.id)
      .first<{ n: number }>();
    expect(left!.n).toBe(0);
  });

  it("erasing the target erases the contacts merged into it (and those merged into them)", async () => {
    const p = await createPrincipal();
    const target = await createContact(p.token, { firstName: "Wilhelmina", lastName: "Farquharson" });
    const middle = await createContact(p.token, { firstName: "Wilhelmina", lastName: "Farquharson", phone: "+1 604 555 0188" });
    const first = await createContact(p.token, { firstName: "Willa", lastName: "Farquharson", notes: "the earliest copy" });
    await merged(p, middle.id, [first.id]);
    await merged(p, target.id, [middle.id]);
    const res = await call("DELETE", `/v1/contacts/${target.id}?erase=true`, { token: p.token });
    expect(res.status, await res.clone().text()).toBe(200);
    const db = await tenantDb(p.organizationId);
    for (const id of [target.id, middle.id, first.id]) {
      expect((await db.prepare("SELECT state FROM trash_entries WHERE record_id = ?").bind(id).first<{ state: string }>())!.state).toBe(
        "erased",
      );
      expect((await db.prepare("SELECT COUNT(*) AS n FROM trash_rows WHERE record_id = ?").bind(id).first<{ n: number }>())!.n).toBe(0);
    }
    expect((await json(await call("GET", "/v1/trash", { token: p.token }))).pagination.total).toBe(0);
    for (const word of ["farquharson", "wilhelmina", "willa", "6045550188", "earliest"])
      expect((await searchIds(p, "/v1/contacts", word)).total).toBe(0);
    const kept = await db
      .prepare("SELECT COUNT(*) AS n FROM trash_rows WHERE organization_id = ? AND (row LIKE '%Farquharson%' OR row LIKE '%5550188%')")
      .bind(p.organizationId)
      .first<{ n: number }>();
    expect(kept!.n).toBe(0);
  });

  it("a lead or an import naming a merged contact by its e-mail or phone finds the contact it was merged into, through later merges, until erased", async () => {
    const p = await createPrincipal();
    const run = crypto.randomUUID().slice(0, 8);
    const keep = await createContact(p.token, { firstName: "Odile", lastName: "Marchetti", email: `odile.${run}@example.test` });
    const copy = await createContact(p.token, {
      firstName: "Odile",
      lastName: "Marchetti",
      email: `o.marchetti.${run}@portal.test`,
      phone: "(647) 555-0142",
    });
    await merged(p, keep.id, [copy.id]);
    const before = await totalOf(p, "/v1/contacts?limit=1");

    // The portal sends the same person again, by the e-mail and the phone (written another way) the copy had.
    const byEmail = await call("POST", "/v1/leads", {
      token: p.token,
      body: {
        source: "ZILLOW",
        sourceEventId: `a-${run}`,
        person: { firstName: "Odile", emails: [`O.Marchetti.${run}@portal.test`] },
        message: "Still looking",
      },
    });
    expect(byEmail.status, await byEmail.clone().text()).toBe(200);
    expect((await json(byEmail)).data).toMatchObject({ contactId: keep.id, created: false, matchedBy: "email" });
    const byPhone = await call("POST", "/v1/leads", {
      token: p.token,
      body: { source: "ZILLOW", sourceEventId: `b-${run}`, person: { phones: ["+1 647-555-0142"] } },
    });
    expect(byPhone.status, await byPhone.clone().text()).toBe(200);
    expect((await json(byPhone)).data).toMatchObject({ contactId: keep.id, matchedBy: "phone" });
    // An import of the old book: the row is the kept contact (skipped), not a new one.
    const started = await startRowsImport(p, {
      kind: "contacts",
      rows: [{ email: `o.marchetti.${run}@portal.test`, firstName: "Odile", lastName: "Marchetti" }],
      onDuplicate: "skip",
    });
    expect(await settledImport(p, started.id)).toMatchObject({ status: "completed", created: 0, skipped: 1 });
    expect(await totalOf(p, "/v1/contacts?limit=1")).toBe(before);

    // The kept contact merged in turn: the first copy's keys follow it.
    const last = await createContact(p.token, { firstName: "Odile", lastName: "Marchetti-Ruiz" });
    await merged(p, last.id, [keep.id]);
    const again = await call("POST", "/v1/leads", {
      token: p.token,
      body: { source: "ZILLOW", sourceEventId: `c-${run}`, person: { emails: [`o.marchetti.${run}@portal.test`] } },
    });
    expect((await json(again)).data).toMatchObject({ contactId: last.id, matchedBy: "email" });

    // Erased, the person's keys go with them: the next lead by that e-mail is a new contact.
    expect((await call("DELETE", `/v1/contacts/${last.id}?erase=true`, { token: p.token })).status).toBe(200);
    const db = await tenantDb(p.organizationId);
    expect(
      (await db
        .prepare("SELECT COUNT(*) AS n FROM contact_merged_keys WHERE organization_id = ?")
        .bind(p.organizationId)
        .first<{ n: number }>())!.n,
    ).toBe(0);
    const fresh = await call("POST", "/v1/leads", {
      token: p.token,
      body: {
        source: "ZILLOW",
        sourceEventId: `d-${run}`,
        person: { firstName: "Odile", lastName: "Marchetti", emails: [`o.marchetti.${run}@portal.test`] },
      },
    });
    expect(fresh.status).toBe(201);
    expect((await json(fresh)).data).toMatchObject({ created: true, matchedBy: null });
  });

  it("a merged contact's keys go when the contact they belong to is purged from the trash, not before", async () => {
    const p = await createPrincipal();
    const run = crypto.randomUUID().slice(0, 8);
    const keep = await createContact(p.token, { firstName: "Pia", lastName: "Lindqvist" });
    const copy = await createContact(p.token, {
      firstName: "Pia",
      lastName: "Lindqvist",
      email: `pia.${run}@portal.test`,
      phone: "(905) 555-0177",
    });
    await merged(p, keep.id, [copy.id]);
    const db = await tenantDb(p.organizationId);
    const keys = async () =>
      (await db
        .prepare("SELECT COUNT(*) AS n FROM contact_merged_keys WHERE organization_id = ?")
        .bind(p.organizationId)
        .first<{ n: number }>())!.n;
    expect(await keys()).toBe(2);
    expect((await call("DELETE", `/v1/contacts/${keep.id}`, { token: p.token })).status).toBe(200);
    // In the trash the contact can come back, and its keys with it.
    expect(await keys()).toBe(2);
    await purgeTrash(env, createDb(db), { now: new Date(Date.now() + 31 * 86_400_000), max: 1000 });
    expect(await keys()).toBe(0);
  });

  it("answers an unknown or another organization's target 404, such sources 422 naming each, and refuses bad lists", async () => {
    const p = await createPrincipal();
    const stranger = await createPrincipal();
    const target = await createContact(p.token);
    const source = await createContact(p.token);
    const theirs = await createContact(stranger.token);
    const foreignTarget = await merge(p, theirs.id, [source.id]);
    const unknownTarget = await merge(p, "00000000-0000-4000-8000-00000000c0de", [source.id]);
    expect(foreignTarget.status).toBe(404);
    expect(await foreignTarget.text()).toBe(await unknownTarget.text());
    const errors = await expectCrmError(await merge(p, target.id, [source.id, theirs.id, "nope"]), 422, "validation_error");
    expect(errors.map((e) => `${e.field}:${e.code}`)).toEqual(["sourceIds.1:invalid_reference", "sourceIds.2:invalid_reference"]);
    const bad = async (sourceIds: unknown, expected: string[]) => {
      const res = await call("POST", `/v1/contacts/${target.id}/merge`, { token: p.token, body: { sourceIds } });
      expect((await expectCrmError(res, 422, "validation_error")).map((e) => `${e.field}:${e.code}`)).toEqual(expected);
    };
    await bad([source.id, source.id], ["sourceIds.1:duplicate_id"]);
    await bad([target.id], ["sourceIds.0:same_as_target"]);
    await bad([], ["sourceIds:too_small"]);
    await bad(
      Array.from({ length: 21 }, (_, i) => `id-${i}`),
      ["sourceIds:too_big"],
    );
    // Nothing moved.
    expect((await getContact(p.token, source.id)).id).toBe(source.id);
    expect((await getContact(stranger.token, theirs.id)).id).toBe(theirs.id);
  });

  it("a source already merged is a 409 naming where it went; a stale If-Match a 412", async () => {
    const p = await createPrincipal();
    const [a, b, source] = [await createContact(p.token), await createContact(p.token), await createContact(p.token)];
    await merged(p, a.id, [source.id]);
    const errors = await expectCrmError(await merge(p, b.id, [source.id]), 409, "conflict_error");
    expect(errors).toEqual([{ field: "mergedInto", code: "merged_contact", message: a.id }]);
    const other = await createContact(p.token);
    expect((await merge(p, b.id, [other.id], { "if-match": '"7"' })).status).toBe(412);
    expect((await merge(p, b.id, [other.id], { "if-match": '"1"' })).status).toBe(200);
  });
});

describe("GET /v1/contacts/duplicates", () => {
  type Group = { reason: string; key: string; contactCount: number; contacts: { id: string }[] };
  async function walk(p: TestPrincipal, query: string) {
    const groups: Group[] = [];
    const totals: number[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 50; i++) {
      const res = await call("GET", `/v1/contacts/duplicates?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, {
        token: p.token,
      });
      const page = await json(res);
      expect(res.status, JSON.stringify(page)).toBe(200);
      groups.push(...page.data);
      totals.push(page.pagination.total);
      if (!page.pagination.hasMore) return { groups, totals };
      cursor = page.pagination.nextCursor;
    }
    throw new Error("the walk did not end");
  }
  const idsOf = (g: Group) => g.contacts.map((c) => c.id).sort();

  it("groups contacts sharing a phone however written (either field) and contacts sharing name and zip; merging a group empties it", async () => {
    const p = await createPrincipal();
    const a = await createContact(p.token, { firstName: "Ann", lastName: "Lee", phone: "(415) 555-0100" });
    const b = await createContact(p.token, { firstName: "Bob", lastName: "Ray", secondaryPhone: "+1 415-555-0100" });
    const c = await createContact(p.token, { firstName: "Cy", lastName: "Doe", phone: "415.555.0100" });
    await createContact(p.token, { firstName: "Dee", lastName: "Fox", phone: "+1 415 555 0199", secondaryPhone: "(415) 555-0199" });
    const s1 = await createContact(p.token, { firstName: "Sam", lastName: "Lee", address: { city: "Cambridge", zipCode: "02139" } });
    const s2 = await createContact(p.token, { firstName: "SAM", lastName: "lee", address: { zipCode: " 02139" } });
    await createContact(p.token, { firstName: "Sam", lastName: "Lee", address: { zipCode: "02140" } });
    await createContact(p.token, { firstName: "Sam", lastName: "Lee" });
    const { groups, totals } = await walk(p, "limit=10");
    expect(groups.map((g) => [g.reason, g.key, g.contactCount, idsOf(g)])).toEqual([
      ["phone", "+14155550100", 3, [a.id, b.id, c.id].sort()],
      ["name_zip", "sam|lee|02139", 2, [s1.id, s2.id].sort()],
    ]);
    expect(new Set(totals)).toEqual(new Set([2]));
    expect((await walk(p, "reason=name_zip")).groups.map((g) => g.key)).toEqual(["sam|lee|02139"]);
    await merged(p, a.id, [b.id, c.id]);
    await merged(p, s1.id, [s2.id]);
    expect(await walk(p, "limit=10")).toEqual({ groups: [], totals: [0, 0] });
  });

  it("pages through every group exactly once, across both kinds", async () => {
    const p = await createPrincipal();
    const expected: string[] = [];
    for (let i = 0; i < 5; i++) {
      const phone = `+1 212 555 01${10 + i}`;
      await createContact(p.token, { phone });
      await createContact(p.token, { secondaryPhone: phone.replace("+1 ", "") });
      expected.push(`phone +121255501${10 + i}`);
    }
    for (let i = 0; i < 3; i++) {
      for (let j = 0; j < 2; j++) await createContact(p.token, { firstName: "Pat", lastName: `Kim${i}`, address: { zipCode: "10001" } });
      expected.push(`name_zip pat|kim${i}|10001`);
    }
    const { groups, totals } = await walk(p, "limit=2");
    expect(groups.map((g) => `${g.reason} ${g.key}`)).toEqual(expected);
    expect(new Set(totals)).toEqual(new Set([8]));
    const bad = await call("GET", "/v1/contacts/duplicates?cursor=nope", { token: p.token });
    expect(bad.status).toBe(422);
  });

  it("plans a page within its window: complete keys only, a window of one key moves on past it", () => {
    const start = { key: "", inclusive: true };
    // Both lists complete: every key seen twice is a group.
    expect(
      planPage(
        [
          ["a", "b", "b"],
          ["a", "c"],
        ],
        5,
        start,
        10,
      ),
    ).toEqual({ keys: ["a", "b"], next: null });
    // The first list is full: its last key "c" may go on past the window, so the page stops before it.
    expect(
      planPage(
        [
          ["a", "b", "c"],
          ["c", "d"],
        ],
        3,
        start,
        10,
      ),
    ).toEqual({ keys: [], next: { key: "c", inclusive: true } });
    expect(
      planPage(
        [
          ["a", "a", "c"],
          ["c", "d"],
        ],
        3,
        start,
        10,
      ),
    ).toEqual({ keys: ["a"], next: { key: "c", inclusive: true } });
    // More groups than the limit: the next page starts after the last one listed.
    expect(planPage([["a", "a", "b", "b"], []], 10, start, 1)).toEqual({ keys: ["a"], next: { key: "a", inclusive: false } });
    // A full window of one key is a group, and the next page goes on after it.
    expect(planPage([["c", "c", "c"], ["c"]], 3, { key: "c", inclusive: true }, 10)).toEqual({
      keys: ["c"],
      next: { key: "c", inclusive: false },
    });
  });
});
