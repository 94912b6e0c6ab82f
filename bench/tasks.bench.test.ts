// The agent's day at scale (issue 46): the due-tasks list of one agent in an organization of 100,000 contacts' tasks
// against one of 1,000, same run, same shard (target <= 1.3x).
import { env } from "cloudflare:workers";
import { beforeAll, expect, it } from "vitest";
import { createDb } from "../src/db/client";
import { zonedDay } from "../src/lib/zoned-day";
import { taskListStatements } from "../src/tasks/list";
import { Task } from "../src/tasks/schemas";
import { addMembers } from "../src/shards/placement";
import { createPrincipal, tenantDb, type TestPrincipal } from "../test/helpers/factories";
import { countingApp, helloWorld, measureInterleaved, printTable } from "./harness";

const BIG = 100_000;
const SMALL = 1_000;
let big: TestPrincipal;
let small: TestPrincipal;
let shard: D1Database;

/**
 * One task per contact (the contact ids are made up: the list reads no contact), in SQL (a recursive CTE): a fifth
 * assigned to the principal ("me"), the rest over seven other agents; due within 180 days either side of now (spread to
 * the minute), one in twenty undated; three in ten completed; a fifth on a deal.
 */
async function seed(who: TestPrincipal, n: number, nowS: number) {
  const organizationId = who.organizationId;
  const others = Array.from({ length: 7 }, () => crypto.randomUUID());
  const nowIso = new Date(nowS * 1000).toISOString();
  await addMembers(
    env,
    others.map((id, i) => ({ id, organizationId, email: `agent${i}.${id}@bench.test`, name: `Agent ${i}`, createdAt: nowIso })),
  );
  const agentCase = `CASE WHEN ak < 20 THEN '${who.userId}' ${others.map((id, i) => `WHEN ak % 7 = ${i} THEN '${id}'`).join(" ")} END`;
  const at = (seconds: string) => `strftime('%Y-%m-%dT%H:%M:%fZ', ${seconds}, 'unixepoch')`;
  await shard
    .prepare(
      `INSERT INTO tasks (id, organization_id, title, type, notes, due_at, priority, assigned_to, contact_id, deal_id, property_id,
         completed, completed_at, completed_by, created_by, created_at, updated_at, version, due_announced_at)
       WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < ?2 - 1),
       a AS (
         SELECT n,
           (n * 16807 % 1000003) % 10 AS ck,
           (n * 69621 % 999983) % 100 AS ak,
           (n * 48271 % 999959) % 360 - 180 AS dd,
           (n * 40503 % 65521) % 1440 AS mm
         FROM seq
       )
       SELECT lower(hex(randomblob(16))), ?1, 'Task ' || n,
         CASE n % 6 WHEN 0 THEN 'call' WHEN 1 THEN 'email' WHEN 2 THEN 'text' WHEN 3 THEN 'showing' WHEN 4 THEN 'follow_up' ELSE 'other' END,
         NULL,
         CASE WHEN n % 20 = 0 THEN NULL ELSE ${at(`?3 + dd * 86400 + mm * 60`)} END,
         'MEDIUM', ${agentCase}, 'contact-' || n, CASE WHEN n % 5 = 0 THEN 'deal-' || n END, NULL,
         CASE WHEN ck < 3 THEN 1 ELSE 0 END, CASE WHEN ck < 3 THEN ${at("?3")} END, NULL, NULL,
         ${at("?3 - 400 * 86400 + n")}, ${at("?3 - 400 * 86400 + n")}, 1,
         CASE WHEN ck >= 3 AND n % 20 != 0 AND dd < 0 THEN ${at("?3")} END
       FROM a`,
    )
    .bind(organizationId, n, nowS)
    .run();
}

beforeAll(async () => {
  big = await createPrincipal({ shard: 0 });
  small = await createPrincipal({ shard: 0 });
  shard = await tenantDb(big.organizationId);
  const nowS = Math.floor(Date.now() / 1000);
  const started = performance.now();
  await seed(big, BIG, nowS);
  await seed(small, SMALL, nowS);
  console.log(`seeded ${BIG} + ${SMALL} tasks in ${((performance.now() - started) / 1000).toFixed(1)} s`);
});

