// Deal analytics read rollups per span of days, moved in the batch of every deal write (src/deals/rollups.ts, issue 22):
// they must equal the deals they summarize after every kind of write, also concurrent ones, and the report built from
// them must equal the one a scan of the deals gives for any period start.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { analyticsSql, backfillRollupsSql, DAY_MS, spansOf } from "../../src/deals/rollups";
import { call } from "../helpers/client";
import { addAgent, createDeal, moveDeal, updateDeal } from "../helpers/deals";
import { expectRollupsExact } from "../helpers/derived-figures";
import { createPrincipal, tenantDb } from "../helpers/factories";

type Row = Record<string, number | string>;

describe("deal analytics rollups", () => {
  it("spans cover a range of days exactly, a few per level", () => {
    for (const [first, last] of [
      [20_000, 20_089],
      [20_001, 20_365],
      [19_999, 20_000],
      [20_480, 20_480],
      [20_100, 20_006 + 365],
    ] as [number, number][]) {
      const spans = spansOf(first, last);
      const days = spans.flatMap(([l, b]) => Array.from({ length: 2 ** l }, (_, i) => b * 2 ** l + i));
      expect(days).toEqual(Array.from({ length: last - first + 1 }, (_, i) => first + i));
      expect(spans.length).toBeLessThanOrEqual(18);
    }
  });

  it("a report seeks each span in the rollups' primary key (the spans outside, never a walk of the organization's rows)", async () => {
    const now = new Date();
    const db = env.DB_SHARD_0;
    for (const narrow of [{}, { type: "SALE" }, { assignedTo: "agent" }, { type: "SALE", assignedTo: "agent" }]) {
      const q = analyticsSql("org-plan", new Date(now.getTime() - 90 * DAY_MS), now, narrow);
      const plan = async (s: { sql: string; params: unknown[] }) =>
        (
          await db
            .prepare(`EXPLAIN QUERY PLAN ${s.sql}`)
            .bind(...s.params)
            .all<{ detail: string }>()
        ).results
          .map((r) => r.detail)
          .join("\n");
      const created = await plan(q.created);
      expect(created).toMatch(
        /SCAN j VIRTUAL TABLE[^\n]*\n\s*SEARCH r USING INDEX sqlite_autoindex_deal_created_rollups_1 \(organization_id=\? AND type=\? AND assigned_to=\? AND level=\? AND bucket=\?\)/,
      );
      expect(created).toMatch(
        /SEARCH d USING COVERING INDEX deals_org_created_idx \(organization_id=\? AND created_at>\? AND created_at<\?\)/,
      );
      const decided = await plan(q.decided);
      expect(decided).toMatch(
        /SCAN j VIRTUAL TABLE[^\n]*\n\s*SEARCH r USING INDEX sqlite_autoindex_deal_decided_rollups_1 \(organization_id=\? AND type=\? AND level=\? AND bucket=\?/,
      );
      expect(decided).toMatch(
        /SEARCH d USING COVERING INDEX deals_org_decided_idx \(organization_id=\? AND decided_at>\? AND decided_at<\?\)/,
      );
    }
  });

  it("move with every deal write: create, update, move, close, lose, reopen, trash and restore", async () => {
    const p = await createPrincipal();
    const bea = await addAgent(p.organizationId, "Bea Broker");
    const a = await createDeal(p.token, { type: "SALE", amount: 100_000, assignedTo: p.userId });
    const b = await createDeal(p.token, { type: "PURCHASE", amount: 250_000 });
    const c = await createDeal(p.token, { type: "LEASE", amount: 24_000, assignedTo: bea });
    await expectRollupsExact(p.organizationId);

    await updateDeal(p.token, a.id, { amount: 120_000, type: "PURCHASE" });
    await updateDeal(p.token, b.id, { assignedTo: bea });
    await updateDeal(p.token, c.id, { notes: "moves nothing" });
    await moveDeal(p.token, a.id, "CLOSED");
    await moveDeal(p.token, b.id, "LOST");
    await expectRollupsExact(p.organizationId);

    // A decided deal changed: its amount and agent move its decided figures; reopening takes it out of them.
    await updateDeal(p.token, a.id, { amount: 130_000, assignedTo: bea });
    await moveDeal(p.token, b.id, "NEGOTIATION");
    await expectRollupsExact(p.organizationId);

    expect((await call("DELETE", `/v1/deals/${a.id}`, { token: p.token })).status).toBe(200);
    expect((await call("DELETE", `/v1/deals/${c.id}`, { token: p.token })).status).toBe(200);
    await expectRollupsExact(p.organizationId);
    expect((await call("POST", `/v1/deals/${a.id}/restore`, { token: p.token })).status).toBe(200);
    await expectRollupsExact(p.organizationId);
  });

  it("stay exact under concurrent writes of the same deals", async () => {
    const p = await createPrincipal();
    const a = await createDeal(p.token, { type: "SALE", amount: 100_000 });
    const b = await createDeal(p.token, { type: "SALE", amount: 200_000 });
    const results = await Promise.all([
      ...["CLOSED", "LOST", "NEGOTIATION", "CLOSED"].map((stage) =>
        call("POST", `/v1/deals/${a.id}/move`, { token: p.token, body: { stage } }),
      ),
      ...[110_000, 120_000, 130_000].map((amount) => call("PUT", `/v1/deals/${a.id}`, { token: p.token, body: { amount } })),
      call("PUT", `/v1/deals/${a.id}`, { token: p.token, body: { type: "PURCHASE", assignedTo: p.userId } }),
      call("POST", `/v1/deals/${b.id}/move`, { token: p.token, body: { stage: "CLOSED" } }),
      call("DELETE", `/v1/deals/${b.id}`, { token: p.token }),
      call("PUT", `/v1/deals/${b.id}`, { token: p.token, body: { amount: 1 } }),
    ]);
    for (const res of results) expect([200, 404, 409]).toContain(res.status);
    await expectRollupsExact(p.organizationId);
  });

  it("give the figures a scan of the deals gives, for any start of the period and with the type and agent filters", async () => {
    const p = await createPrincipal();
    const agents = [p.userId, await addAgent(p.organizationId, "Bea Broker"), await addAgent(p.organizationId, "Cy Closer")];
    const now = Date.now();
    const db = await tenantDb(p.organizationId);
    // 600 deals over the 400 days before now, a fifth decided 0-90 days after creation, written in SQL then rolled up.
    await db.batch([
      db
        .prepare(
          `INSERT INTO deals (id, organization_id, title, type, stage, status, amount, contact_id, assigned_to, team_members, probability, tags, created_at, updated_at, last_activity_at, closed_at, decided_at)
         WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < 599),
         a AS (SELECT n, (?2 - (n * 57600000 + (n * 7919 % 3600000))) AS created_ms, (n * 104729 % 97) AS k FROM seq),
         b AS (SELECT a.*, CASE WHEN k < 12 THEN 'CLOSED' WHEN k < 20 THEN 'LOST' ELSE 'LEAD' END AS stage,
                 min(?2 - 60000, created_ms + (k % 90) * 86400000 + k * 1000003) AS decided_ms FROM a)
         SELECT lower(hex(randomblob(16))), ?1, 'D' || n, CASE n % 3 WHEN 0 THEN 'SALE' WHEN 1 THEN 'PURCHASE' ELSE 'LEASE' END, stage,
           CASE stage WHEN 'CLOSED' THEN 'CLOSED' WHEN 'LOST' THEN 'CANCELLED' ELSE 'ACTIVE' END, 1000 + (n * 7907 % 500) * 1000.25, 'c', json_extract(?3, '$[' || (n % 4) || ']'),
           '[]', 10, '[]', strftime('%Y-%m-%dT%H:%M:%fZ', created_ms / 1000.0, 'unixepoch'), strftime('%Y-%m-%dT%H:%M:%fZ', created_ms / 1000.0, 'unixepoch'),
           strftime('%Y-%m-%dT%H:%M:%fZ', created_ms / 1000.0, 'unixepoch'),
           CASE WHEN stage = 'CLOSED' THEN strftime('%Y-%m-%dT%H:%M:%fZ', decided_ms / 1000.0, 'unixepoch') END,
           CASE WHEN stage IN ('CLOSED', 'LOST') THEN strftime('%Y-%m-%dT%H:%M:%fZ', decided_ms / 1000.0, 'unixepoch') END
         FROM b`,
        )
        .bind(p.organizationId, now, JSON.stringify([...agents, null])),
      ...backfillRollupsSql("organization_id = ?").map((sql) => db.prepare(sql).bind(p.organizationId)),
    ]);
    const scan = {
      created: (and: string) =>
        `SELECT COUNT(*) AS n, IFNULL(SUM(d.amount), 0) AS value FROM deals d WHERE d.organization_id = ? AND d.created_at >= ?${and}`,
      decided: (and: string) => `SELECT g.stage, g.assigned_to, g.n, g.value, g.days, u.name FROM (
          SELECT d.stage, d.assigned_to, COUNT(*) AS n, SUM(d.amount) AS value, SUM(julianday(d.decided_at) - julianday(d.created_at)) AS days
          FROM deals d WHERE d.organization_id = ? AND d.decided_at >= ?${and} GROUP BY d.stage, d.assigned_to
        ) g LEFT JOIN users u ON u.id = g.assigned_to AND u.organization_id = ? ORDER BY g.stage, g.assigned_to`,
    };
    const narrows: { type?: string; assignedTo?: string }[] = [
      {},
      { type: "SALE" },
      { assignedTo: agents[1] },
      { type: "LEASE", assignedTo: agents[0] },
    ];
    for (const days of [7, 30, 90, 365]) {
      for (const offsetMs of [0, 3_600_000, 11 * 3_600_000 + 123, 17 * 3_600_000 + 45_678]) {
        const at = new Date(now + offsetMs);
        const from = new Date(at.getTime() - days * DAY_MS);
        for (const narrow of narrows) {
          const and = `${narrow.type ? " AND d.type = ?" : ""}${narrow.assignedTo ? " AND d.assigned_to = ?" : ""}`;
          const binds = [...(narrow.type ? [narrow.type] : []), ...(narrow.assignedTo ? [narrow.assignedTo] : [])];
          const ours = analyticsSql(p.organizationId, from, at, narrow);
          const [created, decided, wantCreated, wantDecided] = await db.batch<Row>([
            db.prepare(ours.created.sql).bind(...ours.created.params),
            db.prepare(`SELECT * FROM (${ours.decided.sql}) ORDER BY stage, assigned_to`).bind(...ours.decided.params),
            db.prepare(scan.created(and)).bind(p.organizationId, from.toISOString(), ...binds),
            db.prepare(scan.decided(and)).bind(p.organizationId, from.toISOString(), ...binds, p.organizationId),
          ]);
          const label = `${days}d +${offsetMs}ms ${JSON.stringify(narrow)}`;
          expect(created!.results[0]!.n, label).toBe(wantCreated!.results[0]!.n);
          expect(created!.results[0]!.value, label).toBeCloseTo(wantCreated!.results[0]!.value as number, 4);
          expect(
            decided!.results.map((r) => [r.stage, r.assigned_to, r.n, r.name]),
            label,
          ).toEqual(wantDecided!.results.map((r) => [r.stage, r.assigned_to, r.n, r.name]));
          decided!.results.forEach((r, i) => {
            expect(r.value, label).toBeCloseTo(wantDecided!.results[i]!.value as number, 4);
            expect(r.days, label).toBeCloseTo(wantDecided!.results[i]!.days as number, 6);
          });
          if (days === 90 && offsetMs === 0 && !narrow.type && !narrow.assignedTo) expect(wantDecided!.results.length).toBeGreaterThan(3);
        }
      }
    }
  });
});
