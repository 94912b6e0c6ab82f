import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import { drainLeadInbox } from "../../src/leads/inbox";
import { pruneLeadReviews } from "../../src/leads/reviews";
import { createApiKey } from "../helpers/api-keys";
import { call, json } from "../helpers/client";
import { createContact, getContact, uniqueEmail } from "../helpers/contacts";
import { whereFound } from "../helpers/erasure";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { createProperty } from "../helpers/properties";
import { openMailbox } from "../helpers/receiver";
import { subscribe } from "../helpers/webhooks";
import { testApp } from "../helpers/test-app";

const postLead = (token: string, body: Record<string, unknown>) => call("POST", "/v1/leads", { token, body });
const settling = testApp();
/** A lead from a form's key (no contacts:read), answered once its intake, which runs after the answer (leads/inbox.ts), is done. */
const formLead = (token: string, body: Record<string, unknown>) =>
  settling.fetch("POST", "/v1/leads", { token, body: JSON.stringify(body), headers: { "content-type": "application/json" } });

/** A lead through the API: its status and answer. */
async function lead(token: string, body: Record<string, unknown>) {
  const res = await postLead(token, { source: "WEBSITE", ...body });
  const payload = await json(res);
  return { status: res.status, data: payload.data, error: payload.error };
}

const count = async (p: TestPrincipal, sql: string, ...binds: unknown[]) =>
  (await (
    await tenantDb(p.organizationId)
  )
    .prepare(sql)
    .bind(...binds)
    .first<{ n: number }>())!.n;
const contactsOf = (p: TestPrincipal) => count(p, "SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ?", p.organizationId);
const events = (p: TestPrincipal, type: string) =>
  count(p, "SELECT COUNT(*) AS n FROM outbox_events WHERE organization_id = ? AND type = ?", p.organizationId, type);
const activities = async (p: TestPrincipal, contactId: string) =>
  (await json(await call("GET", `/v1/contacts/${contactId}/activities?limit=100`, { token: p.token }))).data as Record<string, any>[];

async function settle(p: TestPrincipal, settings: Record<string, unknown>) {
  const res = await call("PATCH", "/v1/organization", { token: p.token, body: { settings } });
  expect(res.status, await res.clone().text()).toBe(200);
}

