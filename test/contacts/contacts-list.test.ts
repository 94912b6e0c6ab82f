import { beforeAll, describe, expect, it } from "vitest";
import { pruneStaleListTotals } from "../../src/crm/list-totals";
import { call } from "../helpers/client";
import {
  type ContactJson,
  createContact,
  createContacts,
  expectCrmError,
  issuePairs,
  listAll,
  listPage,
  logActivity,
  sortContacts,
  tick,
  updateContact,
} from "../helpers/contacts";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";

type SortSpec = [field: "createdAt" | "updatedAt" | "lastName" | "leadScore", dir: "asc" | "desc"][];
const parseSort = (sort: string): SortSpec => sort.split(",").map((p) => p.split(":") as SortSpec[number]);
const ids = (list: { id?: string }[]) => list.map((c) => c.id!);
const sortedIds = (list: { id?: string }[]) => ids(list).sort();
/** The sort-key tuple of a contact, to compare orders without depending on how exact ties are broken. */
const keyOf = (sort: SortSpec) => (c: ContactJson) =>
  sort.map(([f]) => (f === "lastName" ? c.lastName.toLowerCase() : f === "leadScore" ? c.leadScore : c[f])).join("|");

describe("GET /v1/contacts: paging basics", () => {
  it("answers 25 contacts by default, newest first, with pagination {hasMore, nextCursor, total, limit}", async () => {
    const { token } = await createPrincipal();
    const all = await createContacts(
      token,
      Array.from({ length: 27 }, (_, i) => ({ lastName: `N${i}` })),
    );
    const page = await listPage(token);
    expect(page.data).toHaveLength(25);
    expect(page.pagination).toEqual({ hasMore: true, nextCursor: expect.any(String), total: 27, limit: 25 });
    const expected = sortContacts(all, [["createdAt", "desc"]]);
    expect(page.data.map(keyOf([["createdAt", "desc"]]))).toEqual(expected.slice(0, 25).map(keyOf([["createdAt", "desc"]])));
    // The newest contact comes first and the two oldest are on the next page.
    expect(page.data[0]!.id).toBe(all[26]!.id);
    const next = await listPage(token, `cursor=${encodeURIComponent(page.pagination.nextCursor!)}`);
    expect(sortedIds(next.data)).toEqual(sortedIds(all.slice(0, 2)));
    expect(next.pagination).toEqual({ hasMore: false, nextCursor: null, total: 27, limit: 25 });
  });

  it("answers an empty page for an organization without contacts", async () => {
    const { token } = await createPrincipal();
    expect(await listPage(token)).toEqual({
      success: true,
      data: [],
      pagination: { hasMore: false, nextCursor: null, total: 0, limit: 25 },
    });
  });

  it("honours limit 1 and 100", async () => {
    const { token } = await createPrincipal();
    await createContacts(token, [{}, {}, {}]);
    const one = await listPage(token, "limit=1");
    expect(one.data).toHaveLength(1);
    expect(one.pagination).toMatchObject({ hasMore: true, total: 3, limit: 1 });
    const hundred = await listPage(token, "limit=100");
    expect(hundred.data).toHaveLength(3);
    expect(hundred.pagination).toMatchObject({ hasMore: false, nextCursor: null, total: 3, limit: 100 });
  });

  it.each(["0", "101", "-1", "abc", "1.5", ""])("answers 422 for limit=%s instead of clamping it", async (limit) => {
    const { token } = await createPrincipal();
    const errors = await expectCrmError(await call("GET", `/v1/contacts?limit=${limit}`, { token }), 422, "validation_error");
    expect(errors.map((e) => e.field)).toEqual(["limit"]);
  });

  it("answers 422 unknown_field for an unknown query parameter", async () => {
    const { token } = await createPrincipal();
    const errors = await expectCrmError(await call("GET", "/v1/contacts?colour=red", { token }), 422, "validation_error");
    expect(issuePairs(errors)).toEqual(["colour:unknown_field"]);
  });

  it.each([
    ["type=PROSPECT", "type"],
    ["status=HAPPY", "status"],
    ["leadScore[gte]=101", "leadScore[gte]"],
    ["leadScore[lte]=x", "leadScore[lte]"],
    ["leadScore[gte]=60&leadScore[lte]=40", "leadScore[gte]"],
    ["createdAt[gte]=yesterday", "createdAt[gte]"],
    ["createdAt[gte]=2030-01-01T00:00:00Z&createdAt[lte]=2020-01-01T00:00:00Z", "createdAt[gte]"],
    ["sort=firstName:asc", "sort"],
    ["sort=lastName:up", "sort"],
    ["sort=lastName:asc,lastName:desc", "sort"],
    ["include=friends", "include"],
    ["fields=id,password", "fields"],
  ])("answers 422 for %s", async (query, field) => {
    const { token } = await createPrincipal();
    const errors = await expectCrmError(await call("GET", `/v1/contacts?${query}`, { token }), 422, "validation_error");
    expect(errors.length).toBeGreaterThan(0);
    for (const e of errors) expect(e.field.startsWith(field)).toBe(true);
  });

  it("finds the one contact with an e-mail address, in any case, and never another organization's", async () => {
    const mine = await createPrincipal();
    const theirs = await createPrincipal();
    const own = await createContact(mine.token);
    await createContact(mine.token);
    await createContact(theirs.token, { email: own.email });
    const page = await listPage(mine.token, `email=${encodeURIComponent(own.email.toUpperCase())}`);
    expect(ids(page.data)).toEqual([own.id]);
    expect(page.pagination.total).toBe(1);
    expect(ids((await listPage(mine.token, "email=nobody%40example.test")).data)).toEqual([]);
    await expectCrmError(await call("GET", "/v1/contacts?email=not-an-address", { token: mine.token }), 422, "validation_error");
  });

  it("never shows another organization's contacts", async () => {
    const mine = await createPrincipal();
    const theirs = await createPrincipal();
    const own = await createContact(mine.token, { type: "CLIENT", tags: ["shared"] });
    await createContacts(theirs.token, [
      { type: "CLIENT", tags: ["shared"] },
      { type: "CLIENT", tags: ["shared"] },
    ]);
    for (const q of ["", "type=CLIENT", "tags=shared", "sort=lastName:asc"]) {
      const page = await listPage(mine.token, q);
      expect(ids(page.data), q).toEqual([own.id]);
      expect(page.pagination.total, q).toBe(1);
    }
  });
});

