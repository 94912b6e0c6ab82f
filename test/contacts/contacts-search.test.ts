import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { HITS_WINDOW, WALK_BUDGET } from "../../src/crm/search";
import { termsOf } from "../../src/lib/search-terms";
import { shardDatabase } from "../../src/shards/bindings";
import { startMove, stepMove } from "../../src/shards/move";
import { call, json } from "../helpers/client";
import {
  type ContactJson,
  createContact,
  createContacts,
  expectCrmError,
  getContact,
  issuePairs,
  listAll,
  listPage,
  sortContacts,
  updateContact,
} from "../helpers/contacts";
import { createDeal } from "../helpers/deals";
import { erase } from "../helpers/erasure";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { faultyD1, FaultPlan } from "../helpers/faulty-bindings";
import { createProperty, listProperties, walkIds } from "../helpers/properties";
import { contactTerms, indexRows } from "../helpers/search";

const q = (words: string) => `q=${encodeURIComponent(words)}`;
const ids = (list: { id: string }[]) => list.map((c) => c.id);
const sorted = (list: string[]) => [...list].sort();

/** The ids a search finds (one page of up to 100) and its total, which must agree. */
async function found(token: string, words: string, more = ""): Promise<string[]> {
  const page = await listPage(token, [q(words), "limit=100", more].filter(Boolean).join("&"));
  expect(page.pagination.total, words).toBe(page.data.length);
  return sorted(ids(page.data));
}