describe("lead intake (POST /v1/leads)", () => {
  it("creates a new person as a contact (201), with the source, the message as an activity and contact.created", async () => {
    const p = await createPrincipal();
    const email = uniqueEmail("new");
    const res = await lead(p.token, {
      source: "zillow",
      type: "inquiry",
      person: { firstName: "Priya", lastName: "Patel", emails: [email], phones: ["(415) 555-0100"] },
      message: "Is Elm St still available?",
    });
    expect(res.status).toBe(201);
    expect(res.data).toEqual({ contactId: expect.any(String), created: true, matchedBy: null, assignedTo: p.userId, conflicts: [] });
    const contact = await getContact(p.token, res.data.contactId);
    expect(contact).toMatchObject({ firstName: "Priya", lastName: "Patel", email, source: "ZILLOW", assignedTo: p.userId });
    const [activity] = await activities(p, contact.id);
    expect(activity).toMatchObject({
      type: "NOTE",
      description: "Is Elm St still available?",
      metadata: { leadType: "inquiry", source: "ZILLOW" },
    });
    expect(await events(p, "contact.created")).toBe(1);
    expect(await events(p, "contact.assigned")).toBe(1);
  });

  it("matches by e-mail in any case (200) and never blanks a field; the source stays the first one", async () => {
    const p = await createPrincipal();
    const email = uniqueEmail("Case");
    const existing = await createContact(p.token, {
      firstName: "Ana",
      lastName: "Lima",
      email,
      source: "REFERRAL",
      notes: "keep",
      address: { city: "Oakland", zipCode: "94601" },
    });
    const res = await lead(p.token, { person: { firstName: "", emails: [email.toUpperCase()], address: { street: "1 Elm St" } } });
    expect(res.status).toBe(200);
    expect(res.data).toEqual({ contactId: existing.id, created: false, matchedBy: "email", assignedTo: null, conflicts: [] });
    const after = await getContact(p.token, existing.id);
    expect(after).toMatchObject({
      firstName: "Ana",
      lastName: "Lima",
      email,
      source: "REFERRAL",
      notes: "keep",
      address: { street: "1 Elm St", city: "Oakland", zipCode: "94601" },
    });
    expect(await contactsOf(p)).toBe(1);
    expect(await events(p, "contact.updated")).toBe(1);

    // A web form's lead knowing the e-mail may add to the record, never rename the client or move them.
    const hostile = await lead(p.token, {
      person: { firstName: "Mallory", lastName: "Evil", emails: [email], address: { city: "Elsewhere", state: "NV" } },
    });
    expect(hostile.status).toBe(200);
    expect(await getContact(p.token, existing.id)).toMatchObject({
      firstName: "Ana",
      lastName: "Lima",
      address: { street: "1 Elm St", city: "Oakland", zipCode: "94601", state: "NV" },
    });
  });

  it("matches a differently formatted phone; new numbers and the source are suggestions on the activity, never written on the contact", async () => {
    const p = await createPrincipal();
    const existing = await createContact(p.token, { phone: "+1 415-555-0100" });
    const newEmail = uniqueEmail("extra");
    const res = await lead(p.token, { person: { emails: [newEmail], phones: ["(415) 555-0100", "415.555.0199", "+1 212 555 0142"] } });
    expect(res.status).toBe(200);
    expect(res.data).toMatchObject({ contactId: existing.id, created: false, matchedBy: "phone" });
    const after = await getContact(p.token, existing.id);
    // The free secondary phone and the missing source stay free (issue 40): a lead may be anyone who knows a number.
    expect(after).toMatchObject({ email: existing.email, phone: "+1 415-555-0100", secondaryPhone: null, source: null });
    const [activity] = await activities(p, existing.id);
    expect(activity!.metadata).toMatchObject({
      extraEmails: [newEmail],
      suggested: { phones: ["415.555.0199", "+1 212 555 0142"], source: "WEBSITE" },
    });
    expect(activity!.metadata.extraPhones).toBeUndefined();
    expect(await contactsOf(p)).toBe(1);
    expect(await events(p, "contact.updated")).toBe(0);
  });

  it("reads a number without a country code in the organization's region (GB)", async () => {
    const p = await createPrincipal();
    await settle(p, { defaultPhoneRegion: "GB" });
    const existing = await createContact(p.token, { phone: "+44 20 7946 0018" });
    const res = await lead(p.token, { person: { phones: ["020 7946 0018"] } });
    expect(res.status, JSON.stringify(res)).toBe(200);
    expect(res.data).toMatchObject({ contactId: existing.id, matchedBy: "phone" });
  });

  it("lets the e-mail win over a phone that matches someone else, and names the other in conflicts", async () => {
    const p = await createPrincipal();
    const byEmail = await createContact(p.token, {});
    const byPhone = await createContact(p.token, { phone: "+1 415 555 0111" });
    const res = await lead(p.token, { person: { emails: [byEmail.email], phones: ["4155550111"] } });
    expect(res.status).toBe(200);
    expect(res.data).toEqual({ contactId: byEmail.id, created: false, matchedBy: "email", assignedTo: null, conflicts: [byPhone.id] });
  });

  it("keeps a phone-only lead that matches nobody for review (202, no contact), and refuses a phone that is none", async () => {
    const p = await createPrincipal();
    const res = await lead(p.token, { person: { firstName: "Nobody", phones: ["(415) 555-0177"] } });
    expect(res.status).toBe(202);
    expect(res.data).toEqual({ received: true, reviewId: expect.any(String) });
    const bad = await lead(p.token, { person: { emails: [uniqueEmail()], phones: ["12"] } });
    expect(bad.status).toBe(422);
    expect(bad.error.errors).toEqual([expect.objectContaining({ field: "person.phones.0", code: "invalid_phone" })]);
    const empty = await lead(p.token, { person: {} });
    expect(empty.status).toBe(422);
    expect(empty.error.errors).toEqual([expect.objectContaining({ field: "person", code: "contact_point_required" })]);
    expect(await contactsOf(p)).toBe(0);
  });

  it("answers a repeated source event with the first answer and status, and writes nothing again", async () => {
    const p = await createPrincipal();
    const body = { source: "ZILLOW", sourceEventId: "zl-123", person: { firstName: "Rae", emails: [uniqueEmail("rep")] }, message: "Hi" };
    const first = await lead(p.token, body);
    expect(first.status).toBe(201);
    for (let i = 0; i < 3; i++) {
      const again = await lead(p.token, { ...body, message: `Hi again ${i}` });
      expect(again).toEqual(first);
    }
    expect(await activities(p, first.data.contactId)).toHaveLength(1);
    expect(await events(p, "contact.created")).toBe(1);
    // Without a sourceEventId nothing is remembered: the same lead again is a match that logs its message again.
    const { sourceEventId: _id, ...unnamed } = body;
    expect((await lead(p.token, unnamed)).status).toBe(200);
    expect((await lead(p.token, unnamed)).status).toBe(200);
    expect(await activities(p, first.data.contactId)).toHaveLength(3);
    // The same event id from another source is another lead (here: a match).
    const other = await lead(p.token, { ...body, source: "REALTOR" });
    expect(other.status).toBe(200);
    expect(await activities(p, first.data.contactId)).toHaveLength(4);
  });

  it("30 concurrent intakes of one new person make one contact, and every answer names it", async () => {
    const p = await createPrincipal();
    const email = uniqueEmail("crowd");
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        lead(p.token, {
          sourceEventId: `crowd-${i}`,
          person: { firstName: "Crowd", emails: [i % 2 ? email.toUpperCase() : email], phones: ["+1 415 555 0150"] },
        }),
      ),
    );
    for (const a of answers) expect(a.status, JSON.stringify(a)).toBeLessThan(300);
    const ids = new Set(answers.map((a) => a.data.contactId));
    expect(ids.size).toBe(1);
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    expect(await contactsOf(p)).toBe(1);
    expect(await activities(p, [...ids][0]!)).toHaveLength(30);
    expect(await events(p, "contact.created")).toBe(1);
  });

  it("routes round robin over the users who accept leads, and by the longest zip prefix in zip mode", async () => {
    const p = await createPrincipal();
    const second = await createPrincipal({ organizationId: p.organizationId, role: "agent" });
    const [a, b] = [p.userId, second.userId].sort();
    const assigned: string[] = [];
    for (let i = 0; i < 4; i++) assigned.push((await lead(p.token, { person: { emails: [uniqueEmail("rr")] } })).data.assignedTo);
    expect(assigned).toEqual([a, b, a, b]);

    // Concurrent new leads take one turn each: 10 at once over two users give five each.
    const burst = await Promise.all(Array.from({ length: 10 }, () => lead(p.token, { person: { emails: [uniqueEmail("burst")] } })));
    for (const r of burst) expect(r.status, JSON.stringify(r)).toBe(201);
    expect(burst.filter((r) => r.data.assignedTo === a)).toHaveLength(5);
    expect(burst.filter((r) => r.data.assignedTo === b)).toHaveLength(5);

    await settle(p, {
      leadRouting: {
        mode: "zip",
        zipRules: [
          { zipPrefix: "941", userId: a },
          { zipPrefix: "9410", userId: b },
        ],
      },
    });
    const property = await createProperty(p.token, {
      address: { street: "1 Market St", city: "San Francisco", state: "CA", zipCode: "94105" },
    });
    expect(
      (await lead(p.token, { propertyId: property.id, person: { emails: [uniqueEmail("z")], address: { zipCode: "94199" } } })).data
        .assignedTo,
    ).toBe(b);
    expect((await lead(p.token, { person: { emails: [uniqueEmail("z")], address: { zipCode: "94199" } } })).data.assignedTo).toBe(a);
    // No rule covers it: round robin takes its next turn.
    expect((await lead(p.token, { person: { emails: [uniqueEmail("z")], address: { zipCode: "10001" } } })).data.assignedTo).toBe(a);

    // Nobody accepts leads: the contact is left unassigned.
    for (const id of [a, b])
      expect((await call("PATCH", `/v1/users/${id}`, { token: p.token, body: { acceptsLeads: false } })).status).toBe(200);
    const none = await lead(p.token, { person: { emails: [uniqueEmail("none")] } });
    expect(none).toMatchObject({ status: 201, data: { assignedTo: null } });
  });

  it("delivers property.inquiry_received for a property named by id or by its exact address", async () => {
    const p = await createPrincipal();
    const box = await openMailbox();
    await subscribe(p, { url: box.url, events: ["property.inquiry_received"] });
    const property = await createProperty(p.token, {
      address: { street: "12 Elm St", city: "Springfield", state: "IL", zipCode: "62704" },
    });
    const email = uniqueEmail("inq");
    const firstBody = {
      type: "showing_request",
      sourceEventId: "form-1",
      propertyId: property.id,
      person: { emails: [email] },
      message: "Can I see it Saturday?",
    };
    const first = await lead(p.token, firstBody);
    expect(first.status).toBe(201);
    const second = await lead(p.token, { property: { address: { street: "12 elm st", zipCode: "62704" } }, person: { emails: [email] } });
    expect(second.status).toBe(200);
    let received: { body: string }[] = [];
    for (let i = 0; i < 100 && received.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 50));
      received = await box.received();
    }
    const payloads = received.map((r) => JSON.parse(r.body));
    expect(payloads).toHaveLength(2);
    for (const payload of payloads)
      expect(payload).toMatchObject({
        event: "property.inquiry_received",
        data: { object: { id: property.id }, signal: { type: "INQUIRY", contactId: first.data.contactId } },
      });
    const analytics = (await json(await call("GET", `/v1/properties/${property.id}/analytics`, { token: p.token }))).data;
    expect(analytics.inquiries).toBe(2);
    // A repeat answers its first answer, even once the property has gone (a new lead naming it is a 422).
    expect((await call("DELETE", `/v1/properties/${property.id}`, { token: p.token })).status).toBe(200);
    expect(await lead(p.token, firstBody)).toEqual(first);
    expect((await lead(p.token, { ...firstBody, sourceEventId: "form-2" })).status).toBe(422);
  });

  it("answers another organization's propertyId exactly like an unknown one", async () => {
    const p = await createPrincipal();
    const stranger = await createPrincipal();
    const theirs = await createProperty(stranger.token);
    const body = (propertyId: string) => ({ propertyId, person: { emails: [uniqueEmail("x")] } });
    const foreign = await lead(p.token, body(theirs.id));
    const unknown = await lead(p.token, body(crypto.randomUUID()));
    expect(foreign.status).toBe(422);
    expect(foreign.error).toEqual(unknown.error);
    expect(foreign.error.errors).toEqual([expect.objectContaining({ field: "propertyId", code: "invalid_reference" })]);
    expect(await contactsOf(p)).toBe(0);
  });

  it("is refused without leads:write (403), and an API key with only leads:write posts leads", async () => {
    const p = await createPrincipal();
    const readOnly = await createApiKey(p.token, ["contacts:read"]);
    const denied = await postLead(readOnly.key, { source: "WEBSITE", person: { emails: [uniqueEmail()] } });
    expect(denied.status).toBe(403);
    expect((await json(denied)).error.code).toBe("insufficient_permission");
    const form = await createApiKey(p.token, ["leads:write"]);
    const res = await formLead(form.key, { source: "WEBSITE", person: { emails: [uniqueEmail("form")] } });
    expect(res.status).toBe(202);
    expect(await contactsOf(p)).toBe(1);
    // The form's key reaches nothing else.
    expect((await call("GET", "/v1/contacts", { token: form.key })).status).toBe(403);
  });
});