describe("GET /v1/contacts: filters", () => {
  let p: TestPrincipal;
  let agent2: TestPrincipal;
  let c: ContactJson[];
  beforeAll(async () => {
    p = await createPrincipal();
    agent2 = await createPrincipal({ organizationId: p.organizationId });
    const specs = [
      { lastName: "c0", type: "LEAD", status: "ACTIVE", source: "WEBSITE", assignedTo: p.userId, tags: ["a", "b"], leadScore: 10 },
      { lastName: "c1", type: "CLIENT", status: "INACTIVE", source: "REFERRAL", assignedTo: agent2.userId, tags: ["a"], leadScore: 50 },
      { lastName: "c2", type: "CLIENT", status: "ACTIVE", source: "WEBSITE", tags: ["b"], leadScore: 90 },
      { lastName: "c3", type: "VENDOR", status: "DISQUALIFIED", tags: ["a", "b", "c"] },
      { lastName: "c4", type: "LEAD", status: "ACTIVE", source: "REFERRAL", assignedTo: p.userId, leadScore: 70 },
    ];
    c = [];
    for (const s of specs) {
      c.push(await createContact(p.token, s));
      await tick(3);
    }
    // Another organization with contacts that match every filter: none of them may show up.
    const other = await createPrincipal();
    await createContacts(
      other.token,
      specs.map(({ assignedTo: _a, ...s }) => s),
    );
  });

  const cases: [string, () => string, number[]][] = [
    ["type", () => "type=CLIENT", [1, 2]],
    ["status", () => "status=ACTIVE", [0, 2, 4]],
    ["source", () => "source=REFERRAL", [1, 4]],
    ["assignedTo", () => `assignedTo=${p.userId}`, [0, 4]],
    ["assignedTo (second agent)", () => `assignedTo=${agent2.userId}`, [1]],
    ["one tag", () => "tags=a", [0, 1, 3]],
    ["two tags (all of them)", () => "tags=a,b", [0, 3]],
    ["three tags", () => "tags=b,c,a", [3]],
    ["an unused tag", () => "tags=a,zzz", []],
    ["leadScore[gte]", () => "leadScore[gte]=50", [1, 2, 4]],
    ["leadScore[lte]", () => "leadScore[lte]=50", [0, 1]],
    ["leadScore range", () => "leadScore[gte]=50&leadScore[lte]=70", [1, 4]],
    ["createdAt[gte]", () => `createdAt[gte]=${encodeURIComponent(c[2]!.createdAt)}`, [2, 3, 4]],
    ["createdAt[lte]", () => `createdAt[lte]=${encodeURIComponent(c[1]!.createdAt)}`, [0, 1]],
    [
      "createdAt range",
      () => `createdAt[gte]=${encodeURIComponent(c[1]!.createdAt)}&createdAt[lte]=${encodeURIComponent(c[3]!.createdAt)}`,
      [1, 2, 3],
    ],
    ["type + status", () => "type=CLIENT&status=ACTIVE", [2]],
    ["tags + leadScore", () => "tags=a&leadScore[gte]=10", [0, 1]],
    ["source + assignedTo", () => `source=REFERRAL&assignedTo=${p.userId}`, [4]],
    ["status + tags + createdAt", () => `status=ACTIVE&tags=b&createdAt[gte]=${encodeURIComponent(c[1]!.createdAt)}`, [2]],
    [
      "everything",
      () =>
        `type=LEAD&status=ACTIVE&source=WEBSITE&assignedTo=${p.userId}&tags=a,b&leadScore[gte]=0&leadScore[lte]=10&createdAt[lte]=${encodeURIComponent(c[0]!.createdAt)}`,
      [0],
    ],
  ];

  it.each(cases)("filters by %s, with total counting only the matches", async (_, query, expected) => {
    const want = expected.map((i) => c[i]!.id).sort();
    const page = await listPage(p.token, query());
    expect(sortedIds(page.data)).toEqual(want);
    expect(page.pagination.total).toBe(want.length);
    // A small-page walk gives the same set, and every page reports the same total.
    const walk = await listAll(p.token, `${query()}&limit=1`);
    expect(sortedIds(walk.contacts)).toEqual(want);
    for (const pg of walk.pages) expect(pg.pagination.total).toBe(want.length);
  });

  it("accepts an ISO timestamp with an offset for createdAt bounds", async () => {
    const at = new Date(c[2]!.createdAt);
    // The UTC clock time two hours later, read as +02:00: exactly c2's instant.
    const plusTwo = new Date(at.getTime() + 2 * 3_600_000).toISOString().replace("Z", "+02:00");
    expect(new Date(plusTwo).getTime()).toBe(at.getTime());
    const page = await listPage(p.token, `createdAt[gte]=${encodeURIComponent(plusTwo)}`);
    expect(sortedIds(page.data)).toEqual([c[2]!.id, c[3]!.id, c[4]!.id].sort());
  });
});

