// Search at scale (issues 33 and 40): each shape of query in an organization of 100,000 contacts against one of 1,000
// on the same shard, in one run: a name prefix matching 50, eight one-letter words matching nobody, a word matching
// everyone, beside the plain list; warm (the total cached) and right after a write (the total counted again). Also the
// plans the page takes, and what seeding costs with the index's triggers.
import { beforeAll, expect, it } from "vitest";
import { listSql } from "../src/contacts/list";
import { HITS_WINDOW, WALK_BUDGET } from "../src/crm/search";
import { ContactListQuery } from "../src/contacts/schemas";
import { createPrincipal, tenantDb, type TestPrincipal } from "../test/helpers/factories";
import { countingApp, type Figure, helloWorld, measureInterleaved, printTable } from "./harness";

const BIG = 100_000;
const SMALL = 1_000;
/** Contacts per last name: each organization has n / 50 last names, so a last name's prefix matches 50 contacts. */
const PER_NAME = 50;
const CHUNK = 10_000;
let big: TestPrincipal;
let small: TestPrincipal;

/**
 * Letters no other seeded word starts with (names start with F and K, e-mails with c, "bench" and "test", notes with
 * c a t h o e w s and digits): each contact's notes get a word starting with seven of them, all but the (n % 8)th.
 * So each of the eight one-letter words matches 7/8 of the contacts (875 at 1k, selective; 87,500 at 100k, far past
 * HITS_WINDOW) and no contact has all eight.
 */
const LETTERS = ["d", "g", "j", "m", "p", "q", "u", "y"];
const NOBODY = LETTERS.join("%20");
const lettersSql = LETTERS.map((l, i) => `CASE n % 8 WHEN ${i} THEN '' ELSE ' ${l}' || char(97 + (n + ${i}) % 26) || 'n' END`).join(" || ");

/** A last name as SQL of the number `x` (< 17,576): "K" and three letters from x, then "ski"; its first four letters name it alone. */
const lastNameSql = (x: string) => `'K' || char(97 + (${x}) / 676 % 26) || char(97 + (${x}) / 26 % 26) || char(97 + (${x}) % 26) || 'ski'`;
const lastNameOf = (x: number) =>
  `K${String.fromCharCode(97 + (Math.floor(x / 676) % 26), 97 + (Math.floor(x / 26) % 26), 97 + (x % 26))}ski`;

/**
 * Seeds `n` contacts with direct INSERTs on the shard (a recursive CTE, CHUNK rows a statement, in one batch): names,
 * an e-mail, a phone, a note (a sentence on every third, seven of LETTERS' words on all) and a tag on every tenth, so
 * each has the dozen or two terms a real one with notes has; the index's triggers write the terms as the rows land,
 * as they do for the API's writes.
 */
async function seed(organizationId: string, n: number) {
  const base = Date.UTC(2025, 0, 1);
  const db = await tenantDb(organizationId);
  const names = n / PER_NAME;
  const chunks = Array.from({ length: Math.ceil(n / CHUNK) }, (_, i) => i * CHUNK);
  await db.batch([
    ...chunks.map((from) =>
      db
        .prepare(
          `INSERT INTO contacts (id, organization_id, first_name, last_name, email, email_key, phone, type, status, source, lead_score, tags, notes, created_at, updated_at)
           WITH RECURSIVE seq(n) AS (SELECT ?4 UNION ALL SELECT n + 1 FROM seq WHERE n < min(?4 + ${CHUNK}, ?2) - 1)
           SELECT lower(hex(randomblob(16))), ?1, 'Fn' || char(97 + n % 13) || char(97 + n / 13 % 17), ${lastNameSql(`n % ${names}`)}, 'c' || n || '@bench.test', 'c' || n || '@bench.test',
                  '(416) 555-' || printf('%04d', n % 10000),
                  CASE n % 5 WHEN 0 THEN 'LEAD' WHEN 1 THEN 'CLIENT' WHEN 2 THEN 'PAST_CLIENT' WHEN 3 THEN 'REFERRAL' ELSE 'VENDOR' END,
                  CASE n % 4 WHEN 0 THEN 'INACTIVE' ELSE 'ACTIVE' END, 'WEBSITE', n % 101,
                  CASE n % 10 WHEN 0 THEN '["vip"]' ELSE '[]' END,
                  trim(CASE n % 3 WHEN 0 THEN 'Called about the house on Elm ' || (n % 400) || ', wants a second showing' ELSE '' END || ${lettersSql}),
                  strftime('%Y-%m-%dT%H:%M:%fZ', ?3 / 1000, 'unixepoch', '+' || n || ' seconds'),
                  strftime('%Y-%m-%dT%H:%M:%fZ', ?3 / 1000, 'unixepoch', '+' || n || ' seconds')
           FROM seq`,
        )
        .bind(organizationId, n, base, from),
    ),
    db
      .prepare("INSERT INTO resource_counters (organization_id, resource, total, version) VALUES (?, 'contacts', ?, 1)")
      .bind(organizationId, n),
  ]);
}