describe("GET /v1/contacts?q= (issue 33: find anyone by a word)", () => {
  it("finds a contact by the start of any word of its names, e-mail, notes or tags, in any case, with or without accents", async () => {
    const { token } = await createPrincipal();
    const [raj, priya, zoe, ann, other] = await createContacts(token, [
      {
        firstName: "Raj",
        lastName: "Patel",
        email: `raj.patel.${crypto.randomUUID().slice(0, 6)}@acme-realty.test`,
        notes: "Called about the house on Elm St.",
        tags: ["first-time buyer"],
      },
      { firstName: "Priya", lastName: "Patil", notes: "Prefers texts" },
      { firstName: "Zoë", lastName: "Łukasiewicz" },
      { firstName: "Ann", lastName: "O'Brien", tags: ["VIP"] },
      { firstName: "Patrick", lastName: "Elmore" },
    ]).then((list) => list.map((c) => c.id));
    const cases: [string, string[]][] = [
      ["pat", [raj!, priya!, other!]],
      ["patel", [raj!]],
      ["Raj pat", [raj!]],
      ["RAJ", [raj!]],
      ["raj.pat", [raj!]],
      ["acme", [raj!]],
      ["elm", [raj!, other!]],
      ["elm st", [raj!]],
      ["first-time", [raj!]],
      ["buyer", [raj!]],
      ["zoe", [zoe!]],
      ["ZOË", [zoe!]],
      ["zoe\u0308", [zoe!]],
      ["lukas", [zoe!]],
      ["o'brien", [ann!]],
      ["O’Brien", [ann!]],
      ["obrien", [ann!]],
      ["vip", [ann!]],
      ["patil elm", []],
      ["patel xyz", []],
    ];
    for (const [words, expected] of cases) expect(await found(token, words), words).toEqual(sorted(expected));
  });

  it("finds a phone by its digits written any way, and by their first digits", async () => {
    const { token } = await createPrincipal();
    const [a, b, d] = await createContacts(token, [
      { firstName: "Ana", lastName: "One", phone: "(416) 555-0101" },
      { firstName: "Ben", lastName: "Two", phone: "+1 647 555 0199" },
      { firstName: "Dee", lastName: "Three", secondaryPhone: "416.555.0177" },
    ]).then((list) => list.map((c) => c.id));
    const cases: [string, string[]][] = [
      ["(416) 555-0101", [a!]],
      ["416 555 0101", [a!]],
      ["4165550101", [a!]],
      ["416-555-0101", [a!]],
      ["+1 416 555 0101", [a!]],
      ["1-416-555-0101", [a!]],
      ["14165550101", [a!]],
      ["416555", [a!, d!]],
      ["416", [a!, d!]],
      ["6475550199", [b!]],
      ["(647) 555-0199", [b!]],
      ["+1 (647)", [b!]],
      ["Ana (416) 555", [a!]],
      ["5550101", []],
      ["416 555 9999", []],
    ];
    for (const [words, expected] of cases) expect(await found(token, words), words).toEqual(sorted(expected));
  });

  it("reads quotes, *, NEAR, -, :, parentheses and odd Unicode as plain text: a 200 or a 422 naming q, never a 5xx", async () => {
    const { token } = await createPrincipal();
    // An address without digits: a generated one may hold a word starting with "2", which "patel^2 raj" would find.
    const raj = (await createContact(token, { firstName: "Raj", lastName: "Patel", email: "raj.patel@example.test" })).id;
    const plain: [string, string[]][] = [
      ['"raj"', [raj]],
      ["raj*", [raj]],
      ["-raj", [raj]],
      ["raj:patel", [raj]],
      ["(raj) AND (patel)", []],
      ["raj NEAR patel", []],
      ["patel^2 raj", []],
      ['"raj patel"', [raj]],
      ["\u202eraj\u202c", [raj]],
      ["👍", []],
      ["東京", []],
    ];
    for (const [words, expected] of plain) expect(await found(token, words), words).toEqual(sorted(expected));
    // Bytes that are no UTF-8 (a lone surrogate, a stray byte) arrive as U+FFFD: a character like any other.
    for (const raw of ["raj%20%ED%A0%80", "raj%20%FF", "%C0%AF"]) {
      const page = await listPage(token, `q=${raw}`);
      expect(page.pagination.total, raw).toBe(0);
    }
    for (const words of ["***", '"" ()', "-", "\u0000", " ", ""]) {
      const errors = await expectCrmError(await call("GET", `/v1/contacts?${q(words)}`, { token }), 422, "validation_error");
      expect(issuePairs(errors), JSON.stringify(words)).toEqual(["q:no_words"]);
    }
  });

  it("bounds q: a 422 lists every problem of it (too long, too many words) with the other parameters' own", async () => {
    const { token } = await createPrincipal();
    const long = Array.from({ length: 70 }, (_, i) => `w${i}`).join(" ");
    expect(long.length).toBeGreaterThan(200);
    expect(
      issuePairs(await expectCrmError(await call("GET", `/v1/contacts?${q(long)}&limit=0`, { token }), 422, "validation_error")),
    ).toEqual(["limit:too_small", "q:too_big", "q:too_many_words"]);
    expect(
      issuePairs(await expectCrmError(await call("GET", `/v1/contacts?${q("a b c d e f g h i")}`, { token }), 422, "validation_error")),
    ).toEqual(["q:too_many_words"]);
    expect(await found(token, "a b c d e f g h")).toEqual([]);
    for (const path of ["/v1/deals", "/v1/properties"]) {
      expect(issuePairs(await expectCrmError(await call("GET", `${path}?${q(long)}`, { token }), 422, "validation_error"))).toEqual([
        "q:too_big",
        "q:too_many_words",
      ]);
    }
  });

  it("combines with every filter, in the requested sort, paging each match exactly once with an exact total", async () => {
    const p = await createPrincipal();
    const { token } = p;
    const specs: Record<string, unknown>[] = [
      {
        firstName: "Ava",
        lastName: "Marlowe",
        type: "CLIENT",
        status: "ACTIVE",
        source: "WEBSITE",
        leadScore: 80,
        tags: ["vip"],
        assignedTo: p.userId,
      },
      { firstName: "Ben", lastName: "Marlowe", type: "LEAD", status: "ACTIVE", source: "REFERRAL", leadScore: 40 },
      {
        firstName: "Cal",
        lastName: "marlowe",
        type: "CLIENT",
        status: "INACTIVE",
        source: "WEBSITE",
        leadScore: 55,
        tags: ["vip", "investor"],
      },
      { firstName: "Marlowe", lastName: "Diaz", type: "LEAD", status: "ACTIVE", source: "WEBSITE", assignedTo: p.userId },
      {
        firstName: "Eve",
        lastName: "Ng",
        email: `marlowe.fan.${crypto.randomUUID().slice(0, 6)}@example.test`,
        type: "CLIENT",
        status: "ACTIVE",
        leadScore: 95,
      },
      {
        firstName: "Fay",
        lastName: "Ortiz",
        notes: "Met at Marlowe Park",
        type: "VENDOR",
        status: "ACTIVE",
        source: "WEBSITE",
        leadScore: 10,
        tags: ["vip"],
      },
      { firstName: "Gus", lastName: "Park", tags: ["marlowe-club"], type: "LEAD", status: "ACTIVE", leadScore: 60, assignedTo: p.userId },
      { firstName: "Hal", lastName: "Marlowes", type: "CLIENT", status: "ACTIVE", source: "WEBSITE", leadScore: 80 },
      // Not matches: a shorter word, another word, another field's near miss.
      { firstName: "Ida", lastName: "Marlow", type: "CLIENT", status: "ACTIVE", source: "WEBSITE", leadScore: 80, tags: ["vip"] },
      { firstName: "Jon", lastName: "Harlowe", type: "CLIENT", status: "ACTIVE", source: "WEBSITE" },
      { firstName: "Kim", lastName: "Lee", notes: "marl owe", type: "CLIENT", status: "ACTIVE" },
    ];
    const all = await createContacts(token, specs);
    const matching = all.slice(0, 8);
    const mid = all[4]!.createdAt;
    const combos: [string, (c: ContactJson) => boolean, Parameters<typeof sortContacts>[1]][] = [
      ["", () => true, [["createdAt", "desc"]]],
      ["type=CLIENT", (c) => c.type === "CLIENT", [["createdAt", "desc"]]],
      ["status=ACTIVE&source=WEBSITE", (c) => c.status === "ACTIVE" && c.source === "WEBSITE", [["createdAt", "desc"]]],
      ["tags=vip", (c) => c.tags.includes("vip"), [["createdAt", "desc"]]],
      ["tags=vip,investor&sort=lastName:asc", (c) => c.tags.includes("vip") && c.tags.includes("investor"), [["lastName", "asc"]]],
      ["leadScore[gte]=50&sort=leadScore:desc", (c) => (c.leadScore ?? -1) >= 50, [["leadScore", "desc"]]],
      [
        "leadScore[gte]=40&leadScore[lte]=80&sort=leadScore:asc,lastName:desc",
        (c) => c.leadScore !== null && c.leadScore >= 40 && c.leadScore <= 80,
        [
          ["leadScore", "asc"],
          ["lastName", "desc"],
        ],
      ],
      [`createdAt[gte]=${encodeURIComponent(mid)}&sort=createdAt:asc`, (c) => c.createdAt >= mid, [["createdAt", "asc"]]],
      [`createdAt[lte]=${encodeURIComponent(mid)}&sort=updatedAt:desc`, (c) => c.createdAt <= mid, [["updatedAt", "desc"]]],
      [
        `assignedTo=${p.userId}&sort=lastName:desc,createdAt:asc`,
        (c) => c.assignedTo === p.userId,
        [
          ["lastName", "desc"],
          ["createdAt", "asc"],
        ],
      ],
      ["type=VENDOR&status=INACTIVE", (c) => c.type === "VENDOR" && c.status === "INACTIVE", [["createdAt", "desc"]]],
    ];
    for (const [filters, keep, sort] of combos) {
      const expected = sortContacts(matching.filter(keep), sort);
      const { contacts, pages } = await listAll(token, [q("marlowe"), "limit=2", filters].filter(Boolean).join("&"));
      expect(ids(contacts), filters).toEqual(ids(expected));
      for (const page of pages) expect(page.pagination.total, filters).toBe(expected.length);
    }
    // Fields and includes shape the page as without q.
    const page = await listPage(token, `${q("marlowe ava")}&fields=id,lastName&include=activities`);
    expect(page.data).toEqual([{ id: all[0]!.id, lastName: "Marlowe", activities: [] }]);
  });

  it("walks the sort's index when the lead word matches more than the window, with the same answers; the total exact when the list fits the budget", async () => {
    const p = await createPrincipal();
    const db = await tenantDb(p.organizationId);
    const n = HITS_WINDOW + 50;
    // Direct inserts (the index's triggers write the terms as the rows land): a last name from "walker" for each.
    await db
      .prepare(
        `INSERT INTO contacts (id, organization_id, first_name, last_name, email, email_key, type, status, tags, created_at, updated_at)
         WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < ?2 - 1)
         SELECT lower(hex(randomblob(16))), ?1, 'W' || n, 'Walker' || (n * 7 % ?2), 'w' || n || '@walk.test', 'w' || n || '@walk.test', 'LEAD',
                CASE n % 3 WHEN 0 THEN 'INACTIVE' ELSE 'ACTIVE' END, CASE n % 5 WHEN 0 THEN '["tall"]' ELSE '[]' END,
                strftime('%Y-%m-%dT%H:%M:%fZ', 1735689600, 'unixepoch', '+' || n || ' seconds'), strftime('%Y-%m-%dT%H:%M:%fZ', 1735689600, 'unixepoch', '+' || n || ' seconds')
         FROM seq`,
      )
      .bind(p.organizationId, n)
      .run();
    await db
      .prepare(
        `INSERT INTO contact_tags (contact_id, organization_id, tag) SELECT id, organization_id, 'tall' FROM contacts WHERE organization_id = ? AND tags = '["tall"]'`,
      )
      .bind(p.organizationId)
      .run();
    await createContact(p.token, { firstName: "Wally", lastName: "Walkerton", status: "ACTIVE", tags: ["tall"] });
    const expected = async (where: string, order: string) =>
      (
        await db
          .prepare(`SELECT id FROM contacts WHERE organization_id = ? AND last_name LIKE 'walker%' ${where} ORDER BY ${order}`)
          .bind(p.organizationId)
          .all<{ id: string }>()
      ).results.map((r) => r.id);
    const walk = async (query: string) => {
      const { contacts, pages } = await listAll(p.token, `${q("walk")}&limit=100&${query}`);
      return { ids: ids(contacts), totals: [...new Set(pages.map((page) => `${page.pagination.total} ${page.pagination.totalExact}`))] };
    };
    // More rows than the budget: the total counts the matches among the first WALK_BUDGET + 1 (here all of them) and says so.
    const active = await expected("AND status = 'ACTIVE'", "last_name COLLATE NOCASE, id");
    expect(active.length).toBeGreaterThan(WALK_BUDGET + 1);
    expect(await walk("status=ACTIVE&sort=lastName:asc")).toEqual({ ids: active, totals: [`${WALK_BUDGET + 1} false`] });
    const tall = await expected("AND tags LIKE '%tall%'", "created_at DESC, id DESC");
    expect(tall.length).toBeLessThanOrEqual(WALK_BUDGET);
    expect(await walk("tags=tall")).toEqual({ ids: tall, totals: [`${tall.length} true`] });
    // The same set through both plans: a lead word of few matches ("walkerton") and of many ("walk" with "wally").
    expect(await found(p.token, "walkerton")).toEqual(await found(p.token, "walk wally"));
  });

  it("keeps the total exact through updates, tags, bulk updates, the trash, a restore and an erasure", async () => {
    const p = await createPrincipal();
    const { token } = p;
    const [a, b, c, d] = await createContacts(token, [
      { firstName: "Quinn", lastName: "Quenby", phone: "+1 416 555 0131" },
      { firstName: "Bo", lastName: "Quenby" },
      { firstName: "Cy", lastName: "Quenby" },
      { firstName: "Di", lastName: "Other", notes: "Referred by Quenby" },
    ]).then((list) => list.map((x) => x.id));
    expect(await found(token, "quenby")).toEqual(sorted([a!, b!, c!, d!]));
    await updateContact(token, b!, { lastName: "Smith" });
    expect(await found(token, "quenby")).toEqual(sorted([a!, c!, d!]));
    expect((await call("POST", `/v1/contacts/${b}/tags`, { token, body: { tags: ["quenby-fan"] } })).status).toBe(200);
    expect(await found(token, "quenby")).toEqual(sorted([a!, b!, c!, d!]));
    await updateContact(token, b!, { tags: [] });
    expect(await found(token, "quenby")).toEqual(sorted([a!, c!, d!]));
    expect((await call("DELETE", `/v1/contacts/${c}`, { token })).status).toBe(200);
    expect(await found(token, "quenby")).toEqual(sorted([a!, d!]));
    expect((await call("POST", `/v1/contacts/${c}/restore`, { token })).status).toBe(200);
    expect(await found(token, "quenby")).toEqual(sorted([a!, c!, d!]));
    expect(
      (await call("PATCH", "/v1/contacts/bulk", { token, body: { contactIds: [d!], updates: { notes: "No one in particular" } } })).status,
    ).toBe(200);
    expect(await found(token, "quenby")).toEqual(sorted([a!, c!]));
    expect(await found(token, "4165550131")).toEqual([a!]);
    expect((await erase(p, a!)).status).toBe(200);
    expect(await found(token, "quenby")).toEqual([c!]);
    expect(await found(token, "4165550131")).toEqual([]);
  });

  it("counts right after an erasure that stopped half-way and was finished: a rewritten note leaves the total (issue 33)", async () => {
    const p = await createPrincipal();
    const shard = (await env.DB.prepare("SELECT shard FROM organization_shards WHERE organization_id = ?")
      .bind(p.organizationId)
      .first<{ shard: number }>())!.shard;
    const person = await createContact(p.token, { firstName: "Erin", lastName: `Vantablack${crypto.randomUUID().slice(0, 4)}` });
    const friend = await createContact(p.token, {
      firstName: "Fay",
      lastName: "Other",
      notes: `Knows ${person.firstName} ${person.lastName} well`,
    });
    const word = person.lastName.toLowerCase();
    expect(await found(p.token, word)).toEqual(sorted([person.id, friend.id]));
    // The erasure's rewrite of the friend's note fails: the person is gone, the note still names them.
    const plan = new FaultPlan();
    const step = plan.step.bind(plan);
    let failed = false;
    plan.step = (s, run) =>
      !failed && /update contacts set notes/.test(s.what)
        ? ((failed = true), Promise.reject(new Error("injected: D1 batch failed")))
        : step(s, run);
    const binding = `DB_SHARD_${shard}`;
    expect((await erase(p, person.id, { [binding]: faultyD1(shardDatabase(env, shard), binding, plan) })).status).toBe(500);
    expect(failed).toBe(true);
    expect(await found(p.token, word)).toEqual([friend.id]);
    // The retry rewrites it: the search, and its total, no longer find it.
    expect((await erase(p, person.id)).status).toBe(200);
    expect((await getContact(p.token, friend.id)).notes).toBe("Knows [erased] well");
    expect(await found(p.token, word)).toEqual([]);
  });

  it("answers only the organization's own records", async () => {
    const mine = await createPrincipal();
    const theirs = await createPrincipal();
    await createContact(theirs.token, { firstName: "Solo", lastName: "Zanzibar" });
    await createDeal(theirs.token, { title: "Zanzibar villa" });
    await createProperty(theirs.token, { mlsId: "ZANZ1" });
    expect(await found(mine.token, "zanzibar")).toEqual([]);
    expect((await json(await call("GET", `/v1/deals?${q("zanzibar")}`, { token: mine.token }))).pagination.total).toBe(0);
    expect((await listProperties(mine.token, q("zanz"))).pagination.total).toBe(0);
  });

  it("follows an organization to its new shard: the index rebuilt there from what the move copied, gone from the old one", async () => {
    const p = await createPrincipal({ shard: 0 });
    const [a, b, c] = await createContacts(p.token, [
      { firstName: "Ravi", lastName: "Ravel", phone: "416-555-0150", tags: ["bolero"] },
      { firstName: "Rae", lastName: "Ravel" },
      { firstName: "Ron", lastName: "Ravel", notes: "Composer" },
    ]).then((list) => list.map((x) => x.id));
    const deal = await createDeal(p.token, { title: "Ravel condo", contactId: a });
    const property = await createProperty(p.token, {
      mlsId: "RAV-1",
      address: { street: "1 Ravel Ave", city: "Toronto", state: "ON", zipCode: "M5V 2T6" },
    });
    const before = await indexRows(shardDatabase(env, 0), p.organizationId);
    expect(before.length).toBeGreaterThan(0);

    // Copy every table, then write on the old shard before the fence: the fenced pass must carry the changes.
    await startMove(env, p.organizationId, 1);
    let progress = await stepMove(env, p.organizationId, { maxBatches: 1, drainMs: 0 });
    while (progress.tablesDone < progress.tables) progress = await stepMove(env, p.organizationId, { maxBatches: 1, drainMs: 0 });
    expect(progress.phase).toBe("copying");
    await updateContact(p.token, b!, { lastName: "Debussy" });
    expect((await call("DELETE", `/v1/contacts/${c}`, { token: p.token })).status).toBe(200);
    const added = (await createContact(p.token, { firstName: "Remy", lastName: "Ravel" })).id;
    while (progress.phase !== "done") progress = await stepMove(env, p.organizationId, { drainMs: 0 });

    expect(await indexRows(shardDatabase(env, 0), p.organizationId)).toEqual([]);
    expect(await found(p.token, "ravel"), "ravel").toEqual(sorted([a!, added]));
    expect(await found(p.token, "debussy"), "debussy").toEqual([b!]);
    expect(await found(p.token, "416 555 0150"), "phone").toEqual([a!]);
    expect((await json(await call("GET", `/v1/deals?${q("ravel")}`, { token: p.token }))).data.map((d: { id: string }) => d.id)).toEqual([
      deal.id,
    ]);
    expect(await walkIds(p.token, q("rav ave"))).toEqual([property.id]);
    // Exactly what the records on the new shard hold, and nothing else.
    const contacts = (await listAll(p.token, "limit=100")).contacts;
    const expected = [
      ...contacts.flatMap((x) => contactTerms(x).map((t) => `contact ${x.id} ${t}`)),
      ...termsOf("Ravel condo").map((t) => `deal ${deal.id} ${t}`),
      ...termsOf("1 Ravel Ave  Toronto ON M5V 2T6 RAV-1").map((t) => `property ${property.id} ${t}`),
    ].sort();
    expect(await indexRows(shardDatabase(env, 1), p.organizationId)).toEqual(expected);
    // A contact in the trash comes back with its words on the new shard.
    expect((await call("POST", `/v1/contacts/${c}/restore`, { token: p.token })).status).toBe(200);
    expect(await found(p.token, "ravel")).toEqual(sorted([a!, c!, added]));
  });
});