describe("GET /v1/contacts: totals follow writes", () => {
  it("a filtered total is recounted after a create, an update, a tag, a bulk update and a delete", async () => {
    const { token } = await createPrincipal();
    const [l1, l2] = await createContacts(token, [{ type: "LEAD" }, { type: "LEAD" }, { type: "CLIENT" }]);
    const total = async (q: string) => (await listPage(token, q)).pagination.total;
    expect(await total("type=LEAD")).toBe(2);
    expect(await total("type=LEAD")).toBe(2); // served from the cache now
    const l3 = await createContact(token, { type: "LEAD" });
    expect(await total("type=LEAD")).toBe(3);
    await updateContact(token, l1!.id, { type: "CLIENT" });
    expect(await total("type=LEAD")).toBe(2);
    expect(await total("type=CLIENT")).toBe(2);

    expect(await total("tags=hot")).toBe(0);
    await call("POST", `/v1/contacts/${l2!.id}/tags`, { token, body: { tags: ["hot"] } });
    expect(await total("tags=hot")).toBe(1);

    expect(await total("status=INACTIVE")).toBe(0);
    await call("PATCH", "/v1/contacts/bulk", { token, body: { contactIds: [l2!.id, l3.id], updates: { status: "INACTIVE" } } });
    expect(await total("status=INACTIVE")).toBe(2);

    await call("DELETE", `/v1/contacts/${l3.id}`, { token });
    expect(await total("status=INACTIVE")).toBe(1);
    expect(await total("type=LEAD")).toBe(1);
    expect(await total("")).toBe(3);
  });

  it("the cron drops cached totals a write has made stale, and keeps current ones", async () => {
    const p = await createPrincipal();
    await createContacts(p.token, [{ type: "LEAD" }, { type: "CLIENT" }]);
    // With a createdAt bound, so the total is counted and cached (type alone is summed from the facet counts).
    const since = "createdAt[gte]=2000-01-01T00:00:00.000Z";
    await listPage(p.token, `type=LEAD&${since}`);
    await createContact(p.token, { type: "VENDOR" }); // bumps the version: the LEAD total is stale now
    await listPage(p.token, `type=CLIENT&${since}`);
    const db = await tenantDb(p.organizationId);
    const cached = () =>
      db
        .prepare("SELECT COUNT(*) AS n FROM list_totals WHERE organization_id = ? AND resource = 'contacts'")
        .bind(p.organizationId)
        .first<number>("n");
    expect(await cached()).toBe(2);
    await pruneStaleListTotals(db);
    expect(await cached()).toBe(1);
    expect((await listPage(p.token, `type=LEAD&${since}`)).pagination.total).toBe(1);
    expect((await listPage(p.token, `type=CLIENT&${since}`)).pagination.total).toBe(1);
  });

  it("a lead-score total follows a score recomputed by a new activity", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, { calculateLeadScore: true });
    expect(c.leadScore).toBeLessThan(15);
    expect((await listPage(token, "leadScore[gte]=15")).pagination.total).toBe(0);
    await logActivity(token, c.id, { type: "PHONE_CALL" });
    expect((await listPage(token, "leadScore[gte]=15")).pagination.total).toBe(1);
  });
});

