// CRM deals at scale (issue 10): 50,000 deals in one organization against 1,000 in another, same run.
import { env } from "cloudflare:workers";
import { beforeAll, expect, it } from "vitest";
import { listSql } from "../src/deals/list";
import { TOP_PERFORMERS } from "../src/deals/pipeline";
import { analyticsSql, backfillRollupsSql } from "../src/deals/rollups";
import { Deal, DEAL_STAGES, DealAnalytics, DealListQuery, type DealStage, Pipeline, STAGE_PROBABILITY } from "../src/deals/schemas";
import { addMembers } from "../src/shards/placement";
import { createPrincipal, tenantDb, type TestPrincipal } from "../test/helpers/factories";
import { countingApp, helloWorld, measure, measureInterleaved, printTable } from "./harness";

const BIG = 50_000;
const SMALL = 1_000;
let big: TestPrincipal;
let small: TestPrincipal;
/** The shard both organizations live on. */
let shard: D1Database;

/** The agents deals are assigned to, per organization (users of that organization); agent 0 carries about a fifth of the deals. */
const AGENT_NAMES = ["Avery Brooks", "Jordan Lee", "Riley Chen", "Morgan Diaz", "Casey Patel", "Taylor Kim", "Jamie Novak", "Quinn Silva"];
const agents = new Map<TestPrincipal, string[]>();

/** Share of deals (percent) per stage: most open, early stages the fullest; 12% won, 8% lost. */
const STAGE_WEIGHTS: Record<DealStage, number> = {
  LEAD: 20,
  QUALIFIED: 14,
  APPOINTMENT: 12,
  NEGOTIATION: 10,
  CONTRACT: 7,
  INSPECTION: 5,
  APPRAISAL: 4,
  FINANCING: 4,
  CLOSING: 4,
  CLOSED: 12,
  LOST: 8,
};
/** Stages from CONTRACT on carry a closing date (a target date before CLOSED, the day it closed in CLOSED). */
const DATED_STAGES: DealStage[] = ["CONTRACT", "INSPECTION", "APPRAISAL", "FINANCING", "CLOSING"];
const TWO_YEARS_S = 730 * 86_400;

const NEGOTIATION_MIN = 300_000;
const NOTHING_MIN = 99_999_999_999;

/**
 * Seeds `n` deals in SQL itself (a recursive CTE), then what the app keeps beside them: the per-stage figures
 * (deal_stage_stats, one GROUP BY over the seeded rows), the list counter, and the stage history (every deal
 * created in LEAD; every deal elsewhere moved there once, CLOSED and LOST ones at the time they were decided).
 * Spread comes from multiplicative hashes of the row number modulo different primes (deterministic, so a value read
 * twice in the inlined CTEs is the same value). created_at spreads the rows evenly over the two years before `now`
 * in insertion order, as the app writes them (a deal is inserted when it is created).
 */
