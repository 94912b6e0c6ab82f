import type { ServiceContext } from "../service-context";
import { analyticsSql } from "./rollups";
import { round2 } from "./writes";
import { DEAL_STAGES, type DealAnalytics, type Pipeline } from "./schemas";

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
    return {
      stage,
      count,
      value: round2(count ? (r?.value ?? 0) : 0),
      averageProbability: count ? round2((r?.probability_sum ?? 0) / count) : 0,
    };
  });
  const totalDeals = stages.reduce((s, x) => s + x.count, 0);
  const totalValue = round2(stages.reduce((s, x) => s + x.value, 0));
  const won = byStage.get("CLOSED")?.count ?? 0;
  const lost = byStage.get("LOST")?.count ?? 0;
  return {
    totalValue,
    totalDeals,
    averageDealSize: totalDeals ? round2(totalValue / totalDeals) : 0,
    conversionRate: percent(won, won + lost),
    stages,
  };
}

const PERIOD_DAYS = { "7d": 7, "30d": 30, "90d": 90, "1y": 365 } as const;
/** Agents listed in topPerformers at most. */
export const TOP_PERFORMERS = 10;

export const ANALYTICS_RULES = `Over the period ending now: totalDeals and totalValue count the deals created in it; closedDeals and
closedValue the deals whose last stage move into CLOSED falls in it and that are still closed; averageTimeToClose is
their mean number of days from creation to CLOSED (null without any); conversionRate is the percent of the deals decided in
the period (moved into CLOSED or LOST, and still there) that were won. topPerformers: the assigned agents of the deals closed
in the period, by closed value (at most ${TOP_PERFORMERS}). assignedTo and type narrow every figure to those deals.`;

/**
 * GET /v1/deals/analytics: two aggregates in one D1 round trip, each the deals of the period's first, partial day (from
 * the deals' indexes) plus the whole days after it from the rollups (rollups.ts): a dozen rows whatever the number of
 * deals, grouped in SQL by stage and agent.
 */
export async function dealAnalytics(
  ctx: ServiceContext,
  q: { period: keyof typeof PERIOD_DAYS; assignedTo?: string; type?: string },
): Promise<DealAnalytics> {
  const now = new Date();
  const from = new Date(now.getTime() - PERIOD_DAYS[q.period] * 86_400_000);
  const statements = analyticsSql(ctx.organizationId, from, now, q);
  const d1 = ctx.d1;
  const [created, decided] = await d1.batch([
    d1.prepare(statements.created.sql).bind(...statements.created.params),
    d1.prepare(statements.decided.sql).bind(...statements.decided.params),
  ]);
  const c = created!.results[0] as { n: number; value: number };
  const groups = decided!.results as {
    stage: string;
    assigned_to: string | null;
    n: number;
    value: number;
    days: number;
    name: string | null;
  }[];
  const won = groups.filter((g) => g.stage === "CLOSED");
  const closedDeals = won.reduce((sum, g) => sum + g.n, 0);
  const lostDeals = groups.filter((g) => g.stage === "LOST").reduce((sum, g) => sum + g.n, 0);
  const days = won.reduce((sum, g) => sum + g.days, 0);
  const topPerformers = won
    .filter((g): g is typeof g & { assigned_to: string } => g.assigned_to !== null)
    .sort((x, y) => y.value - x.value || y.n - x.n || x.assigned_to.localeCompare(y.assigned_to))
    .slice(0, TOP_PERFORMERS)
    .map((g) => ({ agentId: g.assigned_to, name: g.name, deals: g.n, closedValue: round2(g.value) }));
  return {
    period: q.period,
    totalDeals: c.n,
    closedDeals,
    totalValue: round2(c.value),
    closedValue: round2(won.reduce((sum, g) => sum + g.value, 0)),
    averageTimeToClose: closedDeals ? Math.round((days / closedDeals) * 10) / 10 : null,
    conversionRate: percent(closedDeals, closedDeals + lostDeals),
    topPerformers,
  };
}
