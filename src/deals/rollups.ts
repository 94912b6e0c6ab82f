import { sql } from "drizzle-orm";
import { dealCreatedRollups, dealDecidedRollups } from "../db/schema";
import type { Statement } from "../db/write";
import type { ServiceContext } from "../service-context";
import type { DealRecord } from "./mapping";

/**
 * Analytics without scanning deals: figures per span of days, moved in the batch of every deal write that
 * changes them (`rollupMoves`, through writes.ts `pipelineMoves`), so a report over 90 days of 50,000 deals reads a
 * dozen spans, not the 6,000 deals created in it. A span at level L is 2^L days aligned on 2^L days since 1970-01-01
 * (UTC), so a period splits into at most two spans per level; the report adds the deals of its first, partial day read
 * from the deals themselves (a period starts at the request's clock, not at midnight).
 */
export const DAY_MS = 86_400_000;
/** Spans of up to 2^8 = 256 days: a year is at most 16 spans. */
export const MAX_LEVEL = 8;
/** "Any" in a rollup's type or agent column. */
export const ANY = "*";

const dayOf = (iso: string) => Math.floor(Date.parse(iso) / DAY_MS);
const levels = Array.from({ length: MAX_LEVEL + 1 }, (_, l) => l);

/** The deal as the created rollups see it; null when it does not count (gone, or not yet created). */
const createdKey = (d: DealRecord | null) => d && JSON.stringify([d.type, d.assignedTo, d.amount, d.createdAt]);
const decidedKey = (d: DealRecord | null) =>
  d?.decidedAt ? JSON.stringify([d.type, d.assignedTo, d.amount, d.createdAt, d.stage, d.decidedAt]) : null;

/**
 * The rollup moves of a write that turns `before` into `after` (null: created, or gone): one statement per rollup that
 * changes, taking `before` out and putting `after` in, at every level and under each "any" it counts in. Written in the
 * same batch as the deal (guarded on its version), so the rollups move exactly when the deal does.
 */
export function rollupMoves(ctx: ServiceContext, before: DealRecord | null, after: DealRecord | null): Statement[] {
  const out: Statement[] = [];
  const org = ctx.organizationId;
  const signed = (d: DealRecord | null, sign: number) => (d ? [{ d, sign }] : []);
  if (createdKey(before) !== createdKey(after)) {
    const rows = [...signed(before, -1), ...signed(after, 1)].flatMap(({ d, sign }) =>
      levels.flatMap((l) =>
        [d.type, ANY].flatMap((type) =>
          [d.assignedTo ?? "", ANY].map((agent) => [type, agent, l, dayOf(d.createdAt) >> l, sign, sign * d.amount]),
        ),
      ),
    );
    out.push(
      ctx.db
        .insert(dealCreatedRollups)
        .select(
          sql`SELECT ${org}, json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]'), json_extract(j.value, '$[3]'),
                     json_extract(j.value, '$[4]'), json_extract(j.value, '$[5]') FROM json_each(${JSON.stringify(rows)}) j WHERE true`,
        )
        .onConflictDoUpdate({
          target: [
            dealCreatedRollups.organizationId,
            dealCreatedRollups.type,
            dealCreatedRollups.assignedTo,
            dealCreatedRollups.level,
            dealCreatedRollups.bucket,
          ],
          set: { n: sql`${dealCreatedRollups.n} + excluded.n`, value: sql`${dealCreatedRollups.value} + excluded.value` },
        }),
    );
  }
  if (decidedKey(before) !== decidedKey(after)) {
    const rows = [...signed(before?.decidedAt ? before : null, -1), ...signed(after?.decidedAt ? after : null, 1)].flatMap(({ d, sign }) =>
      levels.flatMap((l) =>
        [d.type, ANY].map((type) => [
          type,
          l,
          dayOf(d.decidedAt!) >> l,
          d.stage,
          d.assignedTo ?? "",
          sign,
          sign * d.amount,
          d.createdAt,
          d.decidedAt,
        ]),
      ),
    );
    // The days to decision are computed in SQL, as the backfill and the partial day of a report compute them.
    out.push(
      ctx.db
        .insert(dealDecidedRollups)
        .select(
          sql`SELECT ${org}, json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]'), json_extract(j.value, '$[3]'),
                     json_extract(j.value, '$[4]'), json_extract(j.value, '$[5]'), json_extract(j.value, '$[6]'),
                     json_extract(j.value, '$[5]') * (julianday(json_extract(j.value, '$[8]')) - julianday(json_extract(j.value, '$[7]')))
              FROM json_each(${JSON.stringify(rows)}) j WHERE true`,
        )
        .onConflictDoUpdate({
          target: [
            dealDecidedRollups.organizationId,
            dealDecidedRollups.type,
            dealDecidedRollups.level,
            dealDecidedRollups.bucket,
            dealDecidedRollups.stage,
            dealDecidedRollups.assignedTo,
          ],
          set: {
            n: sql`${dealDecidedRollups.n} + excluded.n`,
            value: sql`${dealDecidedRollups.value} + excluded.value`,
            days: sql`${dealDecidedRollups.days} + excluded.days`,
          },
        }),
    );
  }
  return out;
}

/** The spans [level, bucket] that exactly cover the days first..last (inclusive), largest first where they fit. */
export function spansOf(first: number, last: number): [number, number][] {
  const spans: [number, number][] = [];
  for (let day = first; day <= last; ) {
    let l = 0;
    while (l < MAX_LEVEL && day % 2 ** (l + 1) === 0 && day + 2 ** (l + 1) - 1 <= last) l++;
    spans.push([l, day / 2 ** l]);
    day += 2 ** l;
  }
  return spans;
}

