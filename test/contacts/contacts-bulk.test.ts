import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createContact, createContacts, expectCrmError, getContact, issuePairs, listPage, logActivity } from "../helpers/contacts";
import { createPrincipal } from "../helpers/factories";

const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";
const bulk = (token: string, body: unknown) => call("PATCH", "/v1/contacts/bulk", { token, body });

describe("PATCH /v1/contacts/bulk", () => {
  it("updates the caller's contacts and counts unknown and foreign ids as failed, in request order", async () => {
    const owner = await createPrincipal();
    const stranger = await createPrincipal();
    const [a, b, untouched] = await createContacts(owner.token, [
      { status: "ACTIVE" },
      { status: "ACTIVE", notes: "keep" },
      { status: "ACTIVE" },
    ]);
    const foreign = await createContact(stranger.token, { status: "ACTIVE" });

    const res = await bulk(owner.token, {
      contactIds: [a!.id, UNKNOWN_ID, foreign.id, b!.id],
      updates: { status: "INACTIVE", source: "OPEN_HOUSE" },
    });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({
      success: true,
      data: {
        updated: 2,
        failed: 2,
        results: [
          { id: a!.id, success: true },
          { id: UNKNOWN_ID, success: false },
          { id: foreign.id, success: false },
          { id: b!.id, success: true },
        ],
      },
    });
    for (const c of [a!, b!]) {
      const now = await getContact(owner.token, c.id);
      expect(now).toMatchObject({ status: "INACTIVE", source: "OPEN_HOUSE", firstName: c.firstName, email: c.email, notes: c.notes });
      expect(now.updatedAt >= c.updatedAt).toBe(true);
    }
    expect(await getContact(owner.token, untouched!.id)).toEqual(untouched);
    // The other organization's contact did not change.
    expect(await getContact(stranger.token, foreign.id)).toEqual(foreign);
  });

  it("answers all-failed for ids that are all foreign or unknown and writes nothing", async () => {
    const owner = await createPrincipal();
    const stranger = await createPrincipal();
    const foreign = await createContact(stranger.token);
    const res = await bulk(owner.token, { contactIds: [foreign.id, UNKNOWN_ID], updates: { status: "CONVERTED" } });
    expect(res.status).toBe(200);
    expect((await json(res)).data).toEqual({
      updated: 0,
      failed: 2,
      results: [
        { id: foreign.id, success: false },
        { id: UNKNOWN_ID, success: false },
      ],
    });
    expect(await getContact(stranger.token, foreign.id)).toEqual(foreign);
  });

  it("replaces the tags of every listed contact, and the tag counts follow", async () => {
    const { token } = await createPrincipal();
    const [a, b] = await createContacts(token, [{ tags: ["old", "shared"] }, { tags: ["other"] }]);
    const res = await bulk(token, { contactIds: [a!.id, b!.id], updates: { tags: ["new", "shared"] } });
    expect((await json(res)).data.updated).toBe(2);
    for (const c of [a!, b!]) expect([...(await getContact(token, c.id)).tags].sort()).toEqual(["new", "shared"]);
    expect((await listPage(token, "tags=new,shared")).pagination.total).toBe(2);
    expect((await listPage(token, "tags=old")).pagination.total).toBe(0);
    const counts = Object.fromEntries(
      (await json(await call("GET", "/v1/contacts/tags", { token }))).data.map((t: { name: string; count: number }) => [t.name, t.count]),
    );
    expect(counts.new).toBe(2);
    expect(counts.shared).toBe(2);
    expect(counts.old ?? 0).toBe(0);
    expect(counts.other ?? 0).toBe(0);
  });

  it("assigns contacts to a user of the organization and refuses a foreign user with 422, writing nothing", async () => {
    const owner = await createPrincipal();
    const colleague = await createPrincipal({ organizationId: owner.organizationId });
    const stranger = await createPrincipal();
    const [a, b] = await createContacts(owner.token, [{}, {}]);
    const bad = await bulk(owner.token, { contactIds: [a!.id, b!.id], updates: { assignedTo: stranger.userId } });
    expect(issuePairs(await expectCrmError(bad, 422, "validation_error"))).toEqual(["updates.assignedTo:invalid_reference"]);
    expect((await getContact(owner.token, a!.id)).assignedTo).toBeNull();
    const good = await json(await bulk(owner.token, { contactIds: [a!.id, b!.id], updates: { assignedTo: colleague.userId } }));
    expect(good.data.updated).toBe(2);
    expect((await listPage(owner.token, `assignedTo=${colleague.userId}`)).pagination.total).toBe(2);
  });

  it("rejects invalid updates with 422 and changes no contact", async () => {
    const { token } = await createPrincipal();
    const [a, b] = await createContacts(token, [{}, {}]);
    const res = await bulk(token, { contactIds: [a!.id, b!.id], updates: { status: "MAYBE", type: "CLIENT", leadScore: 300 } });
    const errors = await expectCrmError(res, 422, "validation_error");
    expect(issuePairs(errors)).toEqual(["updates.leadScore:too_big", "updates.status:invalid_enum_value"]);
    for (const c of [a!, b!]) expect(await getContact(token, c.id)).toEqual(c);
  });

  it("refuses updates.email (unique per contact) and unknown update fields with 422 unknown_field", async () => {
    const { token } = await createPrincipal();
    const a = await createContact(token);
    const res = await bulk(token, { contactIds: [a.id], updates: { email: "same@example.test", shoeSize: 42 } });
    expect(issuePairs(await expectCrmError(res, 422, "validation_error"))).toEqual([
      "updates.email:unknown_field",
      "updates.shoeSize:unknown_field",
    ]);
    expect(await getContact(token, a.id)).toEqual(a);
  });

  it.each([
    [
      "more than 100 ids",
      () => ({ contactIds: Array.from({ length: 101 }, () => crypto.randomUUID()), updates: { status: "ACTIVE" } }),
      "contactIds",
    ],
    ["no ids", () => ({ contactIds: [], updates: { status: "ACTIVE" } }), "contactIds"],
    ["no updates", () => ({ contactIds: [UNKNOWN_ID] }), "updates"],
    ["an unknown top-level field", () => ({ contactIds: [UNKNOWN_ID], updates: {}, dryRun: true }), "dryRun"],
  ])("answers 422 for %s", async (_, body, field) => {
    const { token } = await createPrincipal();
    const errors = await expectCrmError(await bulk(token, body()), 422, "validation_error");
    expect(errors.map((e) => e.field)).toEqual([field]);
  });

  it("updates the maximum of 100 contacts in one call", async () => {
    const { token } = await createPrincipal();
    const all = await Promise.all(Array.from({ length: 100 }, (_, i) => createContact(token, { lastName: `Bulk${i}` })));
    const res = await bulk(token, { contactIds: all.map((c) => c.id), updates: { status: "CONVERTED", tags: ["bulk"] } });
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.data.updated).toBe(100);
    expect(body.data.failed).toBe(0);
    expect((await listPage(token, "status=CONVERTED&tags=bulk")).pagination.total).toBe(100);
  });

  it("lists a full page of 100 contacts with include=activities", async () => {
    const { token } = await createPrincipal();
    const all = await Promise.all(Array.from({ length: 100 }, (_, i) => createContact(token, { lastName: `Page${i}` })));
    await logActivity(token, all[0]!.id, { type: "NOTE" });
    const page = await listPage(token, "limit=100&include=activities");
    expect(page.data).toHaveLength(100);
    expect(page.data.find((c) => c.id === all[0]!.id)!.activities).toHaveLength(1);
  });

  it("recomputes the automatic lead score of each contact it changes", async () => {
    const { token } = await createPrincipal();
    const [auto, manual] = await createContacts(token, [{ calculateLeadScore: true }, { leadScore: 33 }]);
    const res = await json(await bulk(token, { contactIds: [auto!.id, manual!.id], updates: { source: "REFERRAL" } }));
    expect(res.data.updated).toBe(2);
    expect((await getContact(token, auto!.id)).leadScore).toBe(auto!.leadScore! + 20);
    expect((await getContact(token, manual!.id)).leadScore).toBe(33);
  });
});