beforeAll(async () => {
  // One shard for both: the 1k organization's terms sit in the same index as the 100k one's.
  big = await createPrincipal({ shard: 0 });
  small = await createPrincipal({ shard: 0 });
  const started = performance.now();
  await seed(big.organizationId, BIG);
  const bigSeconds = (performance.now() - started) / 1000;
  await seed(small.organizationId, SMALL);
  const db = await tenantDb(big.organizationId);
  const terms = await db
    .prepare("SELECT COUNT(*) AS n FROM search_terms WHERE organization_id = ?")
    .bind(big.organizationId)
    .first<{ n: number }>();
  console.log(
    `seeded ${BIG} contacts in ${bigSeconds.toFixed(1)} s with the search triggers (${terms!.n} terms, ${(terms!.n / BIG).toFixed(1)} a contact), then ${SMALL}`,
  );
});

/** One row per shape: its 1k and 100k figures side by side, the ratio, and the D1 round trips of each. */
function printPairs(title: string, rows: { shape: string; small: Figure; big: Figure; trips: [number, number] }[]) {
  const lines = rows.map(
    (r) =>
      `  ${r.shape.padEnd(44)} 1k ${r.small.medianMs.toFixed(2).padStart(7)} ms (p95 ${r.small.p95Ms.toFixed(2).padStart(7)})  100k ${r.big.medianMs.toFixed(2).padStart(7)} ms (p95 ${r.big.p95Ms.toFixed(2).padStart(7)})  ${(r.big.medianMs / r.small.medianMs).toFixed(2)}x  trips ${r.trips[0]}/${r.trips[1]}`,
  );
  console.log([`\n== ${title} (median, 100k/1k, D1 round trips 1k/100k)`, ...lines].join("\n"));
}

