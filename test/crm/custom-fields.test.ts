import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { shardDatabase } from "../../src/shards/bindings";
import { startMove, stepMove } from "../../src/shards/move";
import { matchesFilters, WebhookFiltersSchema } from "../../src/webhooks/filters";
import { call, json } from "../helpers/client";
import { createContact, expectCrmError, getContact, issuePairs, listAll, listPage, updateContact } from "../helpers/contacts";
import { createDeal } from "../helpers/deals";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { createProperty, listProperties } from "../helpers/properties";

/**
 * Custom fields (issue 33 part 6): definitions per object, values in `customFields` checked by type, list filters and
 * sorts on them with keyset pages and exact totals, in event payloads and webhook filters, and what a definition's
 * delete does to its values.
 */
async function define(owner: TestPrincipal, body: Record<string, unknown>) {
  const res = await call("POST", "/v1/custom-fields", { token: owner.token, body });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(201);
  return payload.data as { id: string; key: string };
}

/** The five types on contacts. */
async function defineAll(owner: TestPrincipal, object = "contact") {
  return {
    budget: await define(owner, { object, key: "budget", label: "Budget", type: "number" }),
    moveIn: await define(owner, { object, key: "move_in", label: "Move-in date", type: "date" }),
    approved: await define(owner, { object, key: "pre_approved", label: "Pre-approved", type: "boolean" }),
    side: await define(owner, { object, key: "side", label: "Side", type: "select", options: ["buyer", "seller"] }),
    lender: await define(owner, { object, key: "lender", label: "Lender", type: "text" }),
  };
}

const ids = (list: { id: string }[]) => list.map((c) => c.id);

describe("custom field definitions", () => {
  it("creates, lists by object, refuses a second key (409) and bad definitions (422), deletes", async () => {
    const owner = await createPrincipal();
    const budget = await define(owner, { object: "contact", key: "budget", label: "Budget", type: "number" });
    await define(owner, { object: "deal", key: "budget", label: "Deal budget", type: "number" });
    await expectCrmError(
      await call("POST", "/v1/custom-fields", {
        token: owner.token,
        body: { object: "contact", key: "budget", label: "Again", type: "text" },
      }),
      409,
      "conflict_error",
    );
    const bad = await expectCrmError(
      await call("POST", "/v1/custom-fields", { token: owner.token, body: { object: "lead", key: "Bad Key", label: "", type: "select" } }),
      422,
      "validation_error",
    );
    expect(issuePairs(bad)).toEqual(expect.arrayContaining(["key:invalid_key", "object:invalid_enum_value", "label:too_small"]));
    const noOptions = await expectCrmError(
      await call("POST", "/v1/custom-fields", {
        token: owner.token,
        body: { object: "contact", key: "side", label: "Side", type: "select" },
      }),
      422,
      "validation_error",
    );
    expect(issuePairs(noOptions)).toEqual(["options:required"]);
    const dupOptions = await expectCrmError(
      await call("POST", "/v1/custom-fields", {
        token: owner.token,
        body: { object: "contact", key: "side", label: "Side", type: "select", options: ["a", "a"] },
      }),
      422,
      "validation_error",
    );
    expect(issuePairs(dupOptions)).toEqual(["options:duplicate_option"]);

    const all = await json(await call("GET", "/v1/custom-fields", { token: owner.token }));
    expect(all.pagination.total).toBe(2);
    const contacts = await json(await call("GET", "/v1/custom-fields?object=contact", { token: owner.token }));
    expect(contacts.data).toEqual([
      { id: budget.id, object: "contact", key: "budget", label: "Budget", type: "number", options: null, createdAt: expect.any(String) },
    ]);

    expect((await call("DELETE", `/v1/custom-fields/${budget.id}`, { token: owner.token })).status).toBe(204);
    expect((await call("DELETE", `/v1/custom-fields/${budget.id}`, { token: owner.token })).status).toBe(404);
    expect((await json(await call("GET", "/v1/custom-fields?object=contact", { token: owner.token }))).pagination.total).toBe(0);
  });

  it("keeps each organization's definitions to itself", async () => {
    const [a, b] = [await createPrincipal(), await createPrincipal()];
    const field = await define(a, { object: "contact", key: "budget", label: "Budget", type: "number" });
    expect((await json(await call("GET", "/v1/custom-fields", { token: b.token }))).data).toEqual([]);
    expect((await call("DELETE", `/v1/custom-fields/${field.id}`, { token: b.token })).status).toBe(404);
    // B has no such field: its contacts cannot carry it, nor filter on it.
    const res = await call("POST", "/v1/contacts", {
      token: b.token,
      body: { firstName: "B", lastName: "Org", email: `b.${crypto.randomUUID()}@x.test`, customFields: { budget: 1 } },
    });
    expect(issuePairs(await expectCrmError(res, 422, "validation_error"))).toEqual(["customFields.budget:unknown_field"]);
    // B may define the same key for itself.
    await define(b, { object: "contact", key: "budget", label: "Budget", type: "text" });
  });

  it("needs custom-fields:manage to create or delete (owners and admins); agents read them", async () => {
    const owner = await createPrincipal();
    const agent = await createPrincipal({ organizationId: owner.organizationId, role: "agent" });
    const admin = await createPrincipal({ organizationId: owner.organizationId, role: "admin" });
    const field = await define(owner, { object: "contact", key: "budget", label: "Budget", type: "number" });
    const denied = await call("POST", "/v1/custom-fields", {
      token: agent.token,
      body: { object: "contact", key: "other", label: "Other", type: "text" },
    });
    expect(denied.status).toBe(403);
    expect((await call("DELETE", `/v1/custom-fields/${field.id}`, { token: agent.token })).status).toBe(403);
    expect((await json(await call("GET", "/v1/custom-fields", { token: agent.token }))).data).toHaveLength(1);
    await define(admin, { object: "contact", key: "other", label: "Other", type: "text" });
  });
});