/**
 * The two analytics statements over the period from `from` to `now`: created (n, value) and decided (per stage and
 * agent: n, value, days, the agent's name), each the partial first day from the deals plus the whole days after it
 * from the rollups. Binds, in order, are returned beside the SQL.
 */
export function analyticsSql(organizationId: string, from: Date, now: Date, narrow: { type?: string; assignedTo?: string }) {
  const firstDay = dayOf(from.toISOString());
  const dayEnd = new Date((firstDay + 1) * DAY_MS).toISOString();
  const spans = JSON.stringify(spansOf(firstDay + 1, dayOf(now.toISOString())));
  const and: string[] = [];
  const andParams: unknown[] = [];
  if (narrow.type) and.push(" AND d.type = ?"), andParams.push(narrow.type);
  if (narrow.assignedTo) and.push(" AND d.assigned_to = ?"), andParams.push(narrow.assignedTo);
  const type = narrow.type ?? ANY;
  // CROSS JOIN keeps the spans outside: each is one seek of the rollup's primary key (SQLite would otherwise walk every
  // span of the organization and test it against the list).
  const span = "r.level = json_extract(j.value, '$[0]') AND r.bucket = json_extract(j.value, '$[1]')";
  const created = {
    sql: `SELECT SUM(n) AS n, IFNULL(SUM(value), 0) AS value FROM (
        SELECT COUNT(*) AS n, SUM(d.amount) AS value FROM deals d WHERE d.organization_id = ? AND d.created_at >= ? AND d.created_at < ?${and.join("")}
        UNION ALL
        SELECT r.n, r.value FROM json_each(?) j CROSS JOIN deal_created_rollups r
          ON r.organization_id = ? AND r.type = ? AND r.assigned_to = ? AND ${span})`,
    params: [organizationId, from.toISOString(), dayEnd, ...andParams, spans, organizationId, type, narrow.assignedTo ?? ANY],
  };
  const decided = {
    sql: `SELECT g.stage, NULLIF(g.assigned_to, '') AS assigned_to, g.n, g.value, g.days, u.name FROM (
        SELECT stage, assigned_to, SUM(n) AS n, SUM(value) AS value, SUM(days) AS days FROM (
          SELECT d.stage, IFNULL(d.assigned_to, '') AS assigned_to, 1 AS n, d.amount AS value, julianday(d.decided_at) - julianday(d.created_at) AS days
          FROM deals d WHERE d.organization_id = ? AND d.decided_at >= ? AND d.decided_at < ?${and.join("")}
          UNION ALL
          SELECT r.stage, r.assigned_to, r.n, r.value, r.days FROM json_each(?) j CROSS JOIN deal_decided_rollups r
            ON r.organization_id = ? AND r.type = ? AND ${span}${narrow.assignedTo ? " AND r.assigned_to = ?" : ""}
        ) GROUP BY stage, assigned_to HAVING SUM(n) > 0
      ) g LEFT JOIN users u ON u.id = g.assigned_to AND u.organization_id = ?`,
    params: [
      organizationId,
      from.toISOString(),
      dayEnd,
      ...andParams,
      spans,
      organizationId,
      type,
      ...(narrow.assignedTo ? [narrow.assignedTo] : []),
      organizationId,
    ],
  };
  return { created, decided };
}

/**
 * The rollups of deals already stored (the migration that adds them runs this over every organization; seeds that
 * write deals in SQL run it for theirs). `where` narrows the deals (`1` for all).
 */
export const backfillRollupsSql = (where: string) => [
  `INSERT INTO deal_created_rollups (organization_id, type, assigned_to, level, bucket, n, value)
   WITH RECURSIVE levels(l) AS (SELECT 0 UNION ALL SELECT l + 1 FROM levels WHERE l < ${MAX_LEVEL}),
   d AS (SELECT organization_id, type, IFNULL(assigned_to, '') AS agent, amount, CAST(julianday(substr(created_at, 1, 10)) - 2440587.5 AS INTEGER) AS day FROM deals WHERE ${where}),
   cube AS (SELECT organization_id, type, agent, amount, day FROM d UNION ALL SELECT organization_id, '${ANY}', agent, amount, day FROM d
            UNION ALL SELECT organization_id, type, '${ANY}', amount, day FROM d UNION ALL SELECT organization_id, '${ANY}', '${ANY}', amount, day FROM d)
   SELECT organization_id, type, agent, l, day >> l, COUNT(*), SUM(amount) FROM cube, levels WHERE true GROUP BY organization_id, type, agent, l, day >> l`,
  `INSERT INTO deal_decided_rollups (organization_id, type, level, bucket, stage, assigned_to, n, value, days)
   WITH RECURSIVE levels(l) AS (SELECT 0 UNION ALL SELECT l + 1 FROM levels WHERE l < ${MAX_LEVEL}),
   d AS (SELECT organization_id, type, stage, IFNULL(assigned_to, '') AS agent, amount, julianday(decided_at) - julianday(created_at) AS days,
                CAST(julianday(substr(decided_at, 1, 10)) - 2440587.5 AS INTEGER) AS day FROM deals WHERE decided_at IS NOT NULL AND ${where}),
   cube AS (SELECT organization_id, type, stage, agent, amount, days, day FROM d UNION ALL SELECT organization_id, '${ANY}', stage, agent, amount, days, day FROM d)
   SELECT organization_id, type, l, day >> l, stage, agent, COUNT(*), SUM(amount), SUM(days) FROM cube, levels WHERE true
   GROUP BY organization_id, type, l, day >> l, stage, agent`,
];