const RECEIVED = { success: true, data: { received: true } };
const reviews = async (token: string, query = "") => json(await call("GET", `/v1/leads/reviews${query}`, { token }));
const accept = (token: string, id: string, email: string, headers?: Record<string, string>) =>
  call("POST", `/v1/leads/reviews/${id}/accept`, { token, body: { email }, headers });
const answered = async (res: Response) => ({ status: res.status, body: await json(res) });

describe("lead intake tells a web form's key nothing about the clients (issue 40)", () => {
  it("answers a leads:write-only key alike for a match by phone or e-mail, a new person and an unknown number, repeats included", async () => {
    const p = await createPrincipal();
    const form = await createApiKey(p.token, ["leads:write"]);
    const client = await createContact(p.token, { phone: "+1 415 555 0181" });
    for (const person of [
      { phones: ["(415) 555-0181"] },
      { phones: ["(415) 555-0182"] },
      { emails: [client.email] },
      { emails: [uniqueEmail("new")] },
    ]) {
      expect(await answered(await formLead(form.key, { source: "WEBSITE", person })), JSON.stringify(person)).toEqual({
        status: 202,
        body: RECEIVED,
      });
    }
    // A repeat is shaped by whoever asks: the session's first answer named the client, the key's repeat learns nothing.
    const event = { source: "ZILLOW", sourceEventId: "oracle-1", person: { phones: ["+1 415 555 0181"] } };
    const bySession = await lead(p.token, event);
    expect(bySession).toMatchObject({ status: 200, data: { contactId: client.id, matchedBy: "phone" } });
    expect(await answered(await formLead(form.key, event))).toEqual({ status: 202, body: RECEIVED });
    // And an event the key sent first answers in full to a credential that may read contacts.
    const keyFirst = { source: "ZILLOW", sourceEventId: "oracle-2", person: { emails: [client.email] } };
    expect(await answered(await formLead(form.key, keyFirst))).toEqual({ status: 202, body: RECEIVED });
    const reader = await createApiKey(p.token, ["leads:write", "contacts:read"]);
    expect(await answered(await postLead(reader.key, keyFirst))).toEqual({
      status: 200,
      body: { success: true, data: { contactId: client.id, created: false, matchedBy: "email", assignedTo: null, conflicts: [] } },
    });
    expect(await contactsOf(p)).toBe(2);
  });

  it("never writes a lead's numbers or source on the client it matched: the poster's number matches no later lead", async () => {
    const p = await createPrincipal();
    const form = await createApiKey(p.token, ["leads:write"]);
    const client = await createContact(p.token, { phone: "+1 415 555 0191" });
    expect((await formLead(form.key, { source: "open-house", person: { phones: ["415-555-0191", "+1 212 555 0199"] } })).status).toBe(202);
    const res = await call("GET", `/v1/contacts/${client.id}`, { token: p.token });
    expect((await json(res)).data).toMatchObject({ phone: "+1 415 555 0191", secondaryPhone: null, source: null });
    // The activity moved the version as every activity does; nothing on the contact changed, so no contact.updated.
    expect(res.headers.get("etag")).toBe('"2"');
    expect(await events(p, "contact.updated")).toBe(0);
    const [activity] = await activities(p, client.id);
    expect(activity!.metadata).toMatchObject({ source: "OPEN_HOUSE", suggested: { phones: ["+1 212 555 0199"], source: "OPEN_HOUSE" } });
    // A suggestion says only what differs: the contact's own source is not suggested again.
    const sourced = await createContact(p.token, { phone: "+1 415 555 0192", source: "OPEN_HOUSE" });
    expect((await lead(p.token, { source: "open house", person: { phones: ["4155550192"] } })).status).toBe(200);
    expect((await activities(p, sourced.id))[0]!.metadata.suggested).toBeUndefined();
    // The poster's own number did not become the client's: a lead by it alone matches nobody and waits for review.
    const probe = await lead(p.token, { person: { phones: ["+1 212 555 0199"] } });
    expect(probe).toMatchObject({ status: 202, data: { received: true, reviewId: expect.any(String) } });
    expect(await activities(p, client.id)).toHaveLength(1);
  });

  it("lists leads waiting for review, accepts one into the contact intake would make, and dismisses another", async () => {
    const p = await createPrincipal();
    const property = await createProperty(p.token, {
      address: { street: "9 Birch St", city: "San Francisco", state: "CA", zipCode: "94110" },
    });
    const body = {
      source: "zillow",
      sourceEventId: "ph-1",
      type: "showing_request",
      propertyId: property.id,
      person: {
        firstName: "Pat",
        lastName: "Phone",
        phones: ["(415) 555-0171", "+1 212 555 0172", "415.555.0171"],
        address: { city: "Oakland" },
      },
      message: "Call me",
    };
    const first = await lead(p.token, body);
    expect(first).toMatchObject({ status: 202, data: { received: true, reviewId: expect.any(String) } });
    const reviewId = first.data.reviewId as string;
    const other = await lead(p.token, { person: { phones: ["(415) 555-0173"] } });
    expect(other.status).toBe(202);
    expect(await contactsOf(p)).toBe(0);
    expect(await events(p, "property.inquiry_received")).toBe(0);
    // The same event again answers the same, and keeps no second review.
    expect(await lead(p.token, body)).toEqual(first);

    const page1 = await reviews(p.token, "?limit=1");
    expect(page1.data.map((r: { id: string }) => r.id)).toEqual([other.data.reviewId]);
    expect(page1.pagination).toMatchObject({ hasMore: true, total: 2, limit: 1 });
    const page2 = await reviews(p.token, `?limit=1&cursor=${encodeURIComponent(page1.pagination.nextCursor)}`);
    expect(page2.data).toEqual([
      {
        id: reviewId,
        source: "ZILLOW",
        sourceEventId: "ph-1",
        type: "showing_request",
        person: { firstName: "Pat", lastName: "Phone", phones: ["(415) 555-0171", "+1 212 555 0172"], address: { city: "Oakland" } },
        message: "Call me",
        propertyId: property.id,
        createdAt: expect.any(String),
      },
    ]);
    expect(page2.pagination).toMatchObject({ hasMore: false, nextCursor: null });

    const email = uniqueEmail("accepted");
    const accepted = await accept(p.token, reviewId, email);
    expect(accepted.status).toBe(201);
    const answer = (await json(accepted)).data;
    expect(answer).toEqual({ contactId: expect.any(String), created: true, matchedBy: null, assignedTo: p.userId, conflicts: [] });
    expect(await getContact(p.token, answer.contactId)).toMatchObject({
      firstName: "Pat",
      lastName: "Phone",
      email,
      phone: "(415) 555-0171",
      secondaryPhone: "+1 212 555 0172",
      source: "ZILLOW",
      assignedTo: p.userId,
      address: { city: "Oakland" },
    });
    expect(await activities(p, answer.contactId)).toEqual([
      expect.objectContaining({
        type: "NOTE",
        description: "Call me",
        metadata: { leadType: "showing_request", source: "ZILLOW", sourceEventId: "ph-1", propertyId: property.id },
      }),
    ]);
    expect(await events(p, "contact.created")).toBe(1);
    expect(await events(p, "contact.assigned")).toBe(1);
    expect(await events(p, "property.inquiry_received")).toBe(1);
    // The source's repeat of the event now answers what the accept made; the review is gone.
    expect(await lead(p.token, body)).toEqual({ status: 201, data: answer, error: undefined });
    expect((await accept(p.token, reviewId, uniqueEmail("again"))).status).toBe(404);
    expect((await reviews(p.token)).data.map((r: { id: string }) => r.id)).toEqual([other.data.reviewId]);

    const dismissed = await call("DELETE", `/v1/leads/reviews/${other.data.reviewId}`, { token: p.token });
    expect(await json(dismissed)).toEqual({ success: true, message: "Lead dismissed", data: { id: other.data.reviewId, deleted: true } });
    expect((await call("DELETE", `/v1/leads/reviews/${other.data.reviewId}`, { token: p.token })).status).toBe(404);
    expect((await reviews(p.token)).data).toEqual([]);
    expect(await contactsOf(p)).toBe(1);
  });

  it("accepts into the contact the e-mail matches, by the intake's rule", async () => {
    const p = await createPrincipal();
    const client = await createContact(p.token, { phone: "+1 415 555 0161", source: "REFERRAL" });
    const kept = await lead(p.token, { source: "ZILLOW", person: { firstName: "Other", phones: ["+1 212 555 0162"] } });
    const res = await accept(p.token, kept.data.reviewId, client.email.toUpperCase());
    expect(await answered(res)).toEqual({
      status: 200,
      body: { success: true, data: { contactId: client.id, created: false, matchedBy: "email", assignedTo: null, conflicts: [] } },
    });
    expect(await getContact(p.token, client.id)).toMatchObject({ firstName: client.firstName, secondaryPhone: null, source: "REFERRAL" });
    expect((await activities(p, client.id))[0]!.metadata.suggested).toEqual({ phones: ["+1 212 555 0162"], source: "ZILLOW" });
    expect(await contactsOf(p)).toBe(1);
  });

  it("of concurrent accepts of one review one takes it in; of concurrent intakes of one event one review is kept", async () => {
    const p = await createPrincipal();
    const same = await Promise.all(
      Array.from({ length: 10 }, () => lead(p.token, { sourceEventId: "dup-1", person: { phones: ["+1 415 555 0155"] } })),
    );
    for (const a of same) expect(a).toEqual(same[0]);
    expect(same[0]!.status).toBe(202);
    expect((await reviews(p.token)).pagination.total).toBe(1);
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => accept(p.token, same[0]!.data.reviewId, uniqueEmail(`race${i}`))),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, ...Array(9).fill(404)]);
    expect(await contactsOf(p)).toBe(1);
    expect(await events(p, "contact.created")).toBe(1);
    expect(await count(p, "SELECT COUNT(*) AS n FROM contact_activities WHERE organization_id = ?", p.organizationId)).toBe(1);
    expect(await count(p, "SELECT COALESCE(SUM(turn), 0) AS n FROM lead_routing_cursors WHERE organization_id = ?", p.organizationId)).toBe(
      1,
    );

    // Phone-only leads racing the intake that makes the person a contact: each lands once, as a review (before the
    // contact) or on the contact (after it), never both; one contact.
    const q = await createPrincipal();
    const email = uniqueEmail("racer");
    const raced = await Promise.all([
      lead(q.token, { person: { emails: [email], phones: ["+1 415 555 0157"] } }),
      ...Array.from({ length: 10 }, (_, i) => lead(q.token, { sourceEventId: `racer-${i}`, person: { phones: ["(415) 555-0157"] } })),
    ]);
    expect(raced[0]!.status).toBe(201);
    for (const r of raced.slice(1)) expect([200, 202]).toContain(r.status);
    expect(await contactsOf(q)).toBe(1);
    const onContact = (await activities(q, raced[0]!.data.contactId)).length;
    expect(onContact - 1 + (await reviews(q.token)).pagination.total).toBe(10);
    expect(raced.slice(1).filter((r) => r.status === 200)).toHaveLength(onContact - 1);
  });

  it("keeps the reviews to the team: contacts:read lists them, contacts:write settles them, a form's key does neither", async () => {
    const p = await createPrincipal();
    const kept = await lead(p.token, { person: { phones: ["+1 415 555 0156"] } });
    const form = await createApiKey(p.token, ["leads:write"]);
    const reader = await createApiKey(p.token, ["contacts:read"]);
    expect((await call("GET", "/v1/leads/reviews", { token: form.key })).status).toBe(403);
    expect((await accept(form.key, kept.data.reviewId, uniqueEmail())).status).toBe(403);
    expect((await call("DELETE", `/v1/leads/reviews/${kept.data.reviewId}`, { token: form.key })).status).toBe(403);
    expect((await reviews(reader.key)).data).toHaveLength(1);
    expect((await accept(reader.key, kept.data.reviewId, uniqueEmail())).status).toBe(403);
    expect((await call("DELETE", `/v1/leads/reviews/${kept.data.reviewId}`, { token: reader.key })).status).toBe(403);
  });

  it("goes with the erasure of the contact with its number, is in their access export, and is kept 90 days", async () => {
    const p = await createPrincipal();
    const theirs = await lead(p.token, {
      person: { firstName: "Erin", lastName: "Erase", phones: ["(415) 555-0144"] },
      message: "Call Erin back",
    });
    const mentions = await lead(p.token, { person: { phones: ["+1 212 555 0145"] }, message: "My neighbour is at 415-555-0144" });
    // The team made the contact by hand, with the number the lead brought.
    const contact = await createContact(p.token, { firstName: "Erin", lastName: "Erase", phone: "+14155550144" });
    const access = await json(await call("GET", `/v1/contacts/${contact.id}/export`, { token: p.token }));
    expect(access.data.leadReviews).toEqual([expect.objectContaining({ id: theirs.data.reviewId })]);
    const erased = await call("DELETE", `/v1/contacts/${contact.id}?erase=true`, { token: p.token });
    expect(erased.status).toBe(200);
    expect((await json(erased)).data.erased).toMatchObject({ lead_reviews: 1, lead_review_texts: 1 });
    const left = (await reviews(p.token)).data;
    expect(left).toEqual([expect.objectContaining({ id: mentions.data.reviewId, message: "My neighbour is at [erased]" })]);
    expect(await whereFound(["4155550144", "415-555-0144", "call erin back"])).toEqual([]);

    // Retention: the cron's pass deletes what waited longer than 90 days, and nothing younger.
    const shard = createDb(await tenantDb(p.organizationId));
    expect(await pruneLeadReviews(shard, new Date(Date.now() + 89 * 86_400_000))).toBe(0);
    expect((await reviews(p.token)).data).toHaveLength(1);
    expect(await pruneLeadReviews(shard, new Date(Date.now() + 91 * 86_400_000))).toBeGreaterThanOrEqual(1);
    expect((await reviews(p.token)).data).toEqual([]);
  });
});

