import { sql } from "drizzle-orm";
import { index, integer, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * A template's question as stored (the `questions` column). Declared here, below the domain: the API's zod schema
 * (surveys/schemas.ts `SurveyQuestion`) `satisfies` it, so what is validated is what the column holds.
 */
export type StoredSurveyQuestion = { id: string; label: string; help?: string; required: boolean } & (
  | { type: "rating"; purpose?: "overallRating" }
  | { type: "nps"; purpose?: "overallRating" }
  | { type: "text"; maxLength: number; purpose?: "testimonial" }
  | { type: "single_choice"; options: string[] }
  | { type: "yes_no"; purpose?: "publishConsent" }
);

/**
 * Survey templates (spec: Survey template): the question schema responses are validated against, and the delay
 * before a scheduled survey is mailed. At most one template per organization is its default (the one a DEAL_WON
 * survey uses): a partial unique index keeps it so under concurrent writes.
 */
export const surveyTemplates = sqliteTable(
  "survey_templates",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    name: text().notNull(),
    description: text(),
    questions: text({ mode: "json" }).$type<StoredSurveyQuestion[]>().notNull(),
    sendDelayHours: integer().notNull(),
    isDefault: integer({ mode: "boolean" }).notNull(),
    /** True for the standard template the service made itself when a deal was won before the organization had one. */
    builtIn: integer({ mode: "boolean" }).notNull(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
  },
  (t) => [
    index("survey_templates_org_created_idx").on(t.organizationId, t.createdAt, t.id),
    uniqueIndex("survey_templates_one_default").on(t.organizationId).where(sql`is_default = 1`),
  ],
);

export type SurveyStatus = "SCHEDULED" | "SENT" | "OPENED" | "COMPLETED" | "EXPIRED" | "SKIPPED";
export type SurveyChannel = "EMAIL" | "LINK";

/**
 * Surveys (spec: Survey). The access token is kept as its SHA-256 only. An EMAIL survey waiting for its send time
 * also holds the raw token encrypted (AES-GCM under SURVEY_TOKEN_KEY, bound to the survey id) in `pendingToken`, since
 * the cron that mails it runs days later; the write that sends, skips, expires or re-issues it erases that copy.
 */
export const surveys = sqliteTable(
  "surveys",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    templateId: text().notNull(),
    recipientPersonId: text().notNull(),
    agentUserId: text().notNull(),
    dealId: text(),
    channel: text().$type<SurveyChannel>().notNull(),
    /** MANUAL (POST /api/reputation/surveys) or DEAL_WON (scheduled by the event): one DEAL_WON survey per deal. */
    trigger: text().$type<"MANUAL" | "DEAL_WON">().notNull(),
    status: text().$type<SurveyStatus>().notNull(),
    accessTokenHash: text().notNull(),
    pendingToken: text(),
    sendAt: text().notNull(),
    sentAt: text(),
    openedAt: text(),
    completedAt: text(),
    skippedAt: text(),
    expiredAt: text(),
    /**
     * An EMAIL survey's recipient address as it was scheduled (its e-mail key, intake/matching.ts): the mail goes out
     * only while the contact still has it (else an agent could re-address a colleague's client, or merge them
     * into their own contact, and answer the survey about the colleague). Null for LINK surveys and older rows; "" once
     * an erasure took the address: mailed to nobody again.
     */
    recipientEmailKey: text(),
    expiresAt: text().notNull(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    version: integer().notNull().default(1),
  },
  (t) => [
    uniqueIndex("surveys_token_unique").on(t.accessTokenHash),
    uniqueIndex("surveys_deal_won_unique").on(t.organizationId, t.dealId).where(sql`"trigger" = 'DEAL_WON'`),
    index("surveys_org_created_idx").on(t.organizationId, t.createdAt, t.id),
    index("surveys_org_status_idx").on(t.organizationId, t.status, t.createdAt, t.id),
    index("surveys_org_agent_idx").on(t.organizationId, t.agentUserId, t.createdAt, t.id),
    // The cron's two sweeps: due sends, and open surveys past their expiry.
    index("surveys_due_idx").on(t.status, t.sendAt),
    index("surveys_expiry_idx").on(t.status, t.expiresAt),
  ],
);

export type Sentiment = "POSITIVE" | "NEUTRAL" | "NEGATIVE";

/** Survey responses (spec: Survey response): one per survey, with what the response consumer made of it. */
export const surveyResponses = sqliteTable(
  "survey_responses",
  {
    surveyId: text().primaryKey(),
    organizationId: text().notNull(),
    answers: text({ mode: "json" }).$type<Record<string, string | number | boolean>>().notNull(),
    submittedAt: text().notNull(),
    ip: text(),
    userAgent: text(),
    /** Set by the SURVEY_COMPLETED consumer. */
    sentiment: text().$type<Sentiment>(),
    sentimentScore: real(),
    sentimentSource: text(),
    analyzedAt: text(),
    testimonialId: text(),
  },
  (t) => [index("survey_responses_org_idx").on(t.organizationId, t.submittedAt)],
);
