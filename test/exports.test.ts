import { beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "./helpers/api-keys";
import { call, json } from "./helpers/client";
import { createContact, expectCrmError, listAll } from "./helpers/contacts";
import { createDeal } from "./helpers/deals";
import { csvObjects, ndjsonObjects, seedContacts } from "./helpers/exports";
import { createPrincipal, type TestPrincipal } from "./helpers/factories";
import { createProperty } from "./helpers/properties";
import { flatten } from "../src/crm/export";

const N = 3_000;
let org: TestPrincipal;
let other: TestPrincipal;

beforeAll(async () => {
  org = await createPrincipal();
  other = await createPrincipal();
  await seedContacts(org.organizationId, N);
  await seedContacts(other.organizationId, 50, "Other");
});

const exported = async (token: string, path: string) => {
  const res = await call("GET", path, { token });
  expect(res.status, res.status === 200 ? "" : await res.clone().text()).toBe(200);
  return { res, text: await res.text() };
};

/** Every page of a list route, walked with the largest page. */
async function walk(token: string, path: string, query = ""): Promise<Record<string, any>[]> {
  const all: Record<string, any>[] = [];
  let cursor: string | null = null;
  do {
    const q = [query, "limit=100", cursor ? `cursor=${encodeURIComponent(cursor)}` : ""].filter(Boolean).join("&");
    const body = await json(await call("GET", `${path}?${q}`, { token }));
    all.push(...body.data);
    cursor = body.pagination.nextCursor;
  } while (cursor);
  return all;
}

/** An API object as the CSV writes it: every value a string, lists joined, nested objects dotted. */
const asCsv = (o: object) => flatten(o);

describe("GET /v1/contacts/export", () => {
  it("streams every contact as NDJSON, equal to the list walked page by page, in the list's order", async () => {
    const { res, text } = await exported(org.token, "/v1/contacts/export?format=ndjson");
    expect(res.headers.get("content-type")).toBe("application/x-ndjson");
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="contacts-\d{4}-\d{2}-\d{2}\.ndjson"$/);
    const rows = ndjsonObjects(text);
    expect(rows).toHaveLength(N);
    const { contacts } = await listAll(org.token, "limit=100");
    expect(rows).toEqual(contacts);
  });

  it("streams CSV with a header of dotted columns; read back, the rows equal the list's objects", async () => {
    const { res, text } = await exported(org.token, "/v1/contacts/export?format=csv");
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(res.headers.get("content-disposition")).toMatch(/filename="contacts-.*\.csv"/);
    const rows = csvObjects(text);
    expect(rows).toHaveLength(N);
    const header = Object.keys(rows[0]!);
    expect(header).toEqual(expect.arrayContaining(["id", "firstName", "email", "address.street", "address.city", "tags", "notes", "preferences"]));
    const { contacts } = await listAll(org.token, "limit=100");
    // The first row has no address (n = 2999 is odd), yet the address columns are there: they come from the schema.
    const expected = contacts.map((c) => {
      const flat = asCsv(c);
      // No value is lost: every field of the object is a column (a null object stands for its dotted columns).
      for (const key of Object.keys(flat)) expect(header.some((h) => h === key || h.startsWith(`${key}.`))).toBe(true);
      return Object.fromEntries(header.map((h) => [h, flat[h] ?? ""]));
    });
    expect(rows).toEqual(expected);
    // A note with a comma and quotes survives the round trip.
    expect(rows.find((r) => r.notes.includes('"soon"'))!.notes).toMatch(/^Called about Elm \d+, said "soon"$/);
  });

  it("applies the list's filters and q, and holds no other organization's contact", async () => {
    const query = "type=LEAD&tags=vip&sort=lastName:asc";
    const rows = ndjsonObjects((await exported(org.token, `/v1/contacts/export?format=ndjson&${query}`)).text);
    const listed = await walk(org.token, "/v1/contacts", query);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows).toEqual(listed);
    expect(rows.every((c) => c.type === "LEAD" && c.tags.includes("vip"))).toBe(true);

    const searched = ndjsonObjects((await exported(org.token, "/v1/contacts/export?format=ndjson&q=Seed12")).text);
    expect(searched.map((c) => c.id)).toEqual((await walk(org.token, "/v1/contacts", "q=Seed12")).map((c) => c.id));
    expect(searched.length).toBeGreaterThan(0);

    const all = ndjsonObjects((await exported(org.token, "/v1/contacts/export?format=ndjson")).text);
    expect(all.some((c) => c.firstName.startsWith("Other"))).toBe(false);
    const theirs = ndjsonObjects((await exported(other.token, "/v1/contacts/export?format=ndjson")).text);
    expect(theirs).toHaveLength(50);
    expect(theirs.every((c) => c.organizationId === other.organizationId)).toBe(true);
  });

  it("projects with fields, and refuses bad input with every problem listed", async () => {
    const rows = csvObjects((await exported(org.token, "/v1/contacts/export?fields=firstName,email&type=CLIENT")).text);
    expect(Object.keys(rows[0]!)).toEqual(["id", "firstName", "email"]);
    const errors = await expectCrmError(await call("GET", "/v1/contacts/export?format=xml&limit=5&type=NOPE", { token: org.token }), 422, "validation_error");
    expect(errors.map((e) => e.field).sort()).toEqual(["format", "limit", "type"]);
    const range = await expectCrmError(await call("GET", "/v1/contacts/export?leadScore[gte]=9&leadScore[lte]=2", { token: org.token }), 422, "validation_error");
    expect(range.map((e) => `${e.field}:${e.code}`)).toEqual(["leadScore[gte]:invalid_range"]);
  });

  it("is not taken for a contact id, and an empty selection is a header alone", async () => {
    const res = await call("GET", "/v1/contacts/export?type=VENDOR&email=nobody@nowhere.test", { token: org.token });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.split("\r\n").filter(Boolean)).toHaveLength(1);
    expect(text.startsWith("id,")).toBe(true);
  });

  it("403 insufficient_permission for a key without exports:read, even with contacts:read", async () => {
    const key = await createApiKey(org.token, ["contacts:read"]);
    const errors = await call("GET", "/v1/contacts/export", { token: key.key });
    expect(errors.status).toBe(403);
    expect((await json(errors)).error.code).toBe("insufficient_permission");
    const allowed = await createApiKey(org.token, ["exports:read"]);
    expect((await call("GET", "/v1/contacts/export?format=ndjson&type=LEAD", { token: allowed.key })).status).toBe(200);
  });
});