it("GET /v1/tasks?assignedTo=me&due=today|overdue stays flat from 1k to 100k contacts' tasks", async () => {
  const app = countingApp();
  const queries = [
    ["assignedTo=me&due=today", "/v1/tasks?assignedTo=me&due=today&limit=25"],
    ["assignedTo=me&due=overdue", "/v1/tasks?assignedTo=me&due=overdue&limit=25"],
    ["assignedTo=me&due=upcoming", "/v1/tasks?assignedTo=me&due=upcoming&limit=25"],
  ] as const;
  const scenarios = queries.flatMap(([label, path]) =>
    (
      [
        [small, "1k"],
        [big, "100k"],
      ] as const
    ).map(([who, org]) => ({ label, org, who, path, name: `${org} org: ${label}` })),
  );

  // Each answer is right before it is timed: my open tasks of the window, in due order, with the exact total.
  const trips: Record<string, number> = {};
  for (const s of scenarios) {
    const page = (await app.send("GET", s.path, s.who.token)) as { data: Task[]; pagination: { total: number } };
    for (const t of page.data) {
      expect(Task.safeParse(t).success, s.name).toBe(true);
      expect(t).toMatchObject({ assignedTo: s.who.userId, status: "open" });
    }
    const due = page.data.map((t) => t.dueAt!);
    expect(due, s.name).toEqual([...due].sort());
    const now = new Date().toISOString();
    const day = zonedDay(new Date(), "UTC");
    const where = s.label.endsWith("today")
      ? "due_at >= ? AND due_at < ?"
      : s.label.endsWith("overdue")
        ? "due_at < ? AND ? != ''"
        : "due_at >= ? AND ? != ''";
    const binds = s.label.endsWith("today") ? [day.startIso, day.endIso] : s.label.endsWith("overdue") ? [now, "x"] : [day.endIso, "x"];
    const { n } = (await shard
      .prepare(`SELECT COUNT(*) AS n FROM tasks WHERE organization_id = ? AND assigned_to = ? AND completed = 0 AND ${where}`)
      .bind(s.who.organizationId, s.who.userId, ...binds)
      .first<{ n: number }>())!;
    expect(page.pagination.total, s.name).toBe(n);
    console.log(`${s.name}: ${page.data.length} on the page, total ${page.pagination.total}`);
    app.reset();
    await app.send("GET", s.path, s.who.token);
    trips[s.name] = app.trips();
  }
  // Authentication, the organization's time zone, the page with its total.
  console.log("D1 round trips per request:", JSON.stringify(trips));
  for (const [name, n] of Object.entries(trips)) expect(n, name).toBeLessThanOrEqual(3);

  const floor = await helloWorld();
  const figures = await measureInterleaved(
    scenarios.map((s) => ({ name: s.name, fn: () => app.send("GET", s.path, s.who.token) })),
    { rounds: 20, perSample: 10, warmup: 10 },
  );
  printTable("tasks, 100k organization against the 1k baseline", [floor, ...figures], figures[0]);
  const ratios = queries.map(([label], i) => ({ label, ratio: figures[2 * i + 1]!.medianMs / figures[2 * i]!.medianMs }));
  console.log(
    `ratio 100k/1k (median) per query (target <= 1.3x):\n${ratios.map((r) => `  ${r.label.padEnd(40)} ${r.ratio.toFixed(2)}x`).join("\n")}`,
  );

  // The plans behind the figures: each an index range of the assignee's open tasks, in due order.
  const db = createDb(shard);
  for (const window of ["today", "overdue", "upcoming"] as const) {
    const filter = {
      organizationId: big.organizationId,
      completed: false,
      assignedTo: big.userId,
      due: { window, now: new Date().toISOString(), day: zonedDay(new Date(), "UTC") },
    };
    for (const statement of taskListStatements(db, filter, 25)) {
      const { sql, params } = statement.toSQL();
      const plan = (
        await shard
          .prepare(`EXPLAIN QUERY PLAN ${sql}`)
          .bind(...params)
          .all<{ detail: string }>()
      ).results
        .map((r) => r.detail)
        .join("; ");
      console.log(`plan (${window}): ${plan}`);
      expect(plan).toMatch(/tasks_assignee_due_idx \(organization_id=\? AND assigned_to=\? AND completed=\? AND due_at/);
      expect(plan).not.toMatch(/TEMP B-TREE|SCAN tasks/);
    }
  }
  for (const r of ratios) expect(r.ratio, r.label).toBeLessThanOrEqual(1.3);
}, 600_000);