it("GET /v1/contacts?q= costs what the query asks, not what the organization holds: every shape flat from 1k to 100k", async () => {
  const app = countingApp();
  const prefix = lastNameOf(7).slice(0, 4);
  const shapes = [
    ["plain list (no q)", "/v1/contacts?limit=25"],
    ["?q=<last name prefix> (50 match)", `/v1/contacts?q=${prefix}&limit=25`],
    ["?q=d g j m p q u y (8 one-letter words, none)", `/v1/contacts?q=${NOBODY}&limit=25`],
    ["?q=bench (every contact)", "/v1/contacts?q=bench&limit=25"],
  ] as const;
  // What each shape answers at each size: the selective ones exactly, the broad ones within the budget.
  for (const [who, n] of [
    [small, SMALL],
    [big, BIG],
  ] as const) {
    const prefixPage = await app.get<{ pagination: { total: number; totalExact: boolean } }>(shapes[1][1], who.token);
    expect(prefixPage.pagination).toMatchObject({ total: PER_NAME, totalExact: true });
    const nobody = await app.get<{ data: unknown[]; pagination: { total: number; totalExact: boolean; hasMore: boolean } }>(
      shapes[2][1],
      who.token,
    );
    expect(nobody.data).toEqual([]);
    expect(nobody.pagination).toMatchObject(
      n > WALK_BUDGET ? { total: 0, totalExact: false, hasMore: true } : { total: 0, totalExact: true, hasMore: false },
    );
    const everyone = await app.get<{ data: unknown[]; pagination: { total: number; totalExact: boolean } }>(shapes[3][1], who.token);
    expect(everyone.data).toHaveLength(25);
    expect(everyone.pagination).toMatchObject(
      n > WALK_BUDGET + 1 ? { total: WALK_BUDGET + 1, totalExact: false } : { total: n, totalExact: true },
    );
  }
  const db = await tenantDb(big.organizationId);
  const d = await db
    .prepare(
      "SELECT COUNT(DISTINCT record_id) AS n FROM search_terms WHERE organization_id = ? AND kind = 'contact' AND term >= 'd' AND term < 'e'",
    )
    .bind(big.organizationId)
    .first<{ n: number }>();
  expect(d!.n).toBeGreaterThan(HITS_WINDOW);

  const bump = (who: TestPrincipal) =>
    db
      .prepare("UPDATE resource_counters SET version = version + 1 WHERE organization_id = ? AND resource = 'contacts'")
      .bind(who.organizationId)
      .run();
  const tripsOf = async (fn: () => Promise<unknown>) => {
    await fn();
    app.reset();
    await fn();
    return app.trips();
  };
  const warm = shapes.flatMap(([shape, path]) =>
    [small, big].map((who) => ({ name: `${who === small ? "1k" : "100k"} ${shape}`, fn: () => app.get(path, who.token) })),
  );
  // Right after a write the total is counted again (the contacts version moved); the bump is in both sides' figures.
  const cold = shapes.slice(1).flatMap(([shape, path]) =>
    [small, big].map((who) => ({
      name: `${who === small ? "1k" : "100k"} ${shape}`,
      fn: async () => (await bump(who), await app.get(path, who.token)),
    })),
  );
  const warmTrips: number[] = [];
  for (const s of warm) warmTrips.push(await tripsOf(s.fn));
  const coldTrips: number[] = [];
  for (const s of cold) coldTrips.push(await tripsOf(s.fn));
  const floor = await helloWorld();
  const warmFigures = await measureInterleaved(warm, { rounds: 20, perSample: 5, warmup: 5 });
  const coldFigures = await measureInterleaved(cold, { rounds: 20, perSample: 5, warmup: 5 });

  const pairs = (figures: Figure[], trips: number[], names: readonly (readonly [string, string])[]) =>
    names.map(([shape], i) => ({
      shape,
      small: figures[2 * i]!,
      big: figures[2 * i + 1]!,
      trips: [trips[2 * i]!, trips[2 * i + 1]!] as [number, number],
    }));
  const warmRows = pairs(warmFigures, warmTrips, shapes);
  const coldRows = pairs(coldFigures, coldTrips, shapes.slice(1));
  printTable("floor of this run", [floor]);
  printPairs(`contacts search, warm (total cached), WALK_BUDGET ${WALK_BUDGET}`, warmRows);
  printPairs("contacts search, first request after a write (total counted)", coldRows);
  for (const row of warmRows) expect(row.big.medianMs / row.small.medianMs, row.shape).toBeLessThanOrEqual(1.3);

  // The broad plan: the list's index walked as a co-routine under the budget's LIMIT, each row tested on the words.
  const { sql, params } = listSql(big.organizationId, ContactListQuery.parse({ q: LETTERS.join(" ") }));
  const plan = (
    await db
      .prepare(`EXPLAIN QUERY PLAN ${sql}`)
      .bind(...params)
      .all<{ detail: string }>()
  ).results.map((r) => r.detail);
  console.log(`EXPLAIN QUERY PLAN (eight one-letter words):\n  ${plan.join("\n  ")}`);
  expect(plan.join(" ")).toMatch(/CO-ROUTINE c .*SEARCH c USING INDEX contacts_org_created_idx \(organization_id=\?\)/);
});