describe("GET /v1/deals/export and /v1/properties/export", () => {
  let owner: TestPrincipal;
  beforeAll(async () => {
    owner = await createPrincipal();
    const contact = await createContact(owner.token);
    for (let i = 0; i < 6; i++) await createDeal(owner.token, { contactId: contact.id, title: `Deal ${i}`, amount: 100_000 + i * 1000 });
    for (let i = 0; i < 4; i++) await createProperty(owner.token, { listing: { listPrice: 300_000 + i * 50_000 } });
  });

  it("exports deals equal to the list, with the list's filters", async () => {
    const rows = ndjsonObjects((await exported(owner.token, "/v1/deals/export?format=ndjson")).text);
    expect(rows).toEqual(await walk(owner.token, "/v1/deals"));
    expect(rows).toHaveLength(6);
    const filtered = ndjsonObjects((await exported(owner.token, "/v1/deals/export?format=ndjson&amount[gte]=103000")).text);
    expect(filtered.map((d) => d.title).sort()).toEqual(["Deal 3", "Deal 4", "Deal 5"]);
    const csv = csvObjects((await exported(owner.token, "/v1/deals/export")).text);
    expect(csv.map((d) => d.id)).toEqual(rows.map((d) => d.id));
    expect(csv[0]!.amount).toBe(String(rows[0]!.amount));
    expect(ndjsonObjects((await exported(other.token, "/v1/deals/export?format=ndjson")).text)).toEqual([]);
  });

  it("exports properties equal to the list (CSV columns dotted from the nested objects)", async () => {
    const rows = ndjsonObjects((await exported(owner.token, "/v1/properties/export?format=ndjson&sort=listPrice:asc")).text);
    const listed = await walk(owner.token, "/v1/properties", "sort=listPrice:asc");
    expect(rows.map((p) => p.id)).toEqual(listed.map((p) => p.id));
    expect(rows).toHaveLength(4);
    const csv = csvObjects((await exported(owner.token, "/v1/properties/export?sort=listPrice:asc")).text);
    expect(Object.keys(csv[0]!)).toEqual(expect.arrayContaining(["id", "address.street", "address.city"]));
    expect(csv.map((p) => p["address.street"])).toEqual(rows.map((p) => p.address.street));
  });
});
