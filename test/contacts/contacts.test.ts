import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import {
  createContact,
  expectCrmError,
  getContact,
  issuePairs,
  listPage,
  logActivity,
  tick,
  uniqueEmail,
  updateContact,
} from "../helpers/contacts";
import { newRecordId } from "../../src/lib/ids";
import { createDeal } from "../helpers/deals";
import { createPrincipal } from "../helpers/factories";
import { createProperty } from "../helpers/properties";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";

const FULL = {
  phone: "+1 555 010 0000",
  secondaryPhone: "555-010-0001",
  address: { street: "1 Main St", city: "Springfield", state: "IL", zipCode: "62701", country: "US" },
  type: "CLIENT",
  status: "INACTIVE",
  source: "WEBSITE",
  tags: ["vip", "buyer"],
  notes: "Met at open house",
  preferences: {
    communicationMethod: "EMAIL",
    propertyTypes: ["CONDO"],
    priceRange: { min: 100000, max: 300000 },
    locations: ["Downtown"],
  },
};

/** A version-7 UUID's milliseconds (RFC 9562: its first 48 bits). */
const msOfV7 = (id: string) => parseInt(id.replaceAll("-", "").slice(0, 12), 16);
const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("record ids (issue 33: an import appends to its indexes rather than rewriting pages all over them)", () => {
  it("gives contacts, deals and properties time-ordered UUIDs (version 7) of the moment they were created", async () => {
    const { token } = await createPrincipal();
    const contact = await createContact(token);
    const deal = await createDeal(token, { contactId: contact.id });
    const property = await createProperty(token);
    for (const record of [contact, deal, property] as { id: string; createdAt: string }[]) {
      expect(record.id).toMatch(V7);
      expect(msOfV7(record.id)).toBe(Date.parse(record.createdAt));
    }
    expect((await getContact(token, contact.id)).id).toBe(contact.id);
    // Minted a millisecond apart, whatever their random bits: the later sorts after.
    const ids = Array.from({ length: 200 }, (_, i) => newRecordId(1_790_000_000_000 + i));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(Array.from({ length: 1_000 }, () => newRecordId(1_790_000_000_000))).size).toBe(1_000);
  });
});