describe("customFields on contacts, deals and properties", () => {
  it("takes a value of every type, names each bad one in one 422, and removes a value sent as null", async () => {
    const owner = await createPrincipal();
    await defineAll(owner);
    const good = { budget: 450000.5, move_in: "2027-03-01", pre_approved: true, side: "buyer", lender: "First Bank" };
    const contact = await createContact(owner.token, { customFields: good });
    expect(contact.customFields).toEqual(good);
    expect((await getContact(owner.token, contact.id)).customFields).toEqual(good);

    const bad = { budget: "lots", move_in: "2027-02-30", pre_approved: "yes", side: "landlord", lender: 7, nope: 1 };
    const res = await call("PUT", `/v1/contacts/${contact.id}`, { token: owner.token, body: { customFields: bad } });
    expect(issuePairs(await expectCrmError(res, 422, "validation_error"))).toEqual([
      "customFields.budget:invalid_type",
      "customFields.lender:invalid_type",
      "customFields.move_in:invalid_date",
      "customFields.nope:unknown_field",
      "customFields.pre_approved:invalid_type",
      "customFields.side:invalid_enum_value",
    ]);
    // A value that is no scalar at all is refused by the schema, also naming the key.
    const nested = await call("PUT", `/v1/contacts/${contact.id}`, { token: owner.token, body: { customFields: { budget: { a: 1 } } } });
    expect((await expectCrmError(nested, 422, "validation_error")).map((e) => e.field)).toEqual(["customFields.budget"]);
    expect((await getContact(owner.token, contact.id)).customFields).toEqual(good);

    const updated = await updateContact(owner.token, contact.id, { customFields: { budget: null, side: "seller" } });
    expect(updated.customFields).toEqual({ move_in: "2027-03-01", pre_approved: true, side: "seller", lender: "First Bank" });
    // Other fields leave the values as they are.
    expect((await updateContact(owner.token, contact.id, { notes: "hi" })).customFields).toEqual(updated.customFields);

    // The bulk update sets them on every contact, checked the same way.
    const other = await createContact(owner.token, { customFields: { budget: 1 } });
    const bulkBad = await call("PATCH", "/v1/contacts/bulk", {
      token: owner.token,
      body: { contactIds: [contact.id, other.id], updates: { customFields: { side: "x" } } },
    });
    expect(issuePairs(await expectCrmError(bulkBad, 422, "validation_error"))).toEqual(["updates.customFields.side:invalid_enum_value"]);
    const bulk = await call("PATCH", "/v1/contacts/bulk", {
      token: owner.token,
      body: { contactIds: [contact.id, other.id], updates: { customFields: { side: "buyer" } } },
    });
    expect(bulk.status).toBe(200);
    expect((await getContact(owner.token, contact.id)).customFields).toEqual({ ...updated.customFields, side: "buyer" });
    expect((await getContact(owner.token, other.id)).customFields).toEqual({ budget: 1, side: "buyer" });
  });

  it("on deals and properties too, each object with its own definitions", async () => {
    const owner = await createPrincipal();
    await define(owner, { object: "deal", key: "referral_fee", label: "Referral fee", type: "number" });
    await define(owner, { object: "property", key: "view", label: "View", type: "select", options: ["ocean", "city"] });
    const contact = await createContact(owner.token);
    const deal = await createDeal(owner.token, { contactId: contact.id, customFields: { referral_fee: 2500 } });
    expect(deal.customFields).toEqual({ referral_fee: 2500 });
    const dealPut = await call("PUT", `/v1/deals/${deal.id}`, { token: owner.token, body: { customFields: { view: "ocean" } } });
    expect(issuePairs(await expectCrmError(dealPut, 422, "validation_error"))).toEqual(["customFields.view:unknown_field"]);
    const property = await createProperty(owner.token, { customFields: { view: "ocean" } });
    expect(property.customFields).toEqual({ view: "ocean" });
    const propertyPut = await call("PUT", `/v1/properties/${property.id}`, {
      token: owner.token,
      body: { customFields: { view: "mountain" } },
    });
    expect(issuePairs(await expectCrmError(propertyPut, 422, "validation_error"))).toEqual(["customFields.view:invalid_enum_value"]);
    const moved = await json(
      await call("PUT", `/v1/properties/${property.id}`, { token: owner.token, body: { customFields: { view: "city" } } }),
    );
    expect(moved.data.customFields).toEqual({ view: "city" });
    const page = await listProperties(owner.token, "customFields.view=city");
    expect(ids(page.data)).toEqual([property.id]);
    expect(page.pagination.total).toBe(1);
    const deals = await json(await call("GET", "/v1/deals?customFields.referral_fee[gte]=2000", { token: owner.token }));
    expect(ids(deals.data)).toEqual([deal.id]);
    expect(deals.pagination.total).toBe(1);
  });

  it("carries the values in event payloads, and webhook filters reach them", async () => {
    const owner = await createPrincipal();
    await define(owner, { object: "contact", key: "budget", label: "Budget", type: "number" });
    const contact = await createContact(owner.token, { customFields: { budget: 100 } });
    await updateContact(owner.token, contact.id, { customFields: { budget: 900 } });
    const rows = await (await tenantDb(owner.organizationId))
      .prepare(
        "SELECT type, data FROM outbox_events WHERE organization_id = ? AND type IN ('contact.created', 'contact.updated') ORDER BY occurred_at",
      )
      .bind(owner.organizationId)
      .all<{ type: string; data: string }>();
    const [created, updated] = rows.results.map((r) => JSON.parse(r.data));
    expect(created.object.customFields).toEqual({ budget: 100 });
    expect(updated.object.customFields).toEqual({ budget: 900 });
    expect(updated.changes).toEqual(["customFields.budget"]);
    expect(updated.previousAttributes).toEqual({ customFields: { budget: 100 } });

    const filters = { "contact.customFields.budget": { gte: 500 } };
    expect(matchesFilters(filters, "contact.updated", updated.object)).toBe(true);
    expect(matchesFilters(filters, "contact.created", created.object)).toBe(false);
    // A subscription takes such a filter.
    expect(WebhookFiltersSchema.safeParse(filters).success).toBe(true);
  });
});

