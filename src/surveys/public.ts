import { and, eq } from "drizzle-orm";
import { organizations, surveyResponses, surveys, surveyTemplates } from "../db/schema";
import { expectRow, StaleWrite, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { newEvent } from "../events/outbox";
import { resourceEvent } from "../events/resource-event";
import { InvalidState, Validation } from "../lib/errors";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { bumpSurveyFigures, npsClass, type SurveyFigures } from "../reputation/aggregates";
import { type Answers, checkAnswers, type SurveyQuestion } from "./schemas";
import { surveyTokenKey } from "./invitations";
import { atVersion, isLive, toSurveyDetail } from "./service";

/**
 * The public survey (GET and POST /api/public/survey/{token}): reached by its token alone, no session. The route has
 * found the token's organization in the directory and opened its shard; `organizationId` is that one.
 */
type PublicContext = Omit<ServiceContext, "actor">;

/** The survey of a raw token, with its template and brokerage name, in one query; null when unknown. */
async function byToken(base: PublicContext, token: string) {
  const hash = await surveyTokenKey(token);
  if (!hash) return null;
  const row = await base.db
    .select({ survey: surveys, template: surveyTemplates, brokerage: organizations.name })
    .from(surveys)
    .innerJoin(surveyTemplates, eq(surveyTemplates.id, surveys.templateId))
    .innerJoin(organizations, eq(organizations.id, surveys.organizationId))
    .where(and(eq(surveys.organizationId, base.organizationId), eq(surveys.accessTokenHash, hash)))
    .get();
  return row ?? null;
}

const publicContext = (base: PublicContext): ServiceContext => ({ ...base, actor: { type: "public", userId: null } });

/**
 * GET /api/public/survey/{token}: the questions and the brokerage's name only. The first open moves SCHEDULED or SENT
 * to OPENED and emits SURVEY_OPENED (once, whoever opens it at the same time). Null: the uniform gone.
 */
export async function openSurvey(base: PublicContext, token: string) {
  const found = await byToken(base, token);
  if (!found || !isLive(found.survey)) return null;
  const { survey, template } = found;
  if (survey.status !== "OPENED") {
    const ctx = publicContext(base);
    const at = nowIso();
    try {
      await commit(
        ctx,
        // An EMAIL survey opened before its mail went out (the agent previewing the link, say) is still mailed at its time.
        [
          expectRow(ctx.db, surveys, atVersion(survey)),
          ctx.db
            .update(surveys)
            .set({ status: "OPENED", openedAt: at, updatedAt: at, version: survey.version + 1 })
            .where(atVersion(survey)),
        ],
        [newEvent(ctx, "SURVEY_OPENED", { surveyId: survey.id, agentUserId: survey.agentUserId, dealId: survey.dealId })],
      );
    } catch (err) {
      // Another request moved it first (opened, completed, skipped or re-issued): answer as the row now stands.
      if (!(err instanceof StaleWrite)) throw err;
      return openSurvey(base, token);
    }
  }
  return {
    survey: { title: template.name, description: template.description, questions: template.questions, expiresAt: survey.expiresAt },
    branding: { brokerage: found.brokerage },
  };
}

/** The answer to the NPS question of a response, if the template has one and it was answered. */
export const npsAnswer = (questions: SurveyQuestion[], answers: Answers) => {
  const q = questions.find((x) => x.type === "nps");
  const v = q ? answers[q.id] : undefined;
  return typeof v === "number" ? v : undefined;
};

/**
 * POST /api/public/survey/{token} (Rules 1): the answers validated against the template (every problem in one 400),
 * stored; the survey COMPLETED; the rollups counted (one completed survey, its NPS answer); SURVEY_COMPLETED emitted;
 * all in one batch guarded on the survey's version, so of concurrent submissions one lands and the others find the
 * survey gone. Null: the uniform gone. A live survey that was never opened is refused (409 invalid_state), nothing written.
 */
export async function submitSurvey(
  base: PublicContext,
  token: string,
  raw: Record<string, string | number | boolean | null>,
  meta: { ip: string | null; userAgent: string | null },
) {
  return withRetries(async () => {
    const found = await byToken(base, token);
    if (!found || !isLive(found.survey)) return null;
    const { survey, template } = found;
    // Spec, Survey state table: a response is taken only from OPENED; a link never opened has shown no questions.
    if (survey.status !== "OPENED")
      throw new InvalidState("invalid_state", "The survey has not been opened; open its link (GET) first, then answer");
    const { answers, issues } = checkAnswers(template.questions, raw);
    if (issues.length) throw new Validation(issues);
    const ctx = publicContext(base);
    const at = nowIso();
    const nps = npsAnswer(template.questions, answers);
    // An EMAIL survey answered before its mail went out reached its client anyway: it counts as sent now, and is not mailed.
    const unsent = survey.channel === "EMAIL" && survey.sentAt === null;
    const figures: SurveyFigures = {
      surveysCompleted: 1,
      ...(unsent ? { surveysSent: 1 } : {}),
      ...(nps === undefined ? {} : npsClass(nps)),
    };
    const completed = {
      ...survey,
      status: "COMPLETED" as const,
      completedAt: at,
      pendingToken: null,
      updatedAt: at,
      version: survey.version + 1,
    };
    const response = { answers, submittedAt: at, sentiment: null, sentimentScore: null, sentimentSource: null, testimonialId: null };
    await commit(
      ctx,
      [
        expectRow(ctx.db, surveys, atVersion(survey)),
        ctx.db
          .update(surveys)
          .set({ status: "COMPLETED", completedAt: at, pendingToken: null, updatedAt: at, version: completed.version })
          .where(atVersion(survey)),
        ctx.db.insert(surveyResponses).values({
          surveyId: survey.id,
          organizationId: survey.organizationId,
          answers,
          submittedAt: at,
          ip: meta.ip,
          userAgent: meta.userAgent,
        }),
        ...bumpSurveyFigures(ctx.db, survey.organizationId, survey.agentUserId, figures),
      ],
      [
        newEvent(ctx, "SURVEY_COMPLETED", {
          surveyId: survey.id,
          agentUserId: survey.agentUserId,
          dealId: survey.dealId,
          recipientPersonId: survey.recipientPersonId,
        }),
        resourceEvent(ctx, "survey.completed", toSurveyDetail(completed, response), toSurveyDetail(survey, null)),
      ],
    );
    return { completed: true as const };
  });
}