describe("POST /v1/contacts", () => {
  it("creates a contact with the defaults: 201, type LEAD, status ACTIVE, no tags, createdAt = updatedAt", async () => {
    const { token, organizationId } = await createPrincipal();
    const email = uniqueEmail();
    const res = await call("POST", "/v1/contacts", { token, body: { firstName: "Ada", lastName: "Lovelace", email } });
    expect(res.status).toBe(201);
    const body = await json(res);
    expect(body).toEqual({
      success: true,
      data: {
        id: expect.any(String),
        organizationId,
        firstName: "Ada",
        lastName: "Lovelace",
        email,
        phone: null,
        secondaryPhone: null,
        address: null,
        type: "LEAD",
        status: "ACTIVE",
        source: null,
        leadScore: null,
        tags: [],
        notes: null,
        preferences: null,
        assignedTo: null,
        createdAt: expect.stringMatching(ISO),
        updatedAt: expect.stringMatching(ISO),
        lastContactedAt: null,
        customFields: {},
      },
    });
    expect(body.data.updatedAt).toBe(body.data.createdAt);
    expect(await getContact(token, body.data.id)).toEqual(body.data);
  });

  it("stores every optional field and reads it back", async () => {
    const { token, userId } = await createPrincipal();
    const created = await createContact(token, { ...FULL, assignedTo: userId });
    expect(created).toMatchObject({ ...FULL, assignedTo: userId });
    expect(await getContact(token, created.id)).toEqual(created);
  });

  it("ignores read-only fields on create", async () => {
    const { token, organizationId } = await createPrincipal();
    const other = await createPrincipal();
    const created = await createContact(token, {
      id: "my-own-id",
      organizationId: other.organizationId,
      createdAt: "2001-01-01T00:00:00.000Z",
      updatedAt: "2001-01-01T00:00:00.000Z",
      lastContactedAt: "2001-01-01T00:00:00.000Z",
    });
    expect(created.id).not.toBe("my-own-id");
    expect(created.organizationId).toBe(organizationId);
    expect(created.createdAt.startsWith("2001")).toBe(false);
    expect(created.lastContactedAt).toBeNull();
    expect((await call("GET", `/v1/contacts/${created.id}`, { token: other.token })).status).toBe(404);
  });

  it("answers 409 conflict_error for an e-mail already used in the organization, in any case", async () => {
    const { token } = await createPrincipal();
    const email = uniqueEmail("Dup");
    await createContact(token, { email });
    for (const again of [email, email.toUpperCase(), email.toLowerCase()]) {
      const res = await call("POST", "/v1/contacts", { token, body: { firstName: "B", lastName: "B", email: again } });
      await expectCrmError(res, 409, "conflict_error");
    }
    const { pagination } = await listPage(token);
    expect(pagination.total).toBe(1);
  });

  it("accepts the same e-mail in another organization", async () => {
    const a = await createPrincipal();
    const b = await createPrincipal();
    const email = uniqueEmail();
    await createContact(a.token, { email });
    const other = await createContact(b.token, { email });
    expect(other.email).toBe(email);
  });

  it("answers 422 validation_error listing every problem of the body", async () => {
    const { token } = await createPrincipal();
    const res = await call("POST", "/v1/contacts", {
      token,
      body: {
        lastName: "X",
        email: "not-an-email",
        type: "PROSPECT",
        status: "HAPPY",
        leadScore: 101,
        address: { street: "1 Main", planet: "Mars" },
        preferences: { priceRange: { min: 500000, max: 100000 } },
        favouriteColor: "blue",
      },
    });
    const errors = await expectCrmError(res, 422, "validation_error");
    expect(issuePairs(errors)).toEqual(
      issuePairs([
        { field: "firstName", code: "required" },
        { field: "email", code: "invalid_email" },
        { field: "type", code: "invalid_enum_value" },
        { field: "status", code: "invalid_enum_value" },
        { field: "leadScore", code: "too_big" },
        { field: "address.planet", code: "unknown_field" },
        { field: "preferences.priceRange.min", code: "invalid_price_range" },
        { field: "favouriteColor", code: "unknown_field" },
      ]),
    );
    expect((await listPage(token)).pagination.total).toBe(0);
  });

  it.each([
    ["missing names and e-mail", {}, ["email:required", "firstName:required", "lastName:required"]],
    ["a negative leadScore", { leadScore: -1 }, ["leadScore:too_small"]],
    ["a fractional leadScore", { leadScore: 50.5 }, ["leadScore:invalid_type"]],
    ["an unknown property type", { preferences: { propertyTypes: ["CASTLE"] } }, ["preferences.propertyTypes.0:invalid_enum_value"]],
    ["an address that is not an object", { address: "1 Main St" }, ["address:invalid_type"]],
    [
      "a price range unknown key",
      { preferences: { priceRange: { min: 1, currency: "USD" } } },
      ["preferences.priceRange.currency:unknown_field"],
    ],
    ["tags that are not strings", { tags: [1] }, ["tags.0:invalid_type"]],
  ])("answers 422 for %s", async (_, extra, pairs) => {
    const { token } = await createPrincipal();
    const body = Object.keys(extra).length === 0 ? {} : { firstName: "A", lastName: "B", email: uniqueEmail(), ...extra };
    const errors = await expectCrmError(await call("POST", "/v1/contacts", { token, body }), 422, "validation_error");
    expect(issuePairs(errors)).toEqual([...pairs].sort());
  });

  it("accepts a price range with min equal to max", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, { preferences: { priceRange: { min: 250000, max: 250000 } } });
    expect(c.preferences).toEqual({ priceRange: { min: 250000, max: 250000 } });
  });

  it("answers 422 invalid_reference when assignedTo is not a user of the organization", async () => {
    const { token } = await createPrincipal();
    const stranger = await createPrincipal();
    for (const assignedTo of [UNKNOWN_ID, stranger.userId]) {
      const res = await call("POST", "/v1/contacts", { token, body: { firstName: "A", lastName: "B", email: uniqueEmail(), assignedTo } });
      const errors = await expectCrmError(res, 422, "validation_error");
      expect(issuePairs(errors)).toEqual(["assignedTo:invalid_reference"]);
    }
    expect((await listPage(token)).pagination.total).toBe(0);
  });

  it("accepts assignedTo naming another user of the same organization", async () => {
    const owner = await createPrincipal();
    const colleague = await createPrincipal({ organizationId: owner.organizationId });
    const c = await createContact(owner.token, { assignedTo: colleague.userId });
    expect(c.assignedTo).toBe(colleague.userId);
  });

  it("lists a bad assignedTo together with the schema problems of the same body", async () => {
    const { token } = await createPrincipal();
    const res = await call("POST", "/v1/contacts", {
      token,
      body: { firstName: "A", lastName: "B", email: "nope", assignedTo: UNKNOWN_ID },
    });
    const errors = await expectCrmError(res, 422, "validation_error");
    expect(issuePairs(errors)).toEqual(["assignedTo:invalid_reference", "email:invalid_email"]);
  });
});

