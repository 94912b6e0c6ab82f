import { expectReferences, referenceIssues, references } from "../db/references";
import { and, desc, eq, inArray, isNull, lte, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { contacts, deals, organizations, surveyResponses, surveys, surveyTemplates, trashEntries, users } from "../db/schema";
import type { SurveyStatus } from "../db/surveys";
import { commit, expectNoRow, expectRow, guard, StaleWrite, type Statement, withRetries } from "../db/write";
import { type Env, readConfig } from "../env";
import type { EventConsumer } from "../events/consumers";
import type { EventEnvelope } from "../events/envelope";
import { newEvent } from "../events/outbox";
import { mailerFor } from "../mail/mailer";
import { newToken, sha256Hex } from "../lib/crypto";
import { decodeNewestFirstCursor, newestFirstPage, olderThan } from "../crm/pagination";
import { Conflict, type FieldIssue, InvalidState, NotConfigured, NotFound, Validation } from "../lib/errors";
import { newId } from "../lib/ids";
import { loggableError } from "../lib/log";
import { openText, sealText } from "../lib/secret-box";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../platform/context";
import { bumpSurveyFigures, npsClass, type SurveyFigures } from "./aggregates";
import {
  type Answers,
  checkAnswers,
  STANDARD_TEMPLATE,
  type Survey,
  type SurveyCreate,
  type SurveyQuestion,
  type SurveyTemplate,
  type TemplateCreate,
} from "./survey-schema";

/**
 * Surveys (spec: Survey, Survey template, Survey state table, Rules 1). The moves the spec leaves open, decided here
 * and documented in /docs:
 *
 *   none ──create / DEAL_WON──▶ SCHEDULED ──cron mails it (EMAIL, at sendAt)──▶ SENT
 *   SCHEDULED | SENT ──public GET──▶ OPENED ──public POST──▶ COMPLETED
 *   SCHEDULED | SENT | OPENED ──skip──▶ SKIPPED;  ──30 days after creation──▶ EXPIRED
 *
 * The access token is 256 random bits; only its SHA-256 is stored (an EMAIL survey also keeps it sealed until the
 * cron has mailed it, see db/surveys.ts). A re-issue replaces the hash, so the old token is dead at once. Every move
 * is a compare-and-set on the row's version, with its event, counters and response in the same batch.
 */
type SurveyRow = typeof surveys.$inferSelect;
type TemplateRow = typeof surveyTemplates.$inferSelect;

export const SURVEY_EXPIRY_DAYS = 30;
export const MAX_TEMPLATES = 100;
/** Statuses whose token still opens the survey (while not past expiresAt). */
const LIVE: SurveyStatus[] = ["SCHEDULED", "SENT", "OPENED"];
const TOKEN_SEAL_PURPOSE = "survey-token";
/** How long the cron's claim on a due survey lasts: a send that crashed mid-way is tried again after it. */
const SEND_LEASE_MS = 10 * 60_000;

export const surveyUrl = (env: Env, token: string) => `${readConfig(env).APP_URL.replace(/\/$/, "")}/survey/${token}`;

const toTemplate = (r: TemplateRow): SurveyTemplate => {
  const { organizationId: _o, ...rest } = r;
  return rest;
};

export const toSurvey = (r: SurveyRow): Survey => {
  const { organizationId: _o, accessTokenHash: _h, pendingToken: _p, version: _v, ...rest } = r;
  return rest;
};

const isLive = (r: Pick<SurveyRow, "status" | "expiresAt">, now = nowIso()) => LIVE.includes(r.status) && r.expiresAt > now;

/* ------------------------------------------------------------------ templates */

/** GET /api/reputation/surveys/templates: newest first, keyset-paginated. */
export async function listTemplates(ctx: ServiceContext, q: { limit: number; cursor?: string }) {
  const after = decodeNewestFirstCursor(q.cursor);
  const rows = await ctx.db
    .select()
    .from(surveyTemplates)
    .where(and(eq(surveyTemplates.organizationId, ctx.organizationId), after ? olderThan(surveyTemplates.createdAt, surveyTemplates.id, after) : undefined))
    .orderBy(desc(surveyTemplates.createdAt), desc(surveyTemplates.id))
    .limit(q.limit + 1);
  const { page, pagination } = newestFirstPage(rows, q.limit, (r) => ({ at: r.createdAt, id: r.id }));
  return { templates: page.map(toTemplate), pagination };
}

const hasDefault = (organizationId: string) => and(eq(surveyTemplates.organizationId, organizationId), eq(surveyTemplates.isDefault, true));

function templateRow(organizationId: string, input: TemplateCreate, isDefault: boolean, builtIn: boolean): TemplateRow {
  const at = nowIso();
  return {
    id: newId(),
    organizationId,
    name: input.name,
    description: input.description || null,
    questions: input.questions,
    sendDelayHours: input.sendDelayHours,
    isDefault,
    builtIn,
    createdAt: at,
    updatedAt: at,
  };
}

/**
 * POST /api/reputation/surveys/templates. The first template of an organization is its default; `isDefault: true`
 * moves the default to the new one (in the same batch, so there is always exactly one).
 */
export async function createTemplate(ctx: ServiceContext, input: TemplateCreate): Promise<SurveyTemplate> {
  const mine = eq(surveyTemplates.organizationId, ctx.organizationId);
  return withRetries(async () => {
    const [[count], [current]] = await ctx.db.batch([
      ctx.db.select({ n: sql<number>`COUNT(*)` }).from(surveyTemplates).where(mine),
      ctx.db.select({ id: surveyTemplates.id }).from(surveyTemplates).where(hasDefault(ctx.organizationId)),
    ]);
    if ((count?.n ?? 0) >= MAX_TEMPLATES) throw new Conflict(`An organization keeps at most ${MAX_TEMPLATES} survey templates`, "template_limit");
    const isDefault = input.isDefault === true || !current;
    const row = templateRow(ctx.organizationId, input, isDefault, false);
    const statements: Statement[] = [guard(ctx.db, sql`(SELECT COUNT(*) FROM ${surveyTemplates} WHERE ${mine}) < ${MAX_TEMPLATES}`)];
    if (isDefault && current) statements.push(ctx.db.update(surveyTemplates).set({ isDefault: false, updatedAt: row.createdAt }).where(hasDefault(ctx.organizationId)));
    // A default that appeared since the read (another first template) makes this one a retry, not a second default.
    if (isDefault && !current) statements.push(expectNoRow(ctx.db, surveyTemplates, hasDefault(ctx.organizationId)));
    statements.push(ctx.db.insert(surveyTemplates).values(row));
    await commit(ctx, statements);
    return toTemplate(row);
  });
}

/** The organization's default template; the standard one, made now, when it has none yet. */
export async function defaultTemplate(ctx: ServiceContext): Promise<TemplateRow> {
  return withRetries(async () => {
    const found = await ctx.db.select().from(surveyTemplates).where(hasDefault(ctx.organizationId)).get();
    if (found) return found;
    const row = templateRow(ctx.organizationId, STANDARD_TEMPLATE, true, true);
    await commit(ctx, [expectNoRow(ctx.db, surveyTemplates, hasDefault(ctx.organizationId)), ctx.db.insert(surveyTemplates).values(row)]);
    return row;
  });
}

/* ------------------------------------------------------------------ surveys */

async function sealToken(env: Env, surveyId: string, token: string) {
  const key = readConfig(env).SURVEY_TOKEN_KEY;
  if (!key) throw new NotConfigured("SURVEY_TOKEN_KEY (needed to mail surveys later; use channel LINK without it)");
  return sealText(key, TOKEN_SEAL_PURPOSE, surveyId, token);
}

async function mintSurveyToken() {
  const token = newToken("srv");
  return { token, hash: await sha256Hex(token) };
}

type Created = Survey & { accessToken: string; surveyUrl: string };

const scheduledEvent = (ctx: ServiceContext, r: SurveyRow) =>
  newEvent(ctx, "SURVEY_SCHEDULED", { surveyId: r.id, agentUserId: r.agentUserId, recipientPersonId: r.recipientPersonId, dealId: r.dealId, channel: r.channel, trigger: r.trigger, sendAt: r.sendAt });

/**
 * POST /api/reputation/surveys, and the DEAL_WON workflow (`trigger: "DEAL_WON"`, once per deal: a second schedule
 * of the same deal answers null). The references must be of the caller's organization: every bad one is listed in
 * one 400. The raw token is in the answer only (and, for EMAIL, in the mail the cron sends).
 */
export async function createSurvey(ctx: ServiceContext, input: SurveyCreate, trigger: SurveyRow["trigger"] = "MANUAL"): Promise<Created | null> {
  return withRetries(() => createSurveyOnce(ctx, input, trigger));
}

async function createSurveyOnce(ctx: ServiceContext, input: SurveyCreate, trigger: SurveyRow["trigger"]): Promise<Created | null> {
  const org = ctx.organizationId;
  const refs = references({ path: ["recipientPersonId"], target: "contact", id: input.recipientPersonId }, { path: ["dealId"], target: "deal", id: input.dealId });
  const [templates, agents, refIssues] = await Promise.all([
    input.templateId
      ? ctx.db.select().from(surveyTemplates).where(and(eq(surveyTemplates.organizationId, org), eq(surveyTemplates.id, input.templateId)))
      : ctx.db.select().from(surveyTemplates).where(hasDefault(org)),
    ctx.db.select({ id: users.id }).from(users).where(and(eq(users.organizationId, org), eq(users.id, input.agentUserId))),
    referenceIssues(ctx, refs),
  ]);
  const issues: FieldIssue[] = [];
  const bad = (field: string, message: string) => issues.push({ field, path: [field], code: "invalid_reference", message });
  if (templates.length === 0) bad("templateId", input.templateId ? "No survey template with this id in your organization" : "Your organization has no survey template yet: create one, or name templateId");
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
    expiresAt: new Date(now + SURVEY_EXPIRY_DAYS * 86_400_000).toISOString(),
    createdAt: at,
    updatedAt: at,
    version: 1,
  };
  if (row.channel === "EMAIL") row.pendingToken = await sealToken(ctx.env, row.id, token);
  const statements: Statement[] = [...expectReferences(ctx, refs)];
  if (trigger === "DEAL_WON") statements.push(expectNoRow(ctx.db, surveys, and(eq(surveys.organizationId, org), eq(surveys.dealId, row.dealId ?? ""), eq(surveys.trigger, "DEAL_WON"))));
  statements.push(ctx.db.insert(surveys).values(row));
  // A LINK survey is in the hands of whoever created it: it counts as sent now (the response rate's denominator).
  if (row.channel === "LINK") statements.push(...bumpSurveyFigures(ctx.db, org, row.agentUserId, { surveysSent: 1 }));
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
  const row = await ctx.db.select().from(surveys).where(and(eq(surveys.organizationId, ctx.organizationId), eq(surveys.id, id))).get();
  if (!row) throw new NotFound("Survey");
  return row;
}