it("GET /v1/contacts?q= stays flat from 1k to 100k contacts", async () => {
  const app = countingApp();
  // The same last name's prefix in both: the 7th name ("Kaah…"), 50 contacts each.
  const prefix = lastNameOf(7).slice(0, 4);
  for (const who of [small, big]) {
    const body = await app.get(`/v1/contacts?q=${prefix}&limit=25`, who.token);
    expect(body.pagination.total).toBe(PER_NAME);
  }
  const scenarios = [
    ["1k org: ?q=<last name prefix> (50 match; baseline)", `/v1/contacts?q=${prefix}&limit=25`, small],
    ["100k org: ?q=<last name prefix> (50 match)", `/v1/contacts?q=${prefix}&limit=25`, big],
    ["100k org: ?q=<prefix>&type=CLIENT&sort=lastName:asc", `/v1/contacts?q=${prefix}&type=CLIENT&sort=lastName:asc&limit=25`, big],
    ["100k org: ?q=<prefix> <first name prefix> (two words)", `/v1/contacts?q=${prefix}%20fn&limit=25`, big],
    ["100k org: ?q=416 555 0007 (phone, 10 match)", `/v1/contacts?q=416%20555%200007&limit=25`, big],
  ] as const;
  const trips: Record<string, number> = {};
  for (const [name, path, who] of scenarios) {
    await app.get(path, who.token); // fills the cached total
    app.reset();
    await app.get(path, who.token);
    trips[name] = app.trips();
  }
  const floor = await helloWorld();
  const [baseline, ...figures] = await measureInterleaved(
    scenarios.map(([name, path, who]) => ({ name, fn: () => app.get(path, who.token) })),
  );

  // The first search after a write counts its total again (the contacts version moved): 50 lookups either way.
  const shard = await tenantDb(big.organizationId);
  const bump = (who: TestPrincipal) =>
    shard
      .prepare("UPDATE resource_counters SET version = version + 1 WHERE organization_id = ? AND resource = 'contacts'")
      .bind(who.organizationId)
      .run();
  const [coldSmall, cold] = await measureInterleaved(
    [
      {
        name: "1k org: ?q=<prefix> right after a write",
        fn: async () => (await bump(small), await app.get(`/v1/contacts?q=${prefix}`, small.token)),
      },
      {
        name: "100k org: ?q=<prefix> right after a write",
        fn: async () => (await bump(big), await app.get(`/v1/contacts?q=${prefix}`, big.token)),
      },
    ],
    { rounds: 20, perSample: 5, warmup: 5 },
  );

  printTable("contacts search, 100k organization against the 1k baseline", [floor, baseline!, ...figures], baseline);
  printTable("first search after a write, 100k organization against the 1k one", [coldSmall!, cold!], coldSmall);
  console.log("D1 round trips per request (auth + list):", JSON.stringify(trips, null, 1));
  const ratio = figures[0]!.medianMs / baseline!.medianMs;
  const worst = Math.max(...figures.map((f) => f.medianMs / baseline!.medianMs));
  console.log(
    `search 100k/1k (median): ${ratio.toFixed(2)}x (target <= 1.3x); worst of the 100k searches ${worst.toFixed(2)}x; right after a write ${(cold!.medianMs / coldSmall!.medianMs).toFixed(2)}x`,
  );
  expect(ratio).toBeLessThanOrEqual(1.3);

  // The plan: the lead word's range of the index, each hit looked up by id; the walk arm is not opened (LIMIT 0).
  const { sql, params } = listSql(big.organizationId, ContactListQuery.parse({ q: prefix, type: "CLIENT", sort: "lastName:asc" }));
  const plan = (
    await shard
      .prepare(`EXPLAIN QUERY PLAN ${sql}`)
      .bind(...params)
      .all<{ detail: string }>()
  ).results.map((r) => r.detail);
  console.log(`EXPLAIN QUERY PLAN (q + type + lastName sort):\n  ${plan.join("\n  ")}`);
  expect(plan.join(" ")).toMatch(/SEARCH qt USING PRIMARY KEY \(organization_id=\? AND kind=\? AND term>\? AND term<\?\)/);
  expect(plan.join(" ")).toMatch(/SEARCH c USING INDEX sqlite_autoindex_contacts_1 \(id=\?\)/);
});
