import { expectReferences, referenceIssuesOf, references, referencesRead } from "../db/references";
import { and, desc, eq } from "drizzle-orm";
import { contacts, surveyResponses, surveys, surveyTemplates, users } from "../db/schema";
import type { SurveyStatus } from "../db/surveys";
import { expectNoRow, expectRow, StaleWrite, type Statement, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { newEvent } from "../events/outbox";
import { decodeNewestFirstCursor, newestFirstPage, olderThan } from "../crm/pagination";
import { type FieldIssue, InvalidState, NotFound, Validation } from "../lib/errors";
import { newId } from "../lib/ids";
import { loggableError } from "../lib/log";
import { nowIso } from "../lib/time";
import type { ActingFor, ServiceContext } from "../service-context";
import { registerPublicKeys } from "../shards/directory";
import { bumpSurveyFigures } from "../reputation/aggregates";
import type { Survey, SurveyCreate } from "./schemas";
import { mailInvitation, mintSurveyToken, encryptToken, surveyUrl } from "./invitations";
import { hasDefault } from "./templates";
export { surveysErasable } from "./erasure";

/**
 * Surveys (spec: Survey, Survey template, Survey state table, Rules 1). The moves the spec leaves open, decided here
 * and documented in /docs:
 *
 *   none ──create / DEAL_WON──▶ SCHEDULED ──cron mails it (EMAIL, at sendAt)──▶ SENT
 *   SCHEDULED | SENT ──public GET──▶ OPENED ──public POST──▶ COMPLETED
 *   SCHEDULED | SENT | OPENED ──skip──▶ SKIPPED;  ──30 days after creation──▶ EXPIRED
 *
 * The access token is 256 random bits; only its SHA-256 is stored (an EMAIL survey also keeps it encrypted until the
 * cron has mailed it, see db/surveys.ts). A re-issue replaces the hash, so the old token is dead at once. Every move
 * is a compare-and-set on the row's version, with its event, counters and response in the same batch.
 */
export type SurveyRow = typeof surveys.$inferSelect;

export const SURVEY_EXPIRY_DAYS = 30;
/** Statuses whose token still opens the survey (while not past expiresAt). */
export const LIVE: SurveyStatus[] = ["SCHEDULED", "SENT", "OPENED"];

export const toSurvey = (r: SurveyRow): Survey => {
  // The recipient's address is left out: it is the contact's, which reputation:read does not read.
  const { organizationId: _o, accessTokenHash: _h, pendingToken: _p, version: _v, recipientEmailKey: _e, ...rest } = r;
  return rest;
};

export const isLive = (r: Pick<SurveyRow, "status" | "expiresAt">, now = nowIso()) => LIVE.includes(r.status) && r.expiresAt > now;

type Created = Survey & { accessToken: string; surveyUrl: string };

const scheduledEvent = (ctx: ServiceContext, r: SurveyRow) =>
  newEvent(ctx, "SURVEY_SCHEDULED", {
    surveyId: r.id,
    agentUserId: r.agentUserId,
    recipientPersonId: r.recipientPersonId,
    dealId: r.dealId,
    channel: r.channel,
    trigger: r.trigger,
    sendAt: r.sendAt,
  });

/**
 * POST /api/reputation/surveys, and the DEAL_WON workflow (`trigger: "DEAL_WON"`, once per deal: a second schedule
 * of the same deal answers null). The references must be of the caller's organization: every bad one is listed in
 * one 400. The raw token is in the answer only (and, for EMAIL, in the mail the cron sends). `actingFor`: the route's
 * check of whose surveys the caller may send (the workflow acts for the system); `recipientEmailKey`: the address to
 * mail it to when known from before (a won deal's contact at the win), else the contact's now.
 */
export async function createSurvey(
  ctx: ServiceContext,
  input: SurveyCreate,
  {
    trigger = "MANUAL",
    actingFor,
    recipientEmailKey,
  }: { trigger?: SurveyRow["trigger"]; actingFor?: ActingFor; recipientEmailKey?: string | null } = {},
): Promise<Created | null> {
  actingFor?.(input.agentUserId);
  return withRetries(() => createSurveyOnce(ctx, input, trigger, recipientEmailKey));
}

async function createSurveyOnce(
  ctx: ServiceContext,
  input: SurveyCreate,
  trigger: SurveyRow["trigger"],
  recipientEmailKey: string | null | undefined,
): Promise<Created | null> {
  const org = ctx.organizationId;
  const refs = references(
    { path: ["recipientPersonId"], target: "contact", id: input.recipientPersonId },
    { path: ["dealId"], target: "deal", id: input.dealId },
  );
  const [templates, agents, refRow, [recipient]] = await ctx.db.batch([
    input.templateId
      ? ctx.db
          .select()
          .from(surveyTemplates)
          .where(and(eq(surveyTemplates.organizationId, org), eq(surveyTemplates.id, input.templateId)))
      : ctx.db.select().from(surveyTemplates).where(hasDefault(org)),
    ctx.db
      .select({ id: users.id })
      .from(users)
      .where(and(eq(users.organizationId, org), eq(users.id, input.agentUserId))),
    referencesRead(ctx, refs),
    ctx.db
      .select({ emailKey: contacts.emailKey })
      .from(contacts)
      .where(and(eq(contacts.organizationId, org), eq(contacts.id, input.recipientPersonId))),
  ]);
  const refIssues = referenceIssuesOf(refs, refRow);
  const issues: FieldIssue[] = [];
  const bad = (field: string, message: string) => issues.push({ field, path: [field], code: "invalid_reference", message });
  if (templates.length === 0)
    bad(
      "templateId",
      input.templateId
        ? "No survey template with this id in your organization"
        : "Your organization has no survey template yet: create one, or name templateId",
    );
  if (agents.length === 0) bad("agentUserId", "No user with this id in your organization");
  issues.push(...refIssues);
  if (issues.length) throw new Validation(issues);
  const template = templates[0]!;

  const { token, hash } = await mintSurveyToken();
  const now = Date.now();
  const at = new Date(now).toISOString();
  const row: SurveyRow = {
    id: newId(),
    organizationId: org,
    templateId: template.id,
    recipientPersonId: input.recipientPersonId,
    agentUserId: input.agentUserId,
    dealId: input.dealId ?? null,
    channel: input.channel,
    trigger,
    status: "SCHEDULED",
    accessTokenHash: hash,
    pendingToken: null,
    sendAt: new Date(now + template.sendDelayHours * 3_600_000).toISOString(),
    sentAt: null,
    openedAt: null,
    completedAt: null,
    skippedAt: null,
    expiredAt: null,
    recipientEmailKey:
      input.channel === "EMAIL" ? (recipientEmailKey !== undefined ? recipientEmailKey : (recipient?.emailKey ?? null)) : null,
    expiresAt: new Date(now + SURVEY_EXPIRY_DAYS * 86_400_000).toISOString(),
    createdAt: at,
    updatedAt: at,
    version: 1,
  };
  if (row.channel === "EMAIL") row.pendingToken = await encryptToken(ctx.env, row.id, token);
  const statements: Statement[] = [...expectReferences(ctx, refs)];
  if (trigger === "DEAL_WON")
    statements.push(
      expectNoRow(
        ctx.db,
        surveys,
        and(eq(surveys.organizationId, org), eq(surveys.dealId, row.dealId ?? ""), eq(surveys.trigger, "DEAL_WON")),
      ),
    );
  statements.push(ctx.db.insert(surveys).values(row));
  // A LINK survey is in the hands of whoever created it: it counts as sent now (the response rate's denominator).
  if (row.channel === "LINK") statements.push(...bumpSurveyFigures(ctx.db, org, row.agentUserId, { surveysSent: 1 }));
  // The token's key goes to the directory first: the public routes find the organization by it.
  await registerPublicKeys(ctx.directory, org, "survey_link", [hash]);
  try {
    await commit(ctx, statements, [scheduledEvent(ctx, row)]);
  } catch (err) {
    if (err instanceof StaleWrite && trigger === "DEAL_WON") return null;
    throw err;
  }
  return { ...toSurvey(row), accessToken: token, surveyUrl: surveyUrl(ctx.env, token) };
}

/** GET /api/reputation/surveys: newest first, keyset-paginated, by status and agent. */
export async function listSurveys(ctx: ServiceContext, q: { limit: number; cursor?: string; status?: SurveyStatus; agentUserId?: string }) {
  const after = decodeNewestFirstCursor(q.cursor);
  const rows = await ctx.db
    .select()
    .from(surveys)
    .where(
      and(
        eq(surveys.organizationId, ctx.organizationId),
        q.status ? eq(surveys.status, q.status) : undefined,
        q.agentUserId ? eq(surveys.agentUserId, q.agentUserId) : undefined,
        after ? olderThan(surveys.createdAt, surveys.id, after) : undefined,
      ),
    )
    .orderBy(desc(surveys.createdAt), desc(surveys.id))
    .limit(q.limit + 1);
  const { page, pagination } = newestFirstPage(rows, q.limit, (r) => ({ at: r.createdAt, id: r.id }));
  return { surveys: page.map(toSurvey), pagination };
}

async function findSurvey(ctx: ServiceContext, id: string): Promise<SurveyRow> {
  const row = await ctx.db
    .select()
    .from(surveys)
    .where(and(eq(surveys.organizationId, ctx.organizationId), eq(surveys.id, id)))
    .get();
  if (!row) throw new NotFound("Survey");
  return row;
}

/** GET /api/reputation/surveys/{id}: the survey with its response (and what the response workflow made of it). */
export async function getSurvey(ctx: ServiceContext, id: string) {
  const [rows, responses] = await ctx.db.batch([
    ctx.db
      .select()
      .from(surveys)
      .where(and(eq(surveys.organizationId, ctx.organizationId), eq(surveys.id, id))),
    ctx.db
      .select()
      .from(surveyResponses)
      .where(and(eq(surveyResponses.organizationId, ctx.organizationId), eq(surveyResponses.surveyId, id))),
  ]);
  if (!rows[0]) throw new NotFound("Survey");
  return toSurveyDetail(rows[0], responses[0] ?? null);
}

type ResponseRow = typeof surveyResponses.$inferSelect;

/** A survey as its single read shows it: with its response (and what the response workflow made of it), or null. */
export const toSurveyDetail = (
  survey: SurveyRow,
  r: Omit<ResponseRow, "ip" | "userAgent" | "analyzedAt" | "surveyId" | "organizationId"> | null,
) => ({
  ...toSurvey(survey),
  response: r
    ? {
        answers: r.answers,
        submittedAt: r.submittedAt,
        sentiment: r.sentiment,
        sentimentScore: r.sentimentScore,
        sentimentSource: r.sentimentSource,
        testimonialId: r.testimonialId,
      }
    : null,
});

/** The compare-and-set of one survey: it must still be at the version read. */
export const atVersion = (r: SurveyRow) =>
  and(eq(surveys.organizationId, r.organizationId), eq(surveys.id, r.id), eq(surveys.version, r.version));

function closed(r: SurveyRow): never {
  const why = isLive(r) ? r.status : r.status === "COMPLETED" || r.status === "SKIPPED" ? r.status : "EXPIRED";
  throw new InvalidState("survey_closed", `The survey is ${why.toLowerCase()}; its link can no longer be used`);
}

/**
 * POST …/surveys/{id}/reissue: a new token, the old one dead at once. An EMAIL survey not mailed yet is mailed with
 * the new link at its time; one already mailed (sentAt set) is mailed the new link now.
 */
export async function reissueSurvey(ctx: ServiceContext, id: string, actingFor: ActingFor): Promise<Created> {
  const { row, token } = await withRetries(async () => {
    const before = await findSurvey(ctx, id);
    actingFor(before.agentUserId);
    if (!isLive(before)) closed(before);
    const { token, hash } = await mintSurveyToken();
    const pendingToken = before.channel === "EMAIL" && before.sentAt === null ? await encryptToken(ctx.env, before.id, token) : null;
    const row: SurveyRow = { ...before, accessTokenHash: hash, pendingToken, updatedAt: nowIso(), version: before.version + 1 };
    await registerPublicKeys(ctx.directory, ctx.organizationId, "survey_link", [hash]);
    await commit(ctx, [expectRow(ctx.db, surveys, atVersion(before)), ctx.db.update(surveys).set(row).where(atVersion(before))]);
    return { row, token };
  });
  // The new token is committed: a mail that fails must not lose it, so the answer carries it whatever the mail did.
  if (row.channel === "EMAIL" && row.sentAt !== null)
    await mailInvitation(ctx.env, ctx.db, row, token).catch((err) =>
      ctx.log.error("re-issued survey link not mailed; the answer carries it", { surveyId: row.id, error: loggableError(err) }),
    );
  return { ...toSurvey(row), accessToken: token, surveyUrl: surveyUrl(ctx.env, token) };
}

/** POST …/surveys/{id}/skip: SCHEDULED, SENT or OPENED → SKIPPED; the link answers gone from now on. */
export async function skipSurvey(ctx: ServiceContext, id: string, actingFor: ActingFor): Promise<Survey> {
  return withRetries(async () => {
    const before = await findSurvey(ctx, id);
    actingFor(before.agentUserId);
    if (!isLive(before)) closed(before);
    const at = nowIso();
    const row: SurveyRow = { ...before, status: "SKIPPED", skippedAt: at, pendingToken: null, updatedAt: at, version: before.version + 1 };
    await commit(ctx, [expectRow(ctx.db, surveys, atVersion(before)), ctx.db.update(surveys).set(row).where(atVersion(before))]);
    return toSurvey(row);
  });
}