/** GET /api/reputation/surveys/{id}: the survey with its response (and what the response workflow made of it). */
export async function getSurvey(ctx: ServiceContext, id: string) {
  const [rows, responses] = await ctx.db.batch([
    ctx.db.select().from(surveys).where(and(eq(surveys.organizationId, ctx.organizationId), eq(surveys.id, id))),
    ctx.db.select().from(surveyResponses).where(and(eq(surveyResponses.organizationId, ctx.organizationId), eq(surveyResponses.surveyId, id))),
  ]);
  if (!rows[0]) throw new NotFound("Survey");
  const r = responses[0];
  const response = r ? { answers: r.answers, submittedAt: r.submittedAt, sentiment: r.sentiment, sentimentScore: r.sentimentScore, sentimentSource: r.sentimentSource, testimonialId: r.testimonialId } : null;
  return { ...toSurvey(rows[0]), response };
}

/** The compare-and-set of one survey: it must still be at the version read. */
const atVersion = (r: SurveyRow) => and(eq(surveys.organizationId, r.organizationId), eq(surveys.id, r.id), eq(surveys.version, r.version));

function closed(r: SurveyRow): never {
  const why = isLive(r) ? r.status : r.status === "COMPLETED" || r.status === "SKIPPED" ? r.status : "EXPIRED";
  throw new InvalidState("survey_closed", `The survey is ${why.toLowerCase()}; its link can no longer be used`);
}

