import type { ServiceContext } from "../platform/context";
import { DEAL_STAGES, type DealAnalytics, type Pipeline } from "./schemas";

const round2 = (n: number) => Math.round(n * 100) / 100;
const percent = (part: number, whole: number) => (whole > 0 ? round2((part / whole) * 100) : 0);

export const PIPELINE_RULES = `Figures over every deal of the organization, whatever its stage: totalDeals and totalValue sum the stages;
averageDealSize is totalValue / totalDeals; conversionRate is the percent of decided deals that were won, CLOSED / (CLOSED + LOST) × 100
(0 before any is decided); each stage's averageProbability is the mean probability of its deals. Every stage is listed, in
pipeline order, also when empty. Read from per-stage figures kept in the batch of every deal write: one query, however many deals.`;

/** GET /v1/deals/pipeline: the per-stage figures (deal_stage_stats), in one query. */
export async function pipelineOverview(ctx: ServiceContext): Promise<Pipeline> {
  const { results } = await ctx.d1
    .prepare("SELECT stage, count, value, probability_sum FROM deal_stage_stats WHERE organization_id = ?")
    .bind(ctx.organizationId)
    .all<{ stage: string; count: number; value: number; probability_sum: number }>();
  const byStage = new Map(results.map((r) => [r.stage, r]));
  const stages = DEAL_STAGES.map((stage) => {
    const r = byStage.get(stage);
    const count = r?.count ?? 0;
    return { stage, count, value: round2(count ? (r?.value ?? 0) : 0), averageProbability: count ? round2((r?.probability_sum ?? 0) / count) : 0 };
  });
  const totalDeals = stages.reduce((s, x) => s + x.count, 0);
  const totalValue = round2(stages.reduce((s, x) => s + x.value, 0));
  const won = byStage.get("CLOSED")?.count ?? 0;
  const lost = byStage.get("LOST")?.count ?? 0;
  return { totalValue, totalDeals, averageDealSize: totalDeals ? round2(totalValue / totalDeals) : 0, conversionRate: percent(won, won + lost), stages };
}

const PERIOD_DAYS = { "7d": 7, "30d": 30, "90d": 90, "1y": 365 } as const;
/** Agents listed in topPerformers at most. */
export const TOP_PERFORMERS = 10;

export const ANALYTICS_RULES = `Over the period ending now: totalDeals and totalValue count the deals created in it; closedDeals and
closedValue the deals that entered CLOSED in it (from the stage-change history) and are still closed; averageTimeToClose is
their mean number of days from creation to CLOSED (null without any); conversionRate is the percent of the deals decided in
the period (entered CLOSED or LOST, and still there) that were won. topPerformers: the assigned agents of the deals closed
in the period, by closed value (at most ${TOP_PERFORMERS}). assignedTo and type narrow every figure to those deals.`;

/**
 * GET /v1/deals/analytics: four aggregate queries in one D1 round trip, each on an index led by organization_id
 * (deals by creation date, stage changes by target stage and date).
 */
export async function dealAnalytics(ctx: ServiceContext, q: { period: keyof typeof PERIOD_DAYS; assignedTo?: string; type?: string }): Promise<DealAnalytics> {
  const from = new Date(Date.now() - PERIOD_DAYS[q.period] * 86_400_000).toISOString();
  const narrow: string[] = [];
  const narrowParams: unknown[] = [];
  if (q.type) (narrow.push("d.type = ?"), narrowParams.push(q.type));
  if (q.assignedTo) (narrow.push("d.assigned_to = ?"), narrowParams.push(q.assignedTo));
  const and = narrow.map((c) => ` AND ${c}`).join("");
  const org = ctx.organizationId;
  // Deals that entered `stage` in the period and are still there (a reopened deal no longer counts as won or lost).
  const decided = (stage: "CLOSED" | "LOST") =>
    `SELECT DISTINCT d.id, d.amount, d.assigned_to, d.created_at, d.closed_at FROM deal_stage_changes c JOIN deals d ON d.id = c.deal_id AND d.organization_id = c.organization_id
     WHERE c.organization_id = ? AND c.to_stage = '${stage}' AND c.at >= ? AND d.stage = '${stage}'${and}`;
  const d1 = ctx.d1;
  const [created, closed, lost, top] = await d1.batch([
    d1.prepare(`SELECT COUNT(*) AS n, IFNULL(SUM(d.amount), 0) AS value FROM deals d WHERE d.organization_id = ? AND d.created_at >= ?${and}`).bind(org, from, ...narrowParams),
    d1
      .prepare(`SELECT COUNT(*) AS n, IFNULL(SUM(amount), 0) AS value, AVG(julianday(closed_at) - julianday(created_at)) AS days FROM (${decided("CLOSED")})`)
      .bind(org, from, ...narrowParams),
    d1.prepare(`SELECT COUNT(*) AS n FROM (${decided("LOST")})`).bind(org, from, ...narrowParams),
    d1
      .prepare(
        `SELECT w.assigned_to AS agent_id, u.name AS name, COUNT(*) AS deals, SUM(w.amount) AS closed_value FROM (${decided("CLOSED")}) w
         LEFT JOIN users u ON u.id = w.assigned_to AND u.organization_id = ?
         WHERE w.assigned_to IS NOT NULL GROUP BY w.assigned_to ORDER BY closed_value DESC, deals DESC, agent_id LIMIT ${TOP_PERFORMERS}`,
      )
      .bind(org, from, ...narrowParams, org),
  ]);
  const c = created!.results[0] as { n: number; value: number };
  const w = closed!.results[0] as { n: number; value: number; days: number | null };
  const l = lost!.results[0] as { n: number };
  return {
    period: q.period,
    totalDeals: c.n,
    closedDeals: w.n,
    totalValue: round2(c.value),
    closedValue: round2(w.value),
    averageTimeToClose: w.days === null ? null : Math.round(w.days * 10) / 10,
    conversionRate: percent(w.n, w.n + l.n),
    topPerformers: (top!.results as { agent_id: string; name: string | null; deals: number; closed_value: number }[]).map((r) => ({
      agentId: r.agent_id,
      name: r.name,
      deals: r.deals,
      closedValue: round2(r.closed_value),
    })),
  };
}
