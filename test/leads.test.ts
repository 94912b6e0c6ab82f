import { describe, expect, it } from "vitest";
import { createApiKey } from "./helpers/api-keys";
import { call, json } from "./helpers/client";
import { createContact, getContact, uniqueEmail } from "./helpers/contacts";
import { createPrincipal, tenantDb, type TestPrincipal } from "./helpers/factories";
import { createProperty } from "./helpers/properties";
import { openMailbox } from "./helpers/receiver";
import { subscribe } from "./helpers/webhooks";

const postLead = (token: string, body: Record<string, unknown>) => call("POST", "/v1/leads", { token, body });

/** A lead through the API: its status and answer. */
async function lead(token: string, body: Record<string, unknown>) {
  const res = await postLead(token, { source: "WEBSITE", ...body });
  const payload = await json(res);
  return { status: res.status, data: payload.data, error: payload.error };
}

const count = async (p: TestPrincipal, sql: string, ...binds: unknown[]) => (await (await tenantDb(p.organizationId)).prepare(sql).bind(...binds).first<{ n: number }>())!.n;
const contactsOf = (p: TestPrincipal) => count(p, "SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ?", p.organizationId);
const events = (p: TestPrincipal, type: string) => count(p, "SELECT COUNT(*) AS n FROM outbox_events WHERE organization_id = ? AND type = ?", p.organizationId, type);
const activities = async (p: TestPrincipal, contactId: string) => (await json(await call("GET", `/v1/contacts/${contactId}/activities?limit=100`, { token: p.token }))).data as Record<string, any>[];

async function settle(p: TestPrincipal, settings: Record<string, unknown>) {
  const res = await call("PATCH", "/v1/organization", { token: p.token, body: { settings } });
  expect(res.status, await res.clone().text()).toBe(200);
}