/**
 * POST …/surveys/{id}/reissue: a new token, the old one dead at once. An EMAIL survey not mailed yet is mailed with
 * the new link at its time; one already mailed (sentAt set) is mailed the new link now.
 */
export async function reissueSurvey(ctx: ServiceContext, id: string): Promise<Created> {
  const { row, token } = await withRetries(async () => {
    const before = await findSurvey(ctx, id);
    if (!isLive(before)) closed(before);
    const { token, hash } = await mintSurveyToken();
    const pendingToken = before.channel === "EMAIL" && before.sentAt === null ? await sealToken(ctx.env, before.id, token) : null;
    const row: SurveyRow = { ...before, accessTokenHash: hash, pendingToken, updatedAt: nowIso(), version: before.version + 1 };
    await commit(ctx, [expectRow(ctx.db, surveys, atVersion(before)), ctx.db.update(surveys).set(row).where(atVersion(before))]);
    return { row, token };
  });
  // The new token is committed: a mail that fails must not lose it, so the answer carries it whatever the mail did.
  if (row.channel === "EMAIL" && row.sentAt !== null)
    await mailInvitation(ctx.env, ctx.db, row, token).catch((err) =>
      console.error(JSON.stringify({ level: "error", msg: "re-issued survey link not mailed; the answer carries it", surveyId: row.id, error: loggableError(err) })),
    );
  return { ...toSurvey(row), accessToken: token, surveyUrl: surveyUrl(ctx.env, token) };
}