async function seed(who: TestPrincipal, n: number, nowS: number) {
  const organizationId = who.organizationId;
  const ids = AGENT_NAMES.map(() => crypto.randomUUID().replaceAll("-", ""));
  agents.set(who, ids);
  let cum = 0;
  const stageCase = `CASE ${DEAL_STAGES.map((s) => `WHEN sk < ${(cum += STAGE_WEIGHTS[s])} THEN '${s}'`).join(" ")} END`;
  expect(cum).toBe(100);
  const probabilities = DEAL_STAGES.map((s) => `('${s}', ${STAGE_PROBABILITY[s]})`).join(", ");
  const at = (seconds: string) => `strftime('%Y-%m-%dT%H:%M:%fZ', ${seconds} + (k % 1000) / 1000.0, 'unixepoch')`;
  const nowIso = new Date(nowS * 1000).toISOString();
  // The agents are members like any other: the directory and the shard's copy (src/shards/placement.ts).
  await addMembers(
    env,
    ids.map((id, i) => ({ id, organizationId, email: `agent${i}@bench.test`, name: AGENT_NAMES[i]!, createdAt: nowIso })),
  );
  await shard.batch([
    shard
      .prepare(
        `INSERT INTO deals (id, organization_id, title, description, type, stage, status, amount, commission, contact_id, property_id, assigned_to, team_members,
         timeline, closing_date, probability, source, notes, tags, created_at, updated_at, last_activity_at, closed_at, decided_at, version)
       WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < ?2 - 1),
       probs(pstage, p) AS (VALUES ${probabilities}),
       a AS (
         SELECT n,
           (n * 16807 % 1000003) % 100 AS tk,
           (n * 69621 % 999983) % 100 AS sk,
           (n * 48271 % 999959) % 100 AS hk,
           (n * 40503 % 65521) % 100 AS ak,
           (n * 92717 % 1000033) / 1000033.0 AS u1,
           (n * 27127 % 999931) AS k,
           ?3 - ${TWO_YEARS_S} + n * (${TWO_YEARS_S} / ?2) + (n * 27127 % 999931) % 600 AS created_s
         FROM seq
       ),
       b AS (
         SELECT a.*,
           CASE WHEN tk < 45 THEN 'SALE' WHEN tk < 80 THEN 'PURCHASE' WHEN tk < 92 THEN 'LEASE' ELSE 'RENTAL' END AS type,
           ${stageCase} AS stage,
           CASE WHEN ak < 5 THEN NULL WHEN ak < 25 THEN 0 WHEN ak < 42 THEN 1 WHEN ak < 57 THEN 2 WHEN ak < 70 THEN 3
                WHEN ak < 81 THEN 4 WHEN ak < 90 THEN 5 WHEN ak < 96 THEN 6 ELSE 7 END AS agent,
           max(0, min(?3 - created_s - 60, (20 + k % 100) * 86400)) AS decided_after,
           max(0, min(?3 - created_s - 60, (k % 45) * 86400 + k % 86400)) AS touched_after
         FROM a
       ),
       c AS (
         SELECT b.*, p.p AS probability,
           CASE WHEN type IN ('SALE', 'PURCHASE') THEN round((120000 + u1 * u1 * 1400000) / 1000) * 1000
                WHEN type = 'LEASE' THEN round((24000 + u1 * 216000) / 100) * 100
                ELSE round(12 * (1200 + u1 * 3600) / 10) * 10 END AS amount,
           CASE stage WHEN 'CLOSED' THEN 'CLOSED' WHEN 'LOST' THEN 'CANCELLED' ELSE CASE WHEN hk < 90 THEN 'ACTIVE' ELSE 'ON_HOLD' END END AS status,
           CASE WHEN stage IN ('CLOSED', 'LOST') THEN created_s + decided_after WHEN stage = 'LEAD' THEN created_s ELSE created_s + touched_after END AS moved_s
         FROM b JOIN probs p ON p.pstage = b.stage
       ),
       d AS (
         SELECT c.*,
           CASE WHEN stage = 'CLOSED' THEN date(moved_s, 'unixepoch')
                WHEN stage IN (${DATED_STAGES.map((s) => `'${s}'`).join(", ")}) THEN date(created_s + (30 + k % 60) * 86400, 'unixepoch')
                WHEN stage IN ('LEAD', 'QUALIFIED', 'APPOINTMENT', 'NEGOTIATION') AND k % 5 < 2 THEN date(created_s + (60 + k % 120) * 86400, 'unixepoch')
                ELSE '' END AS closing_date
         FROM c
       )
       SELECT lower(hex(randomblob(16))), ?1,
         CASE type WHEN 'SALE' THEN 'Listing sale' WHEN 'PURCHASE' THEN 'Buyer purchase' WHEN 'LEASE' THEN 'Commercial lease' ELSE 'Rental' END || ' #' || n,
         NULL, type, stage, status, amount,
         CASE WHEN type IN ('SALE', 'PURCHASE') THEN json_object('rate', 0.03, 'amount', round(amount * 0.03, 2), 'split', 0.5) END,
         'contact-' || printf('%05d', k % 5000), NULL,
         CASE WHEN agent IS NOT NULL THEN json_extract(?4, '$[' || agent || ']') END,
         '[]',
         CASE WHEN closing_date <> '' THEN json_object('closingDate', closing_date) END,
         closing_date, probability,
         CASE k % 5 WHEN 0 THEN 'REFERRAL' WHEN 1 THEN 'WEBSITE' WHEN 2 THEN 'ZILLOW' WHEN 3 THEN 'OPEN_HOUSE' ELSE 'SPHERE' END,
         NULL, '[]',
         ${at("created_s")}, ${at("moved_s")}, ${at("moved_s")},
         CASE WHEN stage = 'CLOSED' THEN ${at("moved_s")} END,
         CASE WHEN stage IN ('CLOSED', 'LOST') THEN ${at("moved_s")} END,
         1
       FROM d`,
      )
      .bind(organizationId, n, nowS, JSON.stringify(ids)),
    shard
      .prepare(
        `INSERT INTO deal_stage_stats (organization_id, stage, count, value, probability_sum)
       SELECT organization_id, stage, COUNT(*), SUM(amount), SUM(probability) FROM deals WHERE organization_id = ? GROUP BY stage`,
      )
      .bind(organizationId),
    shard
      .prepare("INSERT INTO resource_counters (organization_id, resource, total, version) VALUES (?, 'deals', ?, 1)")
      .bind(organizationId, n),
    // The analytics rollups, as the migration that adds them computes them for stored deals.
    ...backfillRollupsSql("organization_id = ?").map((sql) => shard.prepare(sql).bind(organizationId)),
    // In the order the app would have written them (by time), as the deals are.
    shard
      .prepare(
        `INSERT INTO deal_stage_changes (id, organization_id, deal_id, from_stage, to_stage, at)
       SELECT lower(hex(randomblob(16))), organization_id, id, from_stage, to_stage, at FROM (
         SELECT organization_id, id, NULL AS from_stage, 'LEAD' AS to_stage, created_at AS at FROM deals WHERE organization_id = ?1
         UNION ALL
         SELECT organization_id, id, 'LEAD', stage, COALESCE(decided_at, updated_at) FROM deals WHERE organization_id = ?1 AND stage <> 'LEAD'
       ) ORDER BY at`,
      )
      .bind(organizationId),
  ]);
}