// Issue 40 (adversarial pass): the form key's answers were alike, but the X-D1-Bookmark counted the writes (+2 for a
// review, +3 for a match, +5 for a new contact) and a match answered 20 ms sooner. Its lead is now stored, answered,
// and taken in after the answer.
describe("a web form's lead is taken in after the answer", () => {
  const inbox = async (p: TestPrincipal) =>
    (
      await (
        await tenantDb(p.organizationId)
      )
        .prepare("SELECT id, attempts, last_error, due_at FROM lead_inbox WHERE organization_id = ?")
        .bind(p.organizationId)
        .all<{ id: string; attempts: number; last_error: string | null; due_at: string }>()
    ).results;
  const store = async (p: TestPrincipal, lead: Record<string, unknown>, dueAt = new Date(Date.now() - 1000)) => {
    const id = crypto.randomUUID();
    await (await tenantDb(p.organizationId))
      .prepare("INSERT INTO lead_inbox (id, organization_id, user_id, lead, received_at, attempts, due_at) VALUES (?, ?, ?, ?, ?, 0, ?)")
      .bind(id, p.organizationId, p.userId, JSON.stringify({ type: "general", ...lead }), new Date().toISOString(), dueAt.toISOString())
      .run();
    return id;
  };

  it("answers a form key alike in its headers too: any bookmark it gets is sealed, never the shard's write counter", async () => {
    const p = await createPrincipal();
    const form = await createApiKey(p.token, ["leads:write"]);
    const client = await createContact(p.token, { phone: "+1 415 555 0161" });
    const RAW = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;
    const seen: (string | null)[] = [];
    for (const person of [{ emails: [client.email] }, { emails: [uniqueEmail("new")] }, { phones: ["415 555 0162"] }]) {
      const res = await formLead(form.key, { source: "WEBSITE", person });
      expect(res.status).toBe(202);
      seen.push(res.headers.get("x-d1-bookmark"));
    }
    // Nor on any other answer it can get (the adversarial passes read the counter off a replay, a 422, a 403, a public
    // page and another organization's answers before and after a probe).
    const keyed = { source: "WEBSITE", person: { emails: [uniqueEmail("keyed")] } };
    const again = () =>
      settling.fetch("POST", "/v1/leads", {
        token: form.key,
        body: JSON.stringify(keyed),
        headers: { "content-type": "application/json", "idempotency-key": "bookmark-1" },
      });
    expect((await again()).status).toBe(202);
    const replayed = await again();
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
    const bad = await formLead(form.key, { source: "x" });
    expect(bad.status).toBe(422);
    const elsewhere = await call("GET", "/v1/contacts", { token: form.key });
    expect(elsewhere.status).toBe(403);
    const other = await call("GET", "/v1/contacts", { token: (await createPrincipal({ shard: 0 })).token });
    seen.push(...[replayed, bad, elsewhere, other].map((res) => res.headers.get("x-d1-bookmark")));
    for (const bookmark of seen) expect(bookmark ?? "").not.toMatch(RAW);
    expect(new Set(seen.filter(Boolean)).size).toBe(seen.filter(Boolean).length);
    // Each went in, and left the inbox.
    expect(await contactsOf(p)).toBe(3);
    expect((await reviews(p.token)).data).toHaveLength(1);
    expect(await inbox(p)).toEqual([]);
  });

  it("the cron takes in a lead the answer's deferred work left, exactly once however many drains race", async () => {
    const p = await createPrincipal();
    const email = uniqueEmail("left");
    await store(p, { source: "WEBSITE", person: { firstName: "Lee", emails: [email], phones: [] }, message: "Left behind" });
    const db = createDb(await tenantDb(p.organizationId));
    await Promise.all([drainLeadInbox(env, db), drainLeadInbox(env, db), drainLeadInbox(env, db)]);
    expect(await contactsOf(p)).toBe(1);
    expect(await events(p, "contact.created")).toBe(1);
    const [contact] = (await json(await call("GET", `/v1/contacts?email=${encodeURIComponent(email)}`, { token: p.token }))).data;
    expect(contact).toMatchObject({ firstName: "Lee", email, source: "WEBSITE" });
    expect((await activities(p, contact.id)).map((a) => a.description)).toEqual(["Left behind"]);
    expect(await inbox(p)).toEqual([]);
    // Not due yet (the answer's own work has it for a minute): left alone.
    await store(p, { source: "WEBSITE", person: { emails: [uniqueEmail("later")], phones: [] } }, new Date(Date.now() + 60_000));
    await drainLeadInbox(env, db);
    expect(await contactsOf(p)).toBe(1);
  });

  it("backs a failing lead off, stops after ten tries and deletes it after a week", async () => {
    const p = await createPrincipal();
    // A lead naming a property that is gone by the time it is taken in: its intake fails as the request's would.
    const id = await store(p, {
      source: "WEBSITE",
      propertyId: crypto.randomUUID(),
      person: { emails: [uniqueEmail("gone")], phones: [] },
    });
    const db = createDb(await tenantDb(p.organizationId));
    await drainLeadInbox(env, db);
    const [row] = await inbox(p);
    expect(row).toMatchObject({ id, attempts: 1, last_error: expect.stringContaining("property") });
    expect(Date.parse(row!.due_at)).toBeGreaterThan(Date.now() + 30_000);
    await (await tenantDb(p.organizationId))
      .prepare("UPDATE lead_inbox SET attempts = 10, due_at = ? WHERE id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), id)
      .run();
    await drainLeadInbox(env, db);
    expect((await inbox(p))[0]).toMatchObject({ attempts: 10 });
    await drainLeadInbox(env, db, new Date(Date.now() + 8 * 86_400_000));
    expect(await inbox(p)).toEqual([]);
    expect(await contactsOf(p)).toBe(0);
  });
});