/** POST …/surveys/{id}/skip: SCHEDULED, SENT or OPENED → SKIPPED; the link answers gone from now on. */
export async function skipSurvey(ctx: ServiceContext, id: string): Promise<Survey> {
  return withRetries(async () => {
    const before = await findSurvey(ctx, id);
    if (!isLive(before)) closed(before);
    const at = nowIso();
    const row: SurveyRow = { ...before, status: "SKIPPED", skippedAt: at, pendingToken: null, updatedAt: at, version: before.version + 1 };
    await commit(ctx, [expectRow(ctx.db, surveys, atVersion(before)), ctx.db.update(surveys).set(row).where(atVersion(before))]);
    return toSurvey(row);
  });
}

/* ------------------------------------------------------------------ public */

type PublicContext = Omit<ServiceContext, "organizationId" | "actor">;

/** The survey of a raw token, with its template and brokerage name, in one query; null when unknown. */
async function byToken(db: Db, token: string) {
  if (!/^srv_[A-Za-z0-9_-]{43}$/.test(token)) return null;
  const hash = await sha256Hex(token);
  const row = await db
    .select({ survey: surveys, template: surveyTemplates, brokerage: organizations.name })
    .from(surveys)
    .innerJoin(surveyTemplates, eq(surveyTemplates.id, surveys.templateId))
    .innerJoin(organizations, eq(organizations.id, surveys.organizationId))
    .where(eq(surveys.accessTokenHash, hash))
    .get();
  return row ?? null;
}

const publicContext = (base: PublicContext, organizationId: string): ServiceContext => ({ ...base, organizationId, actor: { type: "public", userId: null } });