describe("GET /v1/contacts/{id}", () => {
  it("answers 404 not_found_error for an unknown id and for another organization's contact", async () => {
    const owner = await createPrincipal();
    const stranger = await createPrincipal();
    const c = await createContact(owner.token);
    await expectCrmError(await call("GET", `/v1/contacts/${UNKNOWN_ID}`, { token: owner.token }), 404, "not_found_error");
    await expectCrmError(await call("GET", `/v1/contacts/${c.id}`, { token: stranger.token }), 404, "not_found_error");
    const list = await listPage(stranger.token);
    expect(list.data).toEqual([]);
    expect(list.pagination.total).toBe(0);
  });

  it("attaches activities, deals and communications on request and rejects an unknown include", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token);
    await logActivity(token, c.id, { type: "NOTE", description: "first" });
    const read = await getContact(token, c.id, "?include=activities,deals,communications");
    expect(read.activities).toHaveLength(1);
    expect(read.activities[0]).toMatchObject({ type: "NOTE", description: "first" });
    expect(read.deals).toEqual([]);
    expect(read.communications).toEqual([]);
    const plain = await getContact(token, c.id);
    expect(plain).not.toHaveProperty("activities");
    const errors = await expectCrmError(await call("GET", `/v1/contacts/${c.id}?include=friends`, { token }), 422, "validation_error");
    expect(errors[0]!.field).toMatch(/^include/);
  });
});