describe("GET /v1/deals?q= (by title)", () => {
  it("finds deals by the start of a word of their title, with the filters, the sort and the cursor, through the trash", async () => {
    const { token } = await createPrincipal();
    const contact = (await createContact(token)).id;
    const make = async (title: string, type: string, amount: number) =>
      (await createDeal(token, { title, type, amount, contactId: contact })).id;
    const condo = await make("Condo purchase on Bloor", "PURCHASE", 700000);
    const bloor = await make("Bloor St lease", "LEASE", 3000);
    await make("House sale on Elm", "SALE", 1200000);
    const condominium = await make("Condominium listing — Bloor", "SALE", 900000);
    const deals = async (query: string) => {
      const ids: string[] = [];
      const totals = new Set<number>();
      let cursor: string | null = null;
      do {
        const body: { data: { id: string }[]; pagination: { total: number; nextCursor: string | null } } = await json(
          await call("GET", `/v1/deals?${query}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { token }),
        );
        ids.push(...body.data.map((d) => d.id));
        totals.add(body.pagination.total);
        cursor = body.pagination.nextCursor;
      } while (cursor);
      return { ids, totals: [...totals] };
    };
    expect(await deals(`${q("condo")}&sort=amount:desc`)).toEqual({ ids: [condominium, condo], totals: [2] });
    expect(await deals(`${q("BLOOR")}&sort=amount:asc`)).toEqual({ ids: [bloor, condo, condominium], totals: [3] });
    expect(await deals(`${q("bloor condo")}&type=SALE`)).toEqual({ ids: [condominium], totals: [1] });
    expect(await deals(`${q("bloor")}&amount[gte]=5000&sort=createdAt:asc`)).toEqual({ ids: [condo, condominium], totals: [2] });
    expect((await call("PUT", `/v1/deals/${condo}`, { token, body: { title: "Townhouse on Bloor" } })).status).toBe(200);
    expect(await deals(`${q("condo")}&sort=amount:desc`)).toEqual({ ids: [condominium], totals: [1] });
    expect((await call("DELETE", `/v1/deals/${condominium}`, { token })).status).toBe(200);
    expect(await deals(q("bloor"))).toEqual({ ids: [bloor, condo], totals: [2] });
    expect((await call("POST", `/v1/deals/${condominium}/restore`, { token })).status).toBe(200);
    expect(await deals(q("bloor"))).toEqual({ ids: [condominium, bloor, condo], totals: [3] });
  });
});

describe("GET /v1/properties?q= (by address and MLS id)", () => {
  it("finds listings by their street, city, zip code or MLS id, with the filters, the sort and the cursor, through the trash", async () => {
    const { token } = await createPrincipal();
    const make = async (street: string, city: string, zipCode: string, listPrice: number, mlsId?: string) =>
      (
        await createProperty(token, {
          ...(mlsId ? { mlsId } : {}),
          address: { street, city, state: "ON", zipCode },
          listing: { listPrice },
        })
      ).id;
    const elmToronto = await make("12 Elm St", "Toronto", "M5V 2T6", 900000, "C1234567");
    const elmOakville = await make("400 Elm Ave", "Oakville", "L6J 1A1", 1500000, "W7654321");
    const oak = await make("9 Oak St", "Toronto", "M4C 1B5", 700000);
    const page = async (query: string) => {
      const body = await listProperties(token, query);
      return { ids: body.data.map((x) => x.id), total: body.pagination.total };
    };
    expect(await walkIds(token, `${q("elm")}&sort=listPrice:asc`, 1)).toEqual([elmToronto, elmOakville]);
    expect(await page(`${q("elm")}&sort=listPrice:desc`)).toEqual({ ids: [elmOakville, elmToronto], total: 2 });
    expect(await page(`${q("elm toronto")}`)).toEqual({ ids: [elmToronto], total: 1 });
    expect(await page(`${q("toronto")}&listPrice[lte]=800000`)).toEqual({ ids: [oak], total: 1 });
    expect(await page(`${q("st")}&city=toronto&sort=listPrice:asc`)).toEqual({ ids: [oak, elmToronto], total: 2 });
    expect(await page(q("c123"))).toEqual({ ids: [elmToronto], total: 1 });
    expect(await page(q("W7654321"))).toEqual({ ids: [elmOakville], total: 1 });
    expect(await page(q("m5v 2t"))).toEqual({ ids: [elmToronto], total: 1 });
    expect((await call("PUT", `/v1/properties/${oak}`, { token, body: { address: { street: "9 Elmwood Cres" } } })).status).toBe(200);
    expect(await page(`${q("elm")}&sort=listPrice:asc`)).toEqual({ ids: [oak, elmToronto, elmOakville], total: 3 });
    expect((await call("DELETE", `/v1/properties/${elmOakville}`, { token })).status).toBe(200);
    expect(await page(`${q("elm")}&sort=listPrice:asc`)).toEqual({ ids: [oak, elmToronto], total: 2 });
    expect((await call("POST", `/v1/properties/${elmOakville}/restore`, { token })).status).toBe(200);
    expect(await page(`${q("elm")}&sort=listPrice:asc`)).toEqual({ ids: [oak, elmToronto, elmOakville], total: 3 });
  });
});