/**
 * GET /api/public/survey/{token}: the questions and the brokerage's name only. The first open moves SCHEDULED or SENT
 * to OPENED and emits SURVEY_OPENED (once, whoever opens it at the same time). Null: the uniform gone.
 */
export async function openSurvey(base: PublicContext, token: string) {
  const found = await byToken(base.db, token);
  if (!found || !isLive(found.survey)) return null;
  const { survey, template } = found;
  if (survey.status !== "OPENED") {
    const ctx = publicContext(base, survey.organizationId);
    const at = nowIso();
    try {
      await commit(
        ctx,
        // An EMAIL survey opened before its mail went out (the agent previewing the link, say) is still mailed at its time.
        [expectRow(ctx.db, surveys, atVersion(survey)), ctx.db.update(surveys).set({ status: "OPENED", openedAt: at, updatedAt: at, version: survey.version + 1 }).where(atVersion(survey))],
        [newEvent(ctx, "SURVEY_OPENED", { surveyId: survey.id, agentUserId: survey.agentUserId, dealId: survey.dealId })],
      );
    } catch (err) {
      // Another request moved it first (opened, completed, skipped or re-issued): answer as the row now stands.
      if (!(err instanceof StaleWrite)) throw err;
      return openSurvey(base, token);
    }
  }
  return { survey: { title: template.name, description: template.description, questions: template.questions, expiresAt: survey.expiresAt }, branding: { brokerage: found.brokerage } };
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
export async function submitSurvey(base: PublicContext, token: string, raw: Record<string, string | number | boolean | null>, meta: { ip: string | null; userAgent: string | null }) {
  return withRetries(async () => {
    const found = await byToken(base.db, token);
    if (!found || !isLive(found.survey)) return null;
    const { survey, template } = found;
    // Spec, Survey state table: a response is taken only from OPENED; a link never opened has shown no questions.
    if (survey.status !== "OPENED") throw new InvalidState("invalid_state", "The survey has not been opened; open its link (GET) first, then answer");
    const { answers, issues } = checkAnswers(template.questions, raw);
    if (issues.length) throw new Validation(issues);
    const ctx = publicContext(base, survey.organizationId);
    const at = nowIso();
    const nps = npsAnswer(template.questions, answers);
    // An EMAIL survey answered before its mail went out reached its client anyway: it counts as sent now, and is not mailed.
    const unsent = survey.channel === "EMAIL" && survey.sentAt === null;
    const figures: SurveyFigures = { surveysCompleted: 1, ...(unsent ? { surveysSent: 1 } : {}), ...(nps === undefined ? {} : npsClass(nps)) };
    await commit(
      ctx,
      [
        expectRow(ctx.db, surveys, atVersion(survey)),
        ctx.db.update(surveys).set({ status: "COMPLETED", completedAt: at, pendingToken: null, updatedAt: at, version: survey.version + 1 }).where(atVersion(survey)),
        ctx.db.insert(surveyResponses).values({ surveyId: survey.id, organizationId: survey.organizationId, answers, submittedAt: at, ip: meta.ip, userAgent: meta.userAgent }),
        ...bumpSurveyFigures(ctx.db, survey.organizationId, survey.agentUserId, figures),
      ],
      [newEvent(ctx, "SURVEY_COMPLETED", { surveyId: survey.id, agentUserId: survey.agentUserId, dealId: survey.dealId, recipientPersonId: survey.recipientPersonId })],
    );
    return { completed: true as const };
  });
}

/* ------------------------------------------------------------------ mail and the cron */

/** Whether a deleted contact waits in the trash (restorable), rather than being gone for good. */
const inTrash = async (db: Db, contactId: string) =>
  (await db.select({ id: trashEntries.recordId }).from(trashEntries).where(and(eq(trashEntries.recordId, contactId), eq(trashEntries.state, "trashed"))).get()) !== undefined;

/** The survey's contact was deleted: no one to mail. */
class RecipientGone extends Error {}

/** Mails the survey's link to its recipient. The raw token exists only in this message and the creating answer. */
async function mailInvitation(env: Env, db: Db, survey: SurveyRow, token: string): Promise<void> {
  const row = await db
    .select({ email: contacts.email, firstName: contacts.firstName, brokerage: organizations.name })
    .from(contacts)
    .innerJoin(organizations, eq(organizations.id, contacts.organizationId))
    .where(and(eq(contacts.organizationId, survey.organizationId), eq(contacts.id, survey.recipientPersonId)))
    .get();
  if (!row) throw new RecipientGone();
  const until = survey.expiresAt.slice(0, 10);
  await mailerFor(env).send({
    organizationId: survey.organizationId,
    to: row.email,
    subject: `How did we do? A short survey from ${row.brokerage}`,
    text: `Hello ${row.firstName},\n\n${row.brokerage} would like to hear about your experience. The survey takes a minute:\n${surveyUrl(env, token)}\n\nThe link is personal and works until ${until}.`,
  });
}

/**
 * Cron: mails the EMAIL surveys whose send time has come and that were not mailed yet (SCHEDULED, or OPENED through
 * the link of the creating answer before the mail went out). Each is claimed first (its sendAt moved on by a lease, a
 * compare-and-set, so two cron runs never both mail it); after the mail went out the survey is SENT, its sealed token
 * erased and one survey sent counted. A failed mail is tried again when the lease ends.
 */
export async function sendDueSurveys(env: Env, db: Db, { max = 50 } = {}): Promise<number> {
  const now = nowIso();
  const due = await db
    .select()
    .from(surveys)
    .where(and(inArray(surveys.status, ["SCHEDULED", "OPENED"]), lte(surveys.sendAt, now), eq(surveys.channel, "EMAIL"), isNull(surveys.sentAt), sql`${surveys.expiresAt} > ${now}`))
    .limit(max);
  const key = readConfig(env).SURVEY_TOKEN_KEY;
  let sent = 0;
  await Promise.all(
    due.map(async (before) => {
      const ctx: ServiceContext = { env, db, d1: env.DB, organizationId: before.organizationId, actor: { type: "system", userId: null }, requestId: "cron:surveys", defer: () => {} };
      try {
        if (!key || !before.pendingToken) throw new Error(key ? "survey has no sealed token" : "SURVEY_TOKEN_KEY is not configured");
        const token = await openText(key, TOKEN_SEAL_PURPOSE, before.id, before.pendingToken);
        const claimed: SurveyRow = { ...before, sendAt: new Date(Date.now() + SEND_LEASE_MS).toISOString(), version: before.version + 1 };
        await commit(ctx, [expectRow(db, surveys, atVersion(before)), db.update(surveys).set({ sendAt: claimed.sendAt, version: claimed.version }).where(atVersion(before))]);
        const at = nowIso();
        try {
          await mailInvitation(env, db, claimed, token);
        } catch (err) {
          if (!(err instanceof RecipientGone)) throw err;
          // The contact is in the trash: it may be restored, so the survey waits (it is tried again when the lease ends).
          if (await inTrash(db, claimed.recipientPersonId)) return;
          // The contact was purged or erased: nothing to send, ever; the survey is skipped rather than retried until it expires.
          await commit(ctx, [expectRow(db, surveys, atVersion(claimed)), db.update(surveys).set({ status: "SKIPPED", skippedAt: at, pendingToken: null, updatedAt: at, version: claimed.version + 1 }).where(atVersion(claimed))]);
          return;
        }
        // The mail went out: record it unless the survey was closed or its token replaced meanwhile. An open in between
        // (a version bump) must not make the cron mail it again once the lease ends.
        const stillMine = and(
          eq(surveys.id, before.id),
          inArray(surveys.status, LIVE),
          isNull(surveys.sentAt),
          eq(surveys.sendAt, claimed.sendAt),
          eq(surveys.accessTokenHash, before.accessTokenHash),
        );
        await commit(ctx, [
          expectRow(db, surveys, stillMine),
          db
            .update(surveys)
            .set({ status: sql`CASE ${surveys.status} WHEN 'SCHEDULED' THEN 'SENT' ELSE ${surveys.status} END`, sentAt: at, sendAt: before.sendAt, pendingToken: null, updatedAt: at, version: sql`${surveys.version} + 1` })
            .where(stillMine),
          ...bumpSurveyFigures(db, before.organizationId, before.agentUserId, { surveysSent: 1 }),
        ]);
        sent++;
      } catch (err) {
        // Lost the claim (another run, or the survey was opened, skipped or re-issued meanwhile): nothing to do.
        if (err instanceof StaleWrite) return;
        console.error(JSON.stringify({ level: "error", msg: "survey invitation not sent", surveyId: before.id, error: loggableError(err) }));
      }
    }),
  );
  return sent;
}

/** Cron: surveys still open 30 days after creation become EXPIRED (their token already answers gone by then). */
export async function expireSurveys(db: Db, { max = 500 } = {}): Promise<number> {
  const at = nowIso();
  const overdue = db
    .select({ id: surveys.id })
    .from(surveys)
    .where(and(inArray(surveys.status, LIVE), lte(surveys.expiresAt, at)))
    .limit(max);
  const done = await db
    .update(surveys)
    .set({ status: "EXPIRED", expiredAt: at, pendingToken: null, updatedAt: at, version: sql`${surveys.version} + 1` })
    .where(and(inArray(surveys.id, overdue), inArray(surveys.status, LIVE)))
    .returning({ id: surveys.id });
  return done.length;
}

/* ------------------------------------------------------------------ DEAL_WON */

/**
 * DEAL_WON → a survey of the deal's contact about its agent (the deal's assignee, else whoever closed it), with the
 * organization's default template (the standard one when it has none), mailed after the template's delay. Once per
 * deal however often the event arrives: the unique DEAL_WON survey per deal, checked in the insert's batch.
 */
export async function scheduleForWonDeal(env: Env, db: Db, event: EventEnvelope): Promise<string | null> {
  const data = event.data as { dealId?: unknown };
  if (typeof data.dealId !== "string") return null;
  const ctx: ServiceContext = { env, db, d1: env.DB, organizationId: event.organizationId, actor: { type: "system", userId: null }, requestId: `event:${event.id}`, defer: () => {} };
  const deal = await db.select({ contactId: deals.contactId, assignedTo: deals.assignedTo }).from(deals).where(and(eq(deals.organizationId, ctx.organizationId), eq(deals.id, data.dealId))).get();
  if (!deal) return null;
  const agentUserId = deal.assignedTo ?? event.actor.userId ?? null;
  if (!agentUserId) {
    console.warn(JSON.stringify({ level: "warn", msg: "won deal has no agent to survey about", dealId: data.dealId, eventId: event.id }));
    return null;
  }
  const template = await defaultTemplate(ctx);
  const pending: Promise<unknown>[] = [];
  const created = await createSurvey({ ...ctx, defer: (w) => pending.push(w) }, { templateId: template.id, recipientPersonId: deal.contactId, agentUserId, dealId: data.dealId, channel: "EMAIL" }, "DEAL_WON").catch((err) => {
    // A deal whose contact or agent went away meanwhile has no one to survey; anything else is retried.
    if (err instanceof Validation) return null;
    if (err instanceof NotConfigured) {
      console.error(JSON.stringify({ level: "error", msg: "won deal not surveyed: SURVEY_TOKEN_KEY is not configured", dealId: data.dealId, eventId: event.id }));
      return null;
    }
    throw err;
  });
  await Promise.allSettled(pending);
  return created?.id ?? null;
}

export const dealWonSurveyConsumer: EventConsumer = {
  name: "deal-won-survey",
  accepts: (type) => type === "DEAL_WON",
  async handle(events, { env, db }) {
    for (const event of events) await scheduleForWonDeal(env, db, event);
  },
};