describe("PUT /v1/contacts/{id}", () => {
  it("changes only the given fields and moves updatedAt", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, FULL);
    await tick();
    const updated = await updateContact(token, c.id, { firstName: "Grace", status: "CONVERTED" });
    expect(updated).toEqual({ ...c, firstName: "Grace", status: "CONVERTED", updatedAt: expect.stringMatching(ISO) });
    expect(updated.updatedAt > c.updatedAt).toBe(true);
    expect(updated.createdAt).toBe(c.createdAt);
    expect(await getContact(token, c.id)).toEqual(updated);
  });

  it("clears optional fields given as null", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, { ...FULL, leadScore: 40 });
    const cleared = await updateContact(token, c.id, {
      phone: null,
      secondaryPhone: null,
      address: null,
      source: null,
      notes: null,
      preferences: null,
      leadScore: null,
    });
    expect(cleared).toMatchObject({
      phone: null,
      secondaryPhone: null,
      address: null,
      source: null,
      notes: null,
      preferences: null,
      leadScore: null,
    });
    expect(cleared.firstName).toBe(c.firstName);
    expect(cleared.tags).toEqual(c.tags);
    expect(await getContact(token, c.id)).toEqual(cleared);
  });

  it("refuses null for a required field", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token);
    const errors = await expectCrmError(
      await call("PUT", `/v1/contacts/${c.id}`, { token, body: { firstName: null, email: null } }),
      422,
      "validation_error",
    );
    expect(issuePairs(errors).map((p) => p.split(":")[0])).toEqual(["email", "firstName"]);
  });

  it("ignores read-only fields, so a fetched contact can be sent back as is", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, FULL);
    const echoed = {
      ...c,
      id: "other",
      organizationId: "other-org",
      createdAt: "2001-01-01T00:00:00.000Z",
      updatedAt: "2001-01-01T00:00:00.000Z",
      lastContactedAt: "2001-01-01T00:00:00.000Z",
    };
    const res = await call("PUT", `/v1/contacts/${c.id}`, { token, body: echoed });
    expect(res.status).toBe(200);
    expect((await json(res)).data).toEqual(c);
    expect(await getContact(token, c.id)).toEqual(c);
  });

  it("rejects unknown fields with 422 unknown_field and changes nothing", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token);
    const errors = await expectCrmError(
      await call("PUT", `/v1/contacts/${c.id}`, { token, body: { firstName: "New", nickname: "Z" } }),
      422,
      "validation_error",
    );
    expect(issuePairs(errors)).toEqual(["nickname:unknown_field"]);
    expect((await getContact(token, c.id)).firstName).toBe(c.firstName);
  });

  it("answers 409 when changing to an e-mail another contact of the organization has, and allows a case change of its own", async () => {
    const { token } = await createPrincipal();
    const a = await createContact(token);
    const b = await createContact(token);
    await expectCrmError(
      await call("PUT", `/v1/contacts/${b.id}`, { token, body: { email: a.email.toUpperCase() } }),
      409,
      "conflict_error",
    );
    expect((await getContact(token, b.id)).email).toBe(b.email);
    const own = await updateContact(token, b.id, { email: b.email.toUpperCase() });
    expect(own.email).toBe(b.email.toUpperCase());
  });

  it("allows an e-mail that only another organization uses", async () => {
    const a = await createPrincipal();
    const b = await createPrincipal();
    const theirs = await createContact(b.token);
    const mine = await createContact(a.token);
    expect((await updateContact(a.token, mine.id, { email: theirs.email })).email).toBe(theirs.email);
  });

  it("answers 422 invalid_reference for an assignee from another organization", async () => {
    const { token } = await createPrincipal();
    const stranger = await createPrincipal();
    const c = await createContact(token);
    const errors = await expectCrmError(
      await call("PUT", `/v1/contacts/${c.id}`, { token, body: { assignedTo: stranger.userId } }),
      422,
      "validation_error",
    );
    expect(issuePairs(errors)).toEqual(["assignedTo:invalid_reference"]);
  });

  it("answers 404 for an unknown id and for another organization's contact, which stays unchanged", async () => {
    const owner = await createPrincipal();
    const stranger = await createPrincipal();
    const c = await createContact(owner.token);
    await expectCrmError(
      await call("PUT", `/v1/contacts/${UNKNOWN_ID}`, { token: owner.token, body: { notes: "x" } }),
      404,
      "not_found_error",
    );
    await expectCrmError(
      await call("PUT", `/v1/contacts/${c.id}`, { token: stranger.token, body: { notes: "x" } }),
      404,
      "not_found_error",
    );
    expect(await getContact(owner.token, c.id)).toEqual(c);
  });
});

describe("DELETE /v1/contacts/{id}", () => {
  it("answers success with a message, then the contact is gone (404) and its e-mail is free again", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, { tags: ["gone"] });
    const res = await call("DELETE", `/v1/contacts/${c.id}`, { token });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ success: true, message: expect.any(String), data: { id: c.id, deleted: true } });
    await expectCrmError(await call("GET", `/v1/contacts/${c.id}`, { token }), 404, "not_found_error");
    await expectCrmError(await call("DELETE", `/v1/contacts/${c.id}`, { token }), 404, "not_found_error");
    await expectCrmError(await call("GET", `/v1/contacts/${c.id}/activities`, { token }), 404, "not_found_error");
    expect((await listPage(token)).pagination.total).toBe(0);
    await createContact(token, { email: c.email });
  });

  it("answers 404 for another organization's contact and leaves it in place", async () => {
    const owner = await createPrincipal();
    const stranger = await createPrincipal();
    const c = await createContact(owner.token);
    await expectCrmError(await call("DELETE", `/v1/contacts/${c.id}`, { token: stranger.token }), 404, "not_found_error");
    expect(await getContact(owner.token, c.id)).toEqual(c);
  });
});

