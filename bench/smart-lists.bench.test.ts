// A smart list's count at scale (issue 46): 100,000 contacts in one organization against 1,000 in another, same run.
import { beforeAll, expect, it } from "vitest";
import { createPrincipal, tenantDb, type TestPrincipal } from "../test/helpers/factories";
import { countingApp, measureInterleaved, printTable } from "./harness";

const BIG = 100_000;
const SMALL = 1_000;
let big: TestPrincipal;
let small: TestPrincipal;

/**
 * `n` contacts in SQL (a recursive CTE), as bench/contacts.bench.test.ts seeds them, with the counters the app keeps: a
 * fifth unassigned, half never contacted (the others over the last 60 days), one in ten with an open task.
 */
async function seed(p: TestPrincipal, n: number) {
  const base = Date.UTC(2025, 0, 1);
  const db = await tenantDb(p.organizationId);
  await db.batch([
    db
      .prepare(
        `INSERT INTO contacts (id, organization_id, first_name, last_name, email, email_key, type, status, source, lead_score, tags, assigned_to, last_contacted_at, created_at, updated_at)
       WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < ?2 - 1)
       SELECT lower(hex(randomblob(16))), ?1, 'First' || n, 'Last' || n, 'c' || n || '@bench.test', 'c' || n || '@bench.test',
              CASE n % 5 WHEN 0 THEN 'LEAD' WHEN 1 THEN 'CLIENT' ELSE 'PAST_CLIENT' END, 'ACTIVE', 'WEBSITE', n % 101, '[]',
              CASE n % 5 WHEN 0 THEN NULL ELSE ?4 END,
              CASE n % 2 WHEN 0 THEN NULL ELSE strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || (n % 60) || ' days') END,
              strftime('%Y-%m-%dT%H:%M:%fZ', ?3 / 1000, 'unixepoch', '+' || n || ' seconds'),
              strftime('%Y-%m-%dT%H:%M:%fZ', ?3 / 1000, 'unixepoch', '+' || n || ' seconds')
       FROM seq`,
      )
      .bind(p.organizationId, n, base, p.userId),
    db
      .prepare(
        `INSERT INTO tasks (id, organization_id, title, type, priority, contact_id, completed, created_at, updated_at)
         SELECT lower(hex(randomblob(16))), organization_id, 'Call', 'call', 'MEDIUM', id, 0, created_at, created_at FROM contacts
         WHERE organization_id = ? AND CAST(substr(first_name, 6) AS INTEGER) % 10 = 3`,
      )
      .bind(p.organizationId),
    db
      .prepare("INSERT INTO resource_counters (organization_id, resource, total, version) VALUES (?, 'contacts', ?, 1)")
      .bind(p.organizationId, n),
    db
      .prepare(
        `INSERT INTO contact_facet_counts (organization_id, type, status, source, assigned_to, total)
         SELECT organization_id, type, status, IFNULL(source, ''), IFNULL(assigned_to, ''), COUNT(*) FROM contacts WHERE organization_id = ?
         GROUP BY type, status, IFNULL(source, ''), IFNULL(assigned_to, '')`,
      )
      .bind(p.organizationId),
  ]);
}

const QUERIES = {
  "new leads never contacted, unassigned": { type: "LEAD", lastContactedAt: "never", assignedTo: "none" },
  "unassigned (facet counts)": { assignedTo: "none" },
  "not contacted in 30 days (relative)": { "lastContactedAt[lte]": "-P30D" },
  "with an open task": { hasOpenTask: "true" },
} as const;

beforeAll(async () => {
  big = await createPrincipal({ shard: 0 });
  small = await createPrincipal({ shard: 0 });
  const started = performance.now();
  await seed(big, BIG);
  await seed(small, SMALL);
  console.log(`seeded ${BIG} + ${SMALL} contacts in ${((performance.now() - started) / 1000).toFixed(1)} s`);
});

it("a smart list's count: 100k contacts against 1k", { timeout: 600_000 }, async () => {
  const app = countingApp();
  const lists: Record<string, { big: string; small: string }> = {};
  for (const [name, query] of Object.entries(QUERIES)) {
    const make = async (who: TestPrincipal) =>
      ((await app.send("POST", "/v1/smart-lists", who.token, { name, query })) as { data: { id: string; count: number } }).data;
    const [b, s] = [await make(big), await make(small)];
    lists[name] = { big: b.id, small: s.id };
    console.log(`${name}: ${b.count} of ${BIG}, ${s.count} of ${SMALL}`);
  }
  const scenarios = Object.keys(QUERIES).flatMap((name) => [
    { name: `1k: ${name}`, fn: () => app.get(`/v1/smart-lists/${lists[name]!.small}`, small.token) },
    { name: `100k: ${name}`, fn: () => app.get(`/v1/smart-lists/${lists[name]!.big}`, big.token) },
  ]);
  const figures = await measureInterleaved(scenarios, { rounds: 10, perSample: 3, warmup: 2 });
  const ratios: string[] = [];
  for (let i = 0; i < figures.length; i += 2) {
    printTable(`GET /v1/smart-lists/{id}: ${Object.keys(QUERIES)[i / 2]}`, [figures[i]!, figures[i + 1]!], figures[i]!);
    ratios.push(`${Object.keys(QUERIES)[i / 2]}: ${(figures[i + 1]!.medianMs / figures[i]!.medianMs).toFixed(2)}x`);
  }
  // The list of every list with its count: one batch for all of them.
  const [pageSmall, pageBig] = await measureInterleaved(
    [
      { name: "1k: GET /v1/smart-lists (4 lists)", fn: () => app.get("/v1/smart-lists", small.token) },
      { name: "100k: GET /v1/smart-lists (4 lists)", fn: () => app.get("/v1/smart-lists", big.token) },
    ],
    { rounds: 10, perSample: 3, warmup: 2 },
  );
  printTable("GET /v1/smart-lists", [pageSmall!, pageBig!], pageSmall);
  ratios.push(`GET /v1/smart-lists (4 lists): ${(pageBig!.medianMs / pageSmall!.medianMs).toFixed(2)}x`);
  console.log(`ratios 100k/1k (median; target <= 1.3x):\n  ${ratios.join("\n  ")}`);

  // The counts are exact.
  const shard = await tenantDb(big.organizationId);
  const counted = (await shard
    .prepare(
      "SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ? AND type = 'LEAD' AND last_contacted_at IS NULL AND assigned_to IS NULL",
    )
    .bind(big.organizationId)
    .first<{ n: number }>())!.n;
  const shown = (
    (await app.get(`/v1/smart-lists/${lists["new leads never contacted, unassigned"]!.big}`, big.token)) as { data: { count: number } }
  ).data.count;
  expect(shown).toBe(counted);
});
