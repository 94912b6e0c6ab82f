import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { reputationAggregates, users } from "../db/schema";
import { NotFound } from "../lib/errors";
import type { Statement } from "../db/write";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";

type Row = typeof reputationAggregates.$inferSelect;
const ORG = "";

/**
 * The statements that recompute the agent's and the organization's rollups from the published testimonials, for the
 * batch that publishes or unpublishes: they run after the change in the same transaction, so the rollups are exact
 * however the writes interleave. The survey figures (NPS, response rate) are left as they are.
 */
export function recomputeAggregates(db: Db, organizationId: string, agentUserId: string): Statement[] {
  const at = nowIso();
  const one = (agent: string) =>
    // Columns in table order: organization_id, agent_user_id, total_reviews, rating_sum, average_rating, rating1..5,
    // first_published_at, nps_promoters, nps_passives, nps_detractors, surveys_sent, surveys_completed, updated_at.
    db
      .insert(reputationAggregates)
      .select(
        sql`SELECT ${organizationId}, ${agent}, COUNT(*), COALESCE(SUM(rating), 0), AVG(rating),
                   COALESCE(SUM(rating = 1), 0), COALESCE(SUM(rating = 2), 0), COALESCE(SUM(rating = 3), 0), COALESCE(SUM(rating = 4), 0), COALESCE(SUM(rating = 5), 0),
                   MIN(published_at), 0, 0, 0, 0, 0, ${at}
            FROM testimonials WHERE organization_id = ${organizationId} AND status = 'PUBLISHED' ${agent === ORG ? sql`` : sql`AND agent_user_id = ${agent}`}`,
      )
      .onConflictDoUpdate({
        target: [reputationAggregates.organizationId, reputationAggregates.agentUserId],
        set: {
          totalReviews: sql`excluded.total_reviews`,
          ratingSum: sql`excluded.rating_sum`,
          averageRating: sql`excluded.average_rating`,
          rating1: sql`excluded.rating1`,
          rating2: sql`excluded.rating2`,
          rating3: sql`excluded.rating3`,
          rating4: sql`excluded.rating4`,
          rating5: sql`excluded.rating5`,
          firstPublishedAt: sql`excluded.first_published_at`,
          updatedAt: sql`excluded.updated_at`,
        },
      });
  return [one(agentUserId), one(ORG)];
}

const round = (n: number, places = 2) => Math.round(n * 10 ** places) / 10 ** places;

/** A rollup row as the API shows it; the rates are arithmetic on the row, never a scan. */
export function toAggregate(row: Row | undefined, agentUserId: string | null, now = Date.now()) {
  const total = row?.totalReviews ?? 0;
  const answers = (row?.npsPromoters ?? 0) + (row?.npsPassives ?? 0) + (row?.npsDetractors ?? 0);
  const months = row?.firstPublishedAt ? Math.max(1, (now - Date.parse(row.firstPublishedAt)) / (30 * 86_400_000)) : 1;
  return {
    scope: agentUserId ? ("AGENT" as const) : ("ORG" as const),
    agentUserId,
    totalReviews: total,
    averageRating: row?.averageRating == null ? null : round(row.averageRating),
    ratingDistribution: { 1: row?.rating1 ?? 0, 2: row?.rating2 ?? 0, 3: row?.rating3 ?? 0, 4: row?.rating4 ?? 0, 5: row?.rating5 ?? 0 },
    reviewVelocity: round(total / months),
    nps: answers === 0 ? null : round((100 * ((row?.npsPromoters ?? 0) - (row?.npsDetractors ?? 0))) / answers, 1),
    responseRate: row && row.surveysSent > 0 ? round(row.surveysCompleted / row.surveysSent, 4) : null,
    updatedAt: row?.updatedAt ?? null,
  };
}

export const aggregateQuery = (db: Db, organizationId: string, agentUserId: string | null) =>
  db
    .select()
    .from(reputationAggregates)
    .where(and(eq(reputationAggregates.organizationId, organizationId), eq(reputationAggregates.agentUserId, agentUserId ?? ORG)));

/** GET /api/reputation/aggregate: the agent's rollup, or the organization's without agentUserId. */
export async function getAggregate(ctx: ServiceContext, agentUserId: string | undefined) {
  const [rows, agents] = await ctx.db.batch([
    aggregateQuery(ctx.db, ctx.organizationId, agentUserId ?? null),
    ctx.db
      .select({ id: users.id })
      .from(users)
      .where(and(eq(users.id, agentUserId ?? ""), eq(users.organizationId, ctx.organizationId))),
  ]);
  if (agentUserId !== undefined && agents.length === 0) throw new NotFound("Agent");
  return toAggregate(rows[0], agentUserId ?? null);
}

export type SurveyFigures = Partial<Pick<Row, "surveysSent" | "surveysCompleted" | "npsPromoters" | "npsPassives" | "npsDetractors">>;

/** An NPS answer's class: 9–10 promoter, 7–8 passive, 0–6 detractor. */
export const npsClass = (score: number): SurveyFigures =>
  score >= 9 ? { npsPromoters: 1 } : score >= 7 ? { npsPassives: 1 } : { npsDetractors: 1 };

/**
 * The statements that add survey figures (a survey sent, one completed and its NPS answer) to the agent's and the
 * organization's rollups, for the batch of the change they count: exactly once, since that batch is guarded.
 */
export function bumpSurveyFigures(db: Db, organizationId: string, agentUserId: string, figures: SurveyFigures): Statement[] {
  const at = nowIso();
  const delta = { surveysSent: 0, surveysCompleted: 0, npsPromoters: 0, npsPassives: 0, npsDetractors: 0, ...figures };
  const one = (agent: string) =>
    db
      .insert(reputationAggregates)
      .values({ organizationId, agentUserId: agent, ...delta, updatedAt: at })
      .onConflictDoUpdate({
        target: [reputationAggregates.organizationId, reputationAggregates.agentUserId],
        set: {
          surveysSent: sql`${reputationAggregates.surveysSent} + excluded.surveys_sent`,
          surveysCompleted: sql`${reputationAggregates.surveysCompleted} + excluded.surveys_completed`,
          npsPromoters: sql`${reputationAggregates.npsPromoters} + excluded.nps_promoters`,
          npsPassives: sql`${reputationAggregates.npsPassives} + excluded.nps_passives`,
          npsDetractors: sql`${reputationAggregates.npsDetractors} + excluded.nps_detractors`,
          updatedAt: sql`excluded.updated_at`,
        },
      });
  return [one(agentUserId), one(ORG)];
}