describe("contact activities", () => {
  it("logs activities (201) and lists them newest first", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token);
    const first = await logActivity(token, c.id, { type: "NOTE", description: "first", metadata: { channel: "desk" } });
    expect(first).toEqual({
      id: expect.any(String),
      type: "NOTE",
      description: "first",
      createdAt: expect.stringMatching(ISO),
      scheduledAt: null,
      metadata: { channel: "desk" },
    });
    await tick();
    const second = await logActivity(token, c.id, { type: "EMAIL_SENT", description: "second" });
    await tick();
    const third = await logActivity(token, c.id, { type: "TASK" });
    const res = await call("GET", `/v1/contacts/${c.id}/activities`, { token });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.success).toBe(true);
    expect(body.data.map((a: { id: string }) => a.id)).toEqual([third.id, second.id, first.id]);
    expect(body.data[2]).toEqual(first);
  });

  it("moves lastContactedAt for a touch that happened, not for a meeting scheduled later or a note", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token);
    await logActivity(token, c.id, { type: "NOTE", description: "just a note" });
    expect((await getContact(token, c.id)).lastContactedAt).toBeNull();

    const future = new Date(Date.now() + 7 * 86_400_000).toISOString();
    const meeting = await logActivity(token, c.id, { type: "MEETING", scheduledAt: future });
    expect(meeting.scheduledAt).toBe(future);
    expect((await getContact(token, c.id)).lastContactedAt).toBeNull();

    // A call logged after the fact counts from when it happened.
    const anHourAgo = new Date(Date.now() - 3_600_000).toISOString();
    await logActivity(token, c.id, { type: "PHONE_CALL", description: "called", scheduledAt: anHourAgo });
    expect((await getContact(token, c.id)).lastContactedAt).toBe(anHourAgo);
    // An older touch logged later does not move it back.
    await logActivity(token, c.id, { type: "EMAIL_SENT", scheduledAt: new Date(Date.now() - 7_200_000).toISOString() });
    expect((await getContact(token, c.id)).lastContactedAt).toBe(anHourAgo);
    const before = new Date().toISOString();
    await tick();
    await logActivity(token, c.id, { type: "SMS_SENT" });
    expect((await getContact(token, c.id)).lastContactedAt! >= before).toBe(true);
  });

  it("validates type, scheduledAt and unknown fields with 422 and stores nothing", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token);
    const errors = await expectCrmError(
      await call("POST", `/v1/contacts/${c.id}/activities`, {
        token,
        body: { type: "CARRIER_PIGEON", scheduledAt: "next tuesday", mood: "good" },
      }),
      422,
      "validation_error",
    );
    expect(issuePairs(errors).map((p) => p.split(":")[0])).toEqual(["mood", "scheduledAt", "type"]);
    expect(errors.find((e) => e.field === "mood")!.code).toBe("unknown_field");
    const missing = await expectCrmError(
      await call("POST", `/v1/contacts/${c.id}/activities`, { token, body: { description: "no type" } }),
      422,
      "validation_error",
    );
    expect(issuePairs(missing)).toEqual(["type:required"]);
    const list = await json(await call("GET", `/v1/contacts/${c.id}/activities`, { token }));
    expect(list.data).toEqual([]);
  });

  it("answers 404 for activities of an unknown contact", async () => {
    const { token } = await createPrincipal();
    await expectCrmError(await call("GET", `/v1/contacts/${UNKNOWN_ID}/activities`, { token }), 404, "not_found_error");
    await expectCrmError(
      await call("POST", `/v1/contacts/${UNKNOWN_ID}/activities`, { token, body: { type: "NOTE" } }),
      404,
      "not_found_error",
    );
  });
});