describe("GET /v1/contacts: sort", () => {
  let token: string;
  let all: ContactJson[];
  beforeAll(async () => {
    ({ token } = await createPrincipal());
    const names = ["smith", "Adams", "brown", "Smith", "zimmer", "Baker", "adams", "Young"];
    const scores = [40, null, 90, 40, 10, null, 75, 40];
    all = [];
    for (let i = 0; i < names.length; i++) {
      all.push(await createContact(token, { lastName: names[i], leadScore: scores[i] }));
      await tick(2);
    }
    // updatedAt in an order unlike createdAt.
    for (const i of [5, 2, 7, 0]) {
      all[i] = await updateContact(token, all[i]!.id, { notes: `touched ${i}` });
      await tick(2);
    }
  });

  it.each([
    "createdAt:desc",
    "createdAt:asc",
    "updatedAt:desc",
    "updatedAt:asc",
    "lastName:asc",
    "lastName:desc",
    "leadScore:desc",
    "leadScore:asc",
    "leadScore:desc,lastName:asc",
    "lastName:asc,leadScore:desc",
    "leadScore:asc,createdAt:desc",
  ])("sorts by %s", async (sort) => {
    const spec = parseSort(sort);
    const page = await listPage(token, `sort=${sort}&limit=100`);
    expect(sortedIds(page.data)).toEqual(sortedIds(all));
    expect(page.data.map(keyOf(spec))).toEqual(sortContacts(all, spec).map(keyOf(spec)));
  });

  it("sorts lastName case-insensitively", async () => {
    const page = await listPage(token, "sort=lastName:asc&limit=100");
    expect(page.data.map((c) => c.lastName.toLowerCase())).toEqual([
      "adams",
      "adams",
      "baker",
      "brown",
      "smith",
      "smith",
      "young",
      "zimmer",
    ]);
  });

  it("puts contacts without a lead score last when sorting by leadScore:desc", async () => {
    const page = await listPage(token, "sort=leadScore:desc&limit=100");
    expect(page.data.map((c) => c.leadScore)).toEqual([90, 75, 40, 40, 40, 10, null, null]);
  });

  it("defaults the direction of a bare field to asc", async () => {
    const page = await listPage(token, "sort=lastName&limit=100");
    expect(page.data[0]!.lastName.toLowerCase()).toBe("adams");
  });
});