describe("lists filtered and sorted by custom fields", () => {
  async function seed() {
    const owner = await createPrincipal();
    await defineAll(owner);
    const values: Record<string, unknown>[] = [
      { budget: 300000, move_in: "2027-01-15", pre_approved: true, side: "buyer", lender: "Acme" },
      { budget: 550000, move_in: "2027-06-01", pre_approved: false, side: "seller", lender: "bolt" },
      { budget: 150000, move_in: "2026-12-01", pre_approved: true, side: "buyer", lender: "Crest" },
      { budget: 550000, pre_approved: true, side: "seller" },
      { move_in: "2027-03-03", lender: "acme" },
      {},
    ];
    const contacts = [];
    for (const customFields of values) contacts.push(await createContact(owner.token, { customFields }));
    return { owner, contacts };
  }

  it("filters by =, gte/lte on numbers and dates, booleans and select values, with exact totals", async () => {
    const { owner, contacts: c } = await seed();
    const cases: [string, number[]][] = [
      ["customFields.budget=550000", [1, 3]],
      ["customFields.budget[gte]=300000", [0, 1, 3]],
      ["customFields.budget[gt]=300000", [1, 3]],
      ["customFields.budget[lte]=300000", [0, 2]],
      ["customFields.budget[gte]=200000&customFields.budget[lt]=550000", [0]],
      ["customFields.move_in[gte]=2027-01-01&customFields.move_in[lte]=2027-03-31", [0, 4]],
      ["customFields.pre_approved=true", [0, 2, 3]],
      ["customFields.pre_approved=false", [1]],
      ["customFields.side=seller", [1, 3]],
      ["customFields.lender=ACME", [0, 4]],
      ["customFields.side=buyer&customFields.pre_approved=true&customFields.budget[lte]=200000", [2]],
    ];
    for (const [query, expected] of cases) {
      const page = await listPage(owner.token, `${query}&limit=100`);
      expect(ids(page.data).sort(), query).toEqual(expected.map((i) => c[i]!.id).sort());
      expect(page.pagination.total, query).toBe(expected.length);
    }
    // The total follows a change of the values.
    await updateContact(owner.token, c[5]!.id, { customFields: { side: "seller" } });
    expect((await listPage(owner.token, "customFields.side=seller")).pagination.total).toBe(3);
  });

  it("refuses unknown keys, bad values and range operators on types without order, listing each (422)", async () => {
    const { owner } = await seed();
    const res = await call(
      "GET",
      "/v1/contacts?customFields.nope=1&customFields.budget=abc&customFields.pre_approved=yes&customFields.side[gte]=buyer&customFields.move_in=tomorrow&sort=customFields.missing",
      { token: owner.token },
    );
    expect(issuePairs(await expectCrmError(res, 422, "validation_error"))).toEqual([
      "customFields.budget:invalid_number",
      "customFields.move_in:invalid_date",
      "customFields.nope:unknown_field",
      "customFields.pre_approved:invalid_boolean",
      "customFields.side[gte]:invalid_operator",
      "sort:unknown_field",
    ]);
    // Not a custom field parameter at all: still an unknown parameter.
    const other = await call("GET", "/v1/contacts?customfields.budget=1&custom=1", { token: owner.token });
    expect(issuePairs(await expectCrmError(other, 422, "validation_error"))).toEqual([
      "custom:unknown_field",
      "customfields.budget:unknown_field",
    ]);
  });

  it("sorts by a custom field with keyset pages (missing values last ascending, first descending)", async () => {
    const { owner, contacts: c } = await seed();
    const walk = async (query: string) => {
      const { contacts, pages } = await listAll(owner.token, `${query}&limit=2`);
      for (const p of pages) expect(p.pagination.total).toBe(pages[0]!.pagination.total);
      return { order: ids(contacts), total: pages[0]!.pagination.total };
    };
    const id = (i: number) => c[i]!.id;
    const tie = (a: number, b: number) => (id(a) < id(b) ? [a, b] : [b, a]);
    // Budgets 150k, 300k, 550k twice (the id breaks the tie), then the two without one.
    expect((await walk("sort=customFields.budget")).order).toEqual([2, 0, ...tie(1, 3), ...tie(4, 5)].map(id));
    expect((await walk("sort=customFields.budget:desc")).order).toEqual([...tie(4, 5).reverse(), ...tie(1, 3).reverse(), 0, 2].map(id));
    // Text sorts without regard to case.
    expect((await walk("sort=customFields.lender")).order).toEqual([...tie(0, 4), 1, 2, ...tie(3, 5)].map(id));
    expect((await walk("sort=customFields.move_in:asc")).order).toEqual([2, 0, 4, 1, ...tie(3, 5)].map(id));
    // With a filter, and a second sort field.
    const filtered = await walk("customFields.pre_approved=true&sort=customFields.budget:desc,createdAt:asc");
    expect(filtered).toEqual({ order: [3, 0, 2].map(id), total: 3 });
  });

  it("a deleted definition's values leave every record, those in the trash too; a key defined again starts empty", async () => {
    const { owner, contacts: c } = await seed();
    // Contact 1 waits in the trash with its budget.
    expect((await call("DELETE", `/v1/contacts/${c[1]!.id}`, { token: owner.token })).status).toBe(200);
    const fields = await json(await call("GET", "/v1/custom-fields?object=contact&limit=100", { token: owner.token }));
    const budget = fields.data.find((f: { key: string }) => f.key === "budget");
    const before = await call("GET", `/v1/contacts/${c[0]!.id}`, { token: owner.token });
    expect((await call("DELETE", `/v1/custom-fields/${budget.id}`, { token: owner.token })).status).toBe(204);
    const after = await call("GET", `/v1/contacts/${c[0]!.id}`, { token: owner.token });
    expect(after.headers.get("etag")).not.toBe(before.headers.get("etag"));
    const shown = (await json(after)).data;
    expect(shown.customFields).toEqual({ move_in: "2027-01-15", pre_approved: true, side: "buyer", lender: "Acme" });
    expect(shown.updatedAt).toBe(c[0]!.updatedAt);
    const filter = await call("GET", "/v1/contacts?customFields.budget[gte]=1", { token: owner.token });
    expect(issuePairs(await expectCrmError(filter, 422, "validation_error"))).toEqual(["customFields.budget[gte]:unknown_field"]);
    const write = await call("PUT", `/v1/contacts/${c[0]!.id}`, { token: owner.token, body: { customFields: { budget: 1 } } });
    expect(issuePairs(await expectCrmError(write, 422, "validation_error"))).toEqual(["customFields.budget:unknown_field"]);

    await define(owner, { object: "contact", key: "budget", label: "Budget again", type: "number" });
    expect((await call("POST", `/v1/contacts/${c[1]!.id}/restore`, { token: owner.token })).status).toBe(200);
    expect((await getContact(owner.token, c[1]!.id)).customFields).toEqual({
      move_in: "2027-06-01",
      pre_approved: false,
      side: "seller",
      lender: "bolt",
    });
    expect((await listPage(owner.token, "customFields.budget[gte]=0")).pagination.total).toBe(0);
    for (const contact of c) expect((await getContact(owner.token, contact.id)).customFields).not.toHaveProperty("budget");
  });

  it("keeps the values through the trash and a restore, and through a shard move (definitions and values)", async () => {
    const owner = await createPrincipal({ shard: 0 });
    await define(owner, { object: "contact", key: "budget", label: "Budget", type: "number" });
    const kept = await createContact(owner.token, { customFields: { budget: 700 } });
    const trashed = await createContact(owner.token, { customFields: { budget: 800 } });
    expect((await call("DELETE", `/v1/contacts/${trashed.id}`, { token: owner.token })).status).toBe(200);
    expect((await listPage(owner.token, "customFields.budget[gte]=1")).pagination.total).toBe(1);
    expect((await call("POST", `/v1/contacts/${trashed.id}/restore`, { token: owner.token })).status).toBe(200);
    expect((await getContact(owner.token, trashed.id)).customFields).toEqual({ budget: 800 });

    await startMove(env, owner.organizationId, 1);
    let progress = await stepMove(env, owner.organizationId, { drainMs: 0 });
    while (progress.phase !== "done") progress = await stepMove(env, owner.organizationId, { drainMs: 0 });
    const page = await listPage(owner.token, "sort=customFields.budget:desc");
    expect(ids(page.data)).toEqual([trashed.id, kept.id]);
    expect((await json(await call("GET", "/v1/custom-fields", { token: owner.token }))).data.map((f: { key: string }) => f.key)).toEqual([
      "budget",
    ]);
    const old = await shardDatabase(env, 0)
      .prepare("SELECT COUNT(*) AS n FROM custom_field_definitions WHERE organization_id = ?")
      .bind(owner.organizationId)
      .first<{ n: number }>();
    expect(old!.n).toBe(0);
  });

  it("a delete cut short mid-sweep is finished by the next delete of the field, or by the next creation of its key", async () => {
    const { owner, contacts: c } = await seed();
    const fields = (await json(await call("GET", "/v1/custom-fields?object=contact&limit=100", { token: owner.token }))).data as {
      id: string;
      key: string;
    }[];
    const db = await tenantDb(owner.organizationId);
    // As a delete leaves it when it dies after marking the definition: the values are still on the records.
    const cutShort = async (key: string) => {
      const id = fields.find((f) => f.key === key)!.id;
      await db.prepare("UPDATE custom_field_definitions SET deleted_at = ? WHERE id = ?").bind(new Date().toISOString(), id).run();
      return id;
    };
    const budget = await cutShort("budget");
    expect(
      (await json(await call("GET", "/v1/custom-fields?object=contact", { token: owner.token }))).data.map((f: { key: string }) => f.key),
    ).not.toContain("budget");
    expect(
      issuePairs(
        await expectCrmError(await call("GET", "/v1/contacts?sort=customFields.budget", { token: owner.token }), 422, "validation_error"),
      ),
    ).toEqual(["sort:unknown_field"]);
    const write = await call("PUT", `/v1/contacts/${c[0]!.id}`, { token: owner.token, body: { customFields: { budget: 5 } } });
    expect(issuePairs(await expectCrmError(write, 422, "validation_error"))).toEqual(["customFields.budget:unknown_field"]);
    expect((await call("DELETE", `/v1/custom-fields/${budget}`, { token: owner.token })).status).toBe(404);
    expect((await getContact(owner.token, c[0]!.id)).customFields).not.toHaveProperty("budget");
    expect(await db.prepare("SELECT COUNT(*) AS n FROM custom_field_definitions WHERE id = ?").bind(budget).first("n")).toBe(0);

    await cutShort("side");
    await define(owner, { object: "contact", key: "side", label: "Side again", type: "text" });
    for (const contact of c) expect((await getContact(owner.token, contact.id)).customFields).not.toHaveProperty("side");
    expect((await listPage(owner.token, "customFields.side=buyer")).pagination.total).toBe(0);
  });
});