describe("contact tags", () => {
  it("adds tags without duplicates and keeps the existing ones", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, { tags: ["buyer", "vip"] });
    const res = await call("POST", `/v1/contacts/${c.id}/tags`, { token, body: { tags: ["vip", "hot", "hot", " investor "] } });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.success).toBe(true);
    expect([...body.data.tags].sort()).toEqual(["buyer", "hot", "investor", "vip"]);
    expect([...(await getContact(token, c.id)).tags].sort()).toEqual(["buyer", "hot", "investor", "vip"]);
    const again = await json(await call("POST", `/v1/contacts/${c.id}/tags`, { token, body: { tags: ["vip"] } }));
    expect([...again.data.tags].sort()).toEqual(["buyer", "hot", "investor", "vip"]);
  });

  it("validates the tags body and answers 404 for an unknown contact", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token);
    for (const body of [{ tags: [] }, { tags: "vip" }, {}, { tags: ["ok"], extra: 1 }]) {
      await expectCrmError(await call("POST", `/v1/contacts/${c.id}/tags`, { token, body }), 422, "validation_error");
    }
    await expectCrmError(await call("POST", `/v1/contacts/${UNKNOWN_ID}/tags`, { token, body: { tags: ["vip"] } }), 404, "not_found_error");
  });

  it("GET /v1/contacts/tags lists the organization's tags with a hex color and per-tag counts", async () => {
    const { token } = await createPrincipal();
    const stranger = await createPrincipal();
    await createContact(stranger.token, { tags: ["vip", "foreign-only"] });
    const a = await createContact(token, { tags: ["vip", "buyer"] });
    await createContact(token, { tags: ["vip"] });
    const c = await createContact(token);
    await call("POST", `/v1/contacts/${c.id}/tags`, { token, body: { tags: ["vip", "seller"] } });

    const res = await call("GET", "/v1/contacts/tags", { token });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.success).toBe(true);
    const byName = Object.fromEntries(body.data.map((t: { name: string }) => [t.name, t]));
    expect(Object.keys(byName).sort()).toEqual(["buyer", "seller", "vip"]);
    expect(byName.vip.count).toBe(3);
    expect(byName.buyer.count).toBe(1);
    expect(byName.seller.count).toBe(1);
    for (const t of body.data)
      expect(t).toEqual({ name: expect.any(String), color: expect.stringMatching(/^#[0-9a-fA-F]{6}$/), count: expect.any(Number) });
    expect(body.data[0].name).toBe("vip");

    // Counts follow the contacts: deleting one and replacing another's tags lowers them.
    await call("DELETE", `/v1/contacts/${a.id}`, { token });
    await updateContact(token, c.id, { tags: ["seller"] });
    const after = await json(await call("GET", "/v1/contacts/tags", { token }));
    const counts = Object.fromEntries(after.data.map((t: { name: string; count: number }) => [t.name, t.count]));
    expect(counts.vip).toBe(1);
    expect(counts.seller).toBe(1);
    expect(counts.buyer ?? 0).toBe(0);

    const theirs = await json(await call("GET", "/v1/contacts/tags", { token: stranger.token }));
    expect(theirs.data.map((t: { name: string; count: number }) => [t.name, t.count]).sort()).toEqual([
      ["foreign-only", 1],
      ["vip", 1],
    ]);
  });

  it("gives a tag the same color in every organization", async () => {
    const a = await createPrincipal();
    const b = await createPrincipal();
    await createContact(a.token, { tags: ["hot"] });
    await createContact(b.token, { tags: ["hot"] });
    const colorA = (await json(await call("GET", "/v1/contacts/tags", { token: a.token }))).data[0].color;
    const colorB = (await json(await call("GET", "/v1/contacts/tags", { token: b.token }))).data[0].color;
    expect(colorA).toBe(colorB);
  });

  it("stores a contact with the maximum of 50 tags", async () => {
    const { token } = await createPrincipal();
    const tags = Array.from({ length: 50 }, (_, i) => `tag-${i}`);
    const c = await createContact(token, { tags });
    expect(c.tags).toEqual(tags);
    const list = await json(await call("GET", "/v1/contacts/tags?limit=100", { token }));
    expect(list.data).toHaveLength(50);
    expect(list.pagination).toEqual({ hasMore: false, nextCursor: null, total: 50, limit: 100 });
  });
});