describe("GET /v1/contacts: cursor walks", () => {
  let token: string;
  let all: ContactJson[];
  beforeAll(async () => {
    ({ token } = await createPrincipal());
    const last = ["Lee", "lee", "Ng", "Olsen", "Park", "Quinn", "RIOS"];
    const score = [null, 0, 15, 15, 42, 42, 42, 77, 100];
    all = [];
    for (let i = 0; i < 50; i++) {
      all.push(
        await createContact(token, {
          lastName: last[(i * 3) % last.length],
          leadScore: score[(i * 5) % score.length],
          type: i % 3 === 0 ? "CLIENT" : "LEAD",
        }),
      );
    }
    for (const i of [3, 17, 29, 41, 8]) all[i] = await updateContact(token, all[i]!.id, { notes: `n${i}` });
  });

  it.each([
    ["createdAt:desc", 7],
    ["createdAt:asc", 9],
    ["updatedAt:asc", 11],
    ["lastName:asc", 4],
    ["lastName:desc", 6],
    ["leadScore:desc", 5],
    ["leadScore:asc", 8],
    ["leadScore:desc,lastName:asc", 3],
    ["lastName:desc,leadScore:asc", 7],
    ["lastName:asc,createdAt:desc", 10],
  ])("walks sort=%s with limit %i: every contact once, in order", async (sort, limit) => {
    const spec = parseSort(sort);
    const { contacts, pages } = await listAll(token, `sort=${sort}&limit=${limit}`);
    expect(new Set(ids(contacts)).size).toBe(contacts.length);
    expect(sortedIds(contacts)).toEqual(sortedIds(all));
    expect(contacts.map(keyOf(spec))).toEqual(sortContacts(all, spec).map(keyOf(spec)));
    expect(pages).toHaveLength(Math.ceil(50 / limit));
    for (const pg of pages) expect(pg.pagination).toMatchObject({ total: 50, limit });
  });

  it("walks a filtered list with a mixed-direction sort", async () => {
    const spec = parseSort("leadScore:desc,lastName:asc");
    const clients = all.filter((c) => c.type === "CLIENT");
    const { contacts } = await listAll(token, "type=CLIENT&sort=leadScore:desc,lastName:asc&limit=4");
    expect(ids(contacts)).toHaveLength(clients.length);
    expect(sortedIds(contacts)).toEqual(sortedIds(clients));
    expect(contacts.map(keyOf(spec))).toEqual(sortContacts(clients, spec).map(keyOf(spec)));
  });

  it.each(["createdAt:desc", "leadScore:desc,lastName:asc", "lastName:asc"])(
    "returns every original contact exactly once while contacts are inserted during a walk (sort=%s)",
    async (sort) => {
      const p = await createPrincipal();
      const originals = await createContacts(
        p.token,
        Array.from({ length: 20 }, (_, i) => ({ lastName: `M${String.fromCharCode(97 + (i % 6))}`, leadScore: [20, 50, 80, null][i % 4] })),
      );
      const inserted: ContactJson[] = [];
      const { contacts } = await listAll(p.token, `sort=${sort}&limit=3`, async (i) => {
        // Rows that sort before, among and after the ones already served.
        inserted.push(await createContact(p.token, { lastName: ["Ma", "Mz", "Aa"][i % 3], leadScore: [50, 99, 0][i % 3] }));
      });
      const seen = ids(contacts);
      expect(new Set(seen).size).toBe(seen.length);
      for (const o of originals)
        expect(
          seen.filter((id) => id === o.id),
          o.id,
        ).toHaveLength(1);
      for (const id of seen) expect([...originals, ...inserted].some((c) => c.id === id)).toBe(true);
    },
  );

  it("answers 422 invalid_cursor for a cursor issued for another sort", async () => {
    const first = await listPage(token, "sort=lastName:asc&limit=5");
    const cursor = encodeURIComponent(first.pagination.nextCursor!);
    for (const q of [`cursor=${cursor}`, `sort=lastName:desc&cursor=${cursor}`, `sort=lastName:asc,createdAt:desc&cursor=${cursor}`]) {
      const errors = await expectCrmError(await call("GET", `/v1/contacts?${q}`, { token }), 422, "validation_error");
      expect(issuePairs(errors), q).toEqual(["cursor:invalid_cursor"]);
    }
    // The same cursor with its own sort still works.
    expect((await listPage(token, `sort=lastName:asc&limit=5&cursor=${cursor}`)).data).toHaveLength(5);
  });

  it.each([
    ["not base64", "!!!not a cursor!!!"],
    ["base64 of text", btoa("hello world")],
    ["base64 of an object", btoa(JSON.stringify({ sort: "createdAt:desc" }))],
    ["a forged cursor with too few values", btoa(JSON.stringify(["createdAt:desc", [], "x"])).replace(/=+$/, "")],
    ["a forged cursor with an object value", btoa(JSON.stringify(["createdAt:desc", [{ a: 1 }], "x"])).replace(/=+$/, "")],
    [
      "a forged cursor with too many values",
      btoa(JSON.stringify(["createdAt:desc", ["2020-01-01T00:00:00.000Z", 1, 2], "x"])).replace(/=+$/, ""),
    ],
  ])("answers 422 invalid_cursor for a garbage cursor (%s), never a 5xx", async (_, cursor) => {
    const errors = await expectCrmError(
      await call("GET", `/v1/contacts?cursor=${encodeURIComponent(cursor)}`, { token }),
      422,
      "validation_error",
    );
    expect(issuePairs(errors)).toEqual(["cursor:invalid_cursor"]);
  });
});