describe("lead intake (POST /v1/leads)", () => {
  it("creates a new person as a contact (201), with the source, the message as an activity and contact.created", async () => {
    const p = await createPrincipal();
    const email = uniqueEmail("new");
    const res = await lead(p.token, { source: "zillow", type: "inquiry", person: { firstName: "Priya", lastName: "Patel", emails: [email], phones: ["(415) 555-0100"] }, message: "Is Elm St still available?" });
    expect(res.status).toBe(201);
    expect(res.data).toEqual({ contactId: expect.any(String), created: true, matchedBy: null, assignedTo: p.userId, conflicts: [] });
    const contact = await getContact(p.token, res.data.contactId);
    expect(contact).toMatchObject({ firstName: "Priya", lastName: "Patel", email, source: "ZILLOW", assignedTo: p.userId });
    const [activity] = await activities(p, contact.id);
    expect(activity).toMatchObject({ type: "NOTE", description: "Is Elm St still available?", metadata: { leadType: "inquiry", source: "ZILLOW" } });
    expect(await events(p, "contact.created")).toBe(1);
    expect(await events(p, "contact.assigned")).toBe(1);
  });

  it("matches by e-mail in any case (200) and never blanks a field; the source stays the first one", async () => {
    const p = await createPrincipal();
    const email = uniqueEmail("Case");
    const existing = await createContact(p.token, { firstName: "Ana", lastName: "Lima", email, source: "REFERRAL", notes: "keep", address: { city: "Oakland", zipCode: "94601" } });
    const res = await lead(p.token, { person: { firstName: "", emails: [email.toUpperCase()], address: { street: "1 Elm St" } } });
    expect(res.status).toBe(200);
    expect(res.data).toEqual({ contactId: existing.id, created: false, matchedBy: "email", assignedTo: null, conflicts: [] });
    const after = await getContact(p.token, existing.id);
    expect(after).toMatchObject({ firstName: "Ana", lastName: "Lima", email, source: "REFERRAL", notes: "keep", address: { street: "1 Elm St", city: "Oakland", zipCode: "94601" } });
    expect(await contactsOf(p)).toBe(1);
    expect(await events(p, "contact.updated")).toBe(1);

    // A web form's lead knowing the e-mail may add to the record, never rename the client or move them.
    const hostile = await lead(p.token, { person: { firstName: "Mallory", lastName: "Evil", emails: [email], address: { city: "Elsewhere", state: "NV" } } });
    expect(hostile.status).toBe(200);
    expect(await getContact(p.token, existing.id)).toMatchObject({ firstName: "Ana", lastName: "Lima", address: { street: "1 Elm St", city: "Oakland", zipCode: "94601", state: "NV" } });
  });

  it("matches a differently formatted phone; a new number takes the free secondary phone, the rest go to the activity", async () => {
    const p = await createPrincipal();
    const existing = await createContact(p.token, { phone: "+1 415-555-0100" });
    const newEmail = uniqueEmail("extra");
    const res = await lead(p.token, { person: { emails: [newEmail], phones: ["(415) 555-0100", "415.555.0199", "+1 212 555 0142"] } });
    expect(res.status).toBe(200);
    expect(res.data).toMatchObject({ contactId: existing.id, created: false, matchedBy: "phone" });
    const after = await getContact(p.token, existing.id);
    expect(after).toMatchObject({ email: existing.email, phone: "+1 415-555-0100", secondaryPhone: "415.555.0199" });
    const [activity] = await activities(p, existing.id);
    expect(activity!.metadata).toMatchObject({ extraEmails: [newEmail], extraPhones: ["+1 212 555 0142"] });
    expect(await contactsOf(p)).toBe(1);
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

  it("refuses a phone-only lead that matches nobody (422 email_required) and a phone that is none", async () => {
    const p = await createPrincipal();
    const res = await lead(p.token, { person: { firstName: "Nobody", phones: ["(415) 555-0177"] } });
    expect(res.status).toBe(422);
    expect(res.error.code).toBe("email_required");
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
      Array.from({ length: 30 }, (_, i) => lead(p.token, { sourceEventId: `crowd-${i}`, person: { firstName: "Crowd", emails: [i % 2 ? email.toUpperCase() : email], phones: ["+1 415 555 0150"] } })),
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

    await settle(p, { leadRouting: { mode: "zip", zipRules: [{ zipPrefix: "941", userId: a }, { zipPrefix: "9410", userId: b }] } });
    const property = await createProperty(p.token, { address: { street: "1 Market St", city: "San Francisco", state: "CA", zipCode: "94105" } });
    expect((await lead(p.token, { propertyId: property.id, person: { emails: [uniqueEmail("z")], address: { zipCode: "94199" } } })).data.assignedTo).toBe(b);
    expect((await lead(p.token, { person: { emails: [uniqueEmail("z")], address: { zipCode: "94199" } } })).data.assignedTo).toBe(a);
    // No rule covers it: round robin takes its next turn.
    expect((await lead(p.token, { person: { emails: [uniqueEmail("z")], address: { zipCode: "10001" } } })).data.assignedTo).toBe(a);

    // Nobody accepts leads: the contact is left unassigned.
    for (const id of [a, b]) expect((await call("PATCH", `/v1/users/${id}`, { token: p.token, body: { acceptsLeads: false } })).status).toBe(200);
    const none = await lead(p.token, { person: { emails: [uniqueEmail("none")] } });
    expect(none).toMatchObject({ status: 201, data: { assignedTo: null } });
  });

  it("delivers property.inquiry_received for a property named by id or by its exact address", async () => {
    const p = await createPrincipal();
    const box = await openMailbox();
    await subscribe(p, { url: box.url, events: ["property.inquiry_received"] });
    const property = await createProperty(p.token, { address: { street: "12 Elm St", city: "Springfield", state: "IL", zipCode: "62704" } });
    const email = uniqueEmail("inq");
    const firstBody = { type: "showing_request", sourceEventId: "form-1", propertyId: property.id, person: { emails: [email] }, message: "Can I see it Saturday?" };
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
    for (const payload of payloads) expect(payload).toMatchObject({ event: "property.inquiry_received", data: { object: { id: property.id }, signal: { type: "INQUIRY", contactId: first.data.contactId } } });
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
    const res = await postLead(form.key, { source: "WEBSITE", person: { emails: [uniqueEmail("form")] } });
    expect(res.status).toBe(201);
    // The form's key reaches nothing else.
    expect((await call("GET", "/v1/contacts", { token: form.key })).status).toBe(403);
  });
});