type Page = { data: Deal[]; pagination: { nextCursor: string | null; total: number; hasMore: boolean } };

const round2 = (n: number) => Math.round(n * 100) / 100;
const DAY_MS = 86_400_000;

beforeAll(async () => {
  // One shard for both: the 1k organization's rows sit in the same tables as the big one's.
  big = await createPrincipal({ shard: 0 });
  small = await createPrincipal({ shard: 0 });
  shard = await tenantDb(big.organizationId);
  const nowS = Math.floor(Date.now() / 1000);
  const started = performance.now();
  await seed(big, BIG, nowS);
  await seed(small, SMALL, nowS);
  console.log(
    `seeded ${BIG} + ${SMALL} deals (with stage stats, counter and stage history) in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
});

it("the seeded deals follow the stage rules and read back through GET /v1/deals/{id}", async () => {
  const app = countingApp();
  for (const who of [big, small]) {
    const broken = await shard
      .prepare(
        `SELECT COUNT(*) AS n FROM deals WHERE organization_id = ? AND NOT (
         (stage = 'CLOSED') = (status = 'CLOSED') AND (stage <> 'LOST' OR status = 'CANCELLED') AND (stage = 'CLOSED') = (closed_at IS NOT NULL)
         AND (closing_date = '') = (timeline IS NULL) AND created_at <= updated_at AND updated_at = last_activity_at AND updated_at <= ?)`,
      )
      .bind(who.organizationId, new Date().toISOString())
      .first<{ n: number }>();
    expect(broken!.n).toBe(0);
  }
  const spread = await shard
    .prepare(
      `SELECT group_concat(k || ' ' || n, ', ') AS spread FROM (
       SELECT 'type ' || type AS k, COUNT(*) AS n FROM deals WHERE organization_id = ?1 GROUP BY type
       UNION ALL SELECT 'status ' || status, COUNT(*) FROM deals WHERE organization_id = ?1 GROUP BY status
       UNION ALL SELECT 'agent ' || IFNULL(u.name, '(none)'), COUNT(*) FROM deals d LEFT JOIN users u ON u.id = d.assigned_to WHERE d.organization_id = ?1 GROUP BY d.assigned_to)`,
    )
    .bind(big.organizationId)
    .first<{ spread: string }>();
  const range = await shard
    .prepare(
      "SELECT min(created_at) AS oldest, max(created_at) AS newest, min(amount) AS minAmount, max(amount) AS maxAmount, avg(closing_date <> '') AS dated FROM deals WHERE organization_id = ?",
    )
    .bind(big.organizationId)
    .first<Record<string, unknown>>();
  console.log(`seeded spread (50k org): ${spread!.spread}\n  ${JSON.stringify(range)}`);

  const sample = await shard
    .prepare(
      "SELECT id FROM deals WHERE organization_id = ? AND title IN ('Listing sale #0', 'Buyer purchase #1', 'Rental #12', 'Commercial lease #5') OR id IN (SELECT id FROM deals WHERE organization_id = ?1 AND stage = 'CLOSED' LIMIT 2)",
    )
    .bind(big.organizationId)
    .all<{ id: string }>();
  expect(sample.results.length).toBeGreaterThan(2);
  for (const { id } of sample.results) {
    const read = ((await app.send("GET", `/v1/deals/${id}`, big.token)) as { data: Deal }).data;
    expect(Deal.safeParse(read).success, id).toBe(true);
    expect(read.probability).toBe(STAGE_PROBABILITY[read.stage]);
    expect(read.assignedTo === null || agents.get(big)!.includes(read.assignedTo)).toBe(true);
  }
});

it("GET /v1/deals, /pipeline and /analytics stay flat from 1k to 50k deals", async () => {
  const app = countingApp();
  const agent0 = (who: TestPrincipal) => agents.get(who)![0]!;

  const queries = [
    ["GET /v1/deals/pipeline", () => "/v1/deals/pipeline"],
    ["first page, default sort", () => "/v1/deals?limit=25"],
    [`stage=NEGOTIATION&amount[gte]=${NEGOTIATION_MIN}`, () => `/v1/deals?limit=25&stage=NEGOTIATION&amount[gte]=${NEGOTIATION_MIN}`],
    ["assignedTo=<agent 0>&sort=amount:desc", (who: TestPrincipal) => `/v1/deals?limit=25&assignedTo=${agent0(who)}&sort=amount:desc`],
    [`sparse: type=RENTAL&amount[gte]=${NOTHING_MIN} (no deal)`, () => `/v1/deals?limit=25&type=RENTAL&amount[gte]=${NOTHING_MIN}`],
    ["GET /v1/deals/analytics?period=90d", () => "/v1/deals/analytics?period=90d"],
  ] as const;
  const scenarios = queries.flatMap(([label, path]) =>
    (
      [
        [small, "1k"],
        [big, "50k"],
      ] as const
    ).map(([who, org]) => ({ label, org, who, path: path(who), name: `${org} org: ${label}` })),
  );

  const count = async (who: TestPrincipal, where = "", ...params: unknown[]) =>
    (await shard
      .prepare(`SELECT COUNT(*) AS n FROM deals WHERE organization_id = ?${where}`)
      .bind(who.organizationId, ...params)
      .first<{ n: number }>())!.n;

  // Every scenario once for its data (and to fill the cached total of a filter), then once counted.
  const trips: Record<string, number> = {};
  for (const s of scenarios) {
    const seeded = s.who === big ? BIG : SMALL;
    const before = Date.now();
    const body = (await app.send("GET", s.path, s.who.token)) as { data: unknown; pagination?: Page["pagination"] };
    const after = Date.now();
    let summary: string;
    if (s.label === "GET /v1/deals/pipeline") {
      const p = body.data as Pipeline;
      expect(Pipeline.safeParse(p).success).toBe(true);
      expect(p.totalDeals, s.name).toBe(seeded);
      const grouped = await shard
        .prepare("SELECT stage, COUNT(*) AS n, SUM(amount) AS value FROM deals WHERE organization_id = ? GROUP BY stage")
        .bind(s.who.organizationId)
        .all<{ stage: DealStage; n: number; value: number }>();
      const byStage = new Map(grouped.results.map((r) => [r.stage, r]));
      expect(p.stages.map((x) => x.stage)).toEqual([...DEAL_STAGES]);
      for (const st of p.stages) {
        const g = byStage.get(st.stage);
        expect(st.count, `${s.name} ${st.stage}`).toBe(g?.n ?? 0);
        expect(st.value, `${s.name} ${st.stage}`).toBeCloseTo(round2(g?.value ?? 0), 1);
        if (st.count) expect(st.averageProbability, `${s.name} ${st.stage}`).toBe(STAGE_PROBABILITY[st.stage]);
      }
      const won = byStage.get("CLOSED")?.n ?? 0;
      const lost = byStage.get("LOST")?.n ?? 0;
      expect(p.conversionRate).toBeCloseTo((won / (won + lost)) * 100, 1);
      summary = `totalDeals ${p.totalDeals}, totalValue ${p.totalValue}, conversionRate ${p.conversionRate}%`;
    } else if (s.label.startsWith("GET /v1/deals/analytics")) {
      const a = body.data as DealAnalytics;
      expect(DealAnalytics.safeParse(a).success).toBe(true);
      // The period ends at the request's own clock: bound the figures by the counts at the instants around it.
      const from = (t: number) => new Date(t - 90 * DAY_MS).toISOString();
      expect(a.totalDeals).toBeLessThanOrEqual(await count(s.who, " AND created_at >= ?", from(before)));
      expect(a.totalDeals).toBeGreaterThanOrEqual(await count(s.who, " AND created_at >= ?", from(after)));
      expect(a.closedDeals).toBeLessThanOrEqual(await count(s.who, " AND stage = 'CLOSED' AND decided_at >= ?", from(before)));
      expect(a.closedDeals).toBeGreaterThanOrEqual(await count(s.who, " AND stage = 'CLOSED' AND decided_at >= ?", from(after)));
      expect(a.closedDeals).toBeGreaterThan(0);
      expect(a.conversionRate).toBeGreaterThan(0);
      expect(a.conversionRate).toBeLessThan(100);
      expect(a.topPerformers.length).toBeGreaterThan(0);
      expect(a.topPerformers.length).toBeLessThanOrEqual(TOP_PERFORMERS);
      for (const t of a.topPerformers) {
        expect(agents.get(s.who)).toContain(t.agentId);
        expect(t.name).toBe(AGENT_NAMES[agents.get(s.who)!.indexOf(t.agentId)]);
      }
      const values = a.topPerformers.map((t) => t.closedValue);
      expect(values).toEqual([...values].sort((x, y) => y - x));
      expect(a.topPerformers.reduce((n, t) => n + t.deals, 0)).toBeLessThanOrEqual(a.closedDeals);
      summary = `totalDeals ${a.totalDeals}, closedDeals ${a.closedDeals}, averageTimeToClose ${a.averageTimeToClose} d, conversionRate ${a.conversionRate}%, ${a.topPerformers.length} performers`;
    } else {
      const page = body as Page;
      const sparse = s.label.startsWith("sparse:");
      expect(page.data, s.name).toHaveLength(sparse ? 0 : 25);
      expect(page.pagination.hasMore, s.name).toBe(!sparse);
      for (const d of page.data) expect(Deal.safeParse(d).success, s.name).toBe(true);
      if (s.label.startsWith("first page")) {
        const created = page.data.map((d) => d.createdAt);
        expect(created).toEqual([...created].sort().reverse());
        const newest = await shard
          .prepare("SELECT max(created_at) AS at FROM deals WHERE organization_id = ?")
          .bind(s.who.organizationId)
          .first<{ at: string }>();
        expect(created[0]).toBe(newest!.at);
        expect(page.pagination.total).toBe(seeded);
      } else if (s.label.startsWith("stage=")) {
        for (const d of page.data) {
          expect(d.stage).toBe("NEGOTIATION");
          expect(d.amount).toBeGreaterThanOrEqual(NEGOTIATION_MIN);
        }
        const created = page.data.map((d) => d.createdAt);
        expect(created).toEqual([...created].sort().reverse());
        expect(page.pagination.total).toBe(await count(s.who, " AND stage = 'NEGOTIATION' AND amount >= ?", NEGOTIATION_MIN));
      } else if (s.label.startsWith("assignedTo=")) {
        for (const d of page.data) expect(d.assignedTo).toBe(agent0(s.who));
        const amounts = page.data.map((d) => d.amount);
        expect(amounts).toEqual([...amounts].sort((x, y) => y - x));
        const top = await shard
          .prepare("SELECT max(amount) AS a FROM deals WHERE organization_id = ? AND assigned_to = ?")
          .bind(s.who.organizationId, agent0(s.who))
          .first<{ a: number }>();
        expect(amounts[0]).toBe(top!.a);
        expect(page.pagination.total).toBe(await count(s.who, " AND assigned_to = ?", agent0(s.who)));
      } else {
        expect(page.pagination.total, s.name).toBe(0);
      }
      summary = `total ${page.pagination.total}`;
    }
    console.log(`${s.name}: ${summary}`);
    app.reset();
    await app.send("GET", s.path, s.who.token);
    trips[s.name] = app.trips();
  }
  console.log("D1 round trips per request (auth + one query or batch):", JSON.stringify(trips, null, 1));
  for (const [name, n] of Object.entries(trips)) expect(n, name).toBe(2);

  const floor = await helloWorld();
  const figures = await measureInterleaved(
    scenarios.map((s) => ({ name: s.name, fn: () => app.send("GET", s.path, s.who.token) })),
    { rounds: 20, perSample: 10, warmup: 10 },
  );
  const baseline = figures[0]!;
  printTable("deals, 50k organization against the 1k baseline", [floor, ...figures], baseline);
  const ratios = queries.map(([label], i) => {
    const [s, b] = [figures[2 * i]!, figures[2 * i + 1]!];
    return { label, ratio: b.medianMs / s.medianMs };
  });
  console.log(
    `ratio 50k/1k (median) per query (target <= 1.2x):\n${ratios.map((r) => `  ${r.label.padEnd(60)} ${r.ratio.toFixed(2)}x`).join("\n")}`,
  );
  console.log(`worst ratio 50k/1k (median): ${Math.max(...ratios.map((r) => r.ratio)).toFixed(2)}x (target <= 1.2x)`);

  // The plans behind the figures: each list's page statement (src/deals/list.ts listSql) …
  const parsed = {
    "first page, default sort": DealListQuery.parse({ limit: "25" }),
    "stage+amount[gte]": DealListQuery.parse({ limit: "25", stage: "NEGOTIATION", "amount[gte]": String(NEGOTIATION_MIN) }),
    "assignedTo, sort=amount:desc": DealListQuery.parse({ limit: "25", assignedTo: agent0(big), sort: "amount:desc" }),
    "sparse type+amount[gte]": DealListQuery.parse({ limit: "25", type: "RENTAL", "amount[gte]": String(NOTHING_MIN) }),
  };
  for (const [label, query] of Object.entries(parsed)) {
    const { sql, params } = listSql(big.organizationId, query);
    const plan = await shard
      .prepare(`EXPLAIN QUERY PLAN ${sql}`)
      .bind(...params)
      .all<{ detail: string }>();
    const details = plan.results.map((r) => r.detail).join("\n  ");
    console.log(`EXPLAIN QUERY PLAN (list: ${label}):\n  ${details}`);
    if (label === "first page, default sort") {
      expect(details).toMatch(/USING (COVERING )?INDEX deals_org_created_idx/);
      expect(details).not.toMatch(/USE TEMP B-TREE/);
    }
  }

  // … and the two analytics statements (src/deals/rollups.ts analyticsSql, without assignedTo/type), each also
  // timed alone on D1 in both organizations.
  const now = new Date();
  const from = new Date(now.getTime() - 90 * DAY_MS);
  const alone: Awaited<ReturnType<typeof measure>>[] = [];
  for (const label of ["created", "decided"] as const) {
    const statement = (org: string) => analyticsSql(org, from, now, {})[label];
    const big90 = statement(big.organizationId);
    const plan = await shard
      .prepare(`EXPLAIN QUERY PLAN ${big90.sql}`)
      .bind(...big90.params)
      .all<{ detail: string }>();
    const details = plan.results.map((r) => r.detail).join("\n  ");
    console.log(`EXPLAIN QUERY PLAN (analytics: ${label}):\n  ${details}`);
    // The whole days come from the rollups' primary key, the partial first day from an index of the deals.
    expect(details).toMatch(
      label === "created"
        ? /SEARCH r USING INDEX sqlite_autoindex_deal_created_rollups_1 \(organization_id=\? AND type=\? AND assigned_to=\? AND level=\? AND bucket=\?\)/
        : /SEARCH r USING INDEX sqlite_autoindex_deal_decided_rollups_1 \(organization_id=\? AND type=\? AND level=\? AND bucket=\?\)/,
    );
    for (const [who, org] of [
      [small, "1k"],
      [big, "50k"],
    ] as const) {
      const s = statement(who.organizationId);
      const rows = await shard
        .prepare(`SELECT COUNT(*) AS n FROM (${s.sql})`)
        .bind(...s.params)
        .first<{ n: number }>();
      alone.push(
        await measure(
          `${org} org: analytics ${label} alone (${rows!.n} row${rows!.n === 1 ? "" : "s"})`,
          () =>
            shard
              .prepare(s.sql)
              .bind(...s.params)
              .all(),
          {
            iterations: 50,
            warmup: 5,
            perSample: 5,
          },
        ),
      );
    }
  }
  const inPeriod = await shard
    .prepare(
      `SELECT (SELECT COUNT(*) FROM deals WHERE organization_id = ?1 AND created_at >= ?2) AS created,
            (SELECT COUNT(*) FROM deal_stage_changes WHERE organization_id = ?1 AND to_stage = 'CLOSED' AND at >= ?2) AS closedMoves,
            (SELECT COUNT(*) FROM deal_stage_changes WHERE organization_id = ?1 AND to_stage = 'LOST' AND at >= ?2) AS lostMoves`,
    )
    .bind(big.organizationId, from.toISOString())
    .first();
  console.log(
    `deals and stage moves in the 90d period of the 50k org (the analytics read spans of days instead): ${JSON.stringify(inPeriod)}`,
  );
  printTable("analytics statements alone on D1 (no app), 1k then 50k", alone, alone[0]);
});