describe("GET /v1/contacts: fields and include", () => {
  it("projects the named fields plus id", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, { lastName: "Projected", tags: ["x"] });
    const page = await listPage(token, "fields=email,lastName");
    expect(page.data).toEqual([{ id: c.id, email: c.email, lastName: "Projected" }]);
    const withId = await listPage(token, "fields=id,tags");
    expect(withId.data).toEqual([{ id: c.id, tags: ["x"] }]);
    expect(withId.pagination.total).toBe(1);
  });

  it("attaches each contact's own activities, newest first, with include=activities", async () => {
    const { token } = await createPrincipal();
    const [a, b, none] = await createContacts(token, [{}, {}, {}]);
    const a1 = await logActivity(token, a!.id, { type: "NOTE", description: "a1" });
    await tick();
    const a2 = await logActivity(token, a!.id, { type: "EMAIL_SENT", description: "a2" });
    const b1 = await logActivity(token, b!.id, { type: "PHONE_CALL", description: "b1" });
    const page = await listPage(token, "include=activities");
    const byId = Object.fromEntries(page.data.map((c) => [c.id, c]));
    expect(ids(byId[a!.id]!.activities)).toEqual([a2.id, a1.id]);
    expect(byId[a!.id]!.activities[0]).toEqual(a2);
    expect(ids(byId[b!.id]!.activities)).toEqual([b1.id]);
    expect(byId[none!.id]!.activities).toEqual([]);
    const plain = await listPage(token);
    for (const c of plain.data) expect(c).not.toHaveProperty("activities");
  });

  it("combines fields with include", async () => {
    const { token } = await createPrincipal();
    const c = await createContact(token, { firstName: "Fi" });
    await logActivity(token, c.id, { type: "NOTE" });
    const page = await listPage(token, "fields=firstName&include=activities,deals");
    expect(Object.keys(page.data[0]!).sort()).toEqual(["activities", "deals", "firstName", "id"]);
    expect(page.data[0]!.activities).toHaveLength(1);
    expect(page.data[0]!.deals).toEqual([]);
  });
});
