import { z } from "@hono/zod-openapi";
import { listQuery } from "../crm/list-query";
import type { StoredSurveyQuestion } from "../db/surveys";
import type { FieldIssue } from "../lib/errors";
import { freeText, oneLineText } from "../lib/validation";

/**
 * The question schema of a survey template (spec: Survey template, "the question schema against which responses are
 * validated"; its shape is ours, documented in /docs). A question has an id (the key of its answer), a type, a label
 * and a required flag:
 *   rating         an integer 1–5
 *   nps            an integer 0–10 ("how likely are you to recommend …"); at most one per template, it feeds NPS
 *   text           free text up to maxLength characters (default 2000, at most 5000)
 *   single_choice  one of 2–20 options
 *   yes_no         true or false
 * Purposes tell the response consumer what a question means: `publishConsent` (a yes_no question, exactly one per
 * template) is the client's opt-in to publish their words as a testimonial; `overallRating` (a rating or nps
 * question, at most one) is the score that decides whether the response is "rated highly" (without it, the first
 * rating question, else the nps question); `testimonial` (a text question, at most one) is the text that becomes
 * the testimonial (without it, the first text question answered).
 */
export const DEFAULT_TEXT_MAX = 2000;
export const MAX_QUESTIONS = 30;
/** A template's questions as JSON, at most: what a page of templates answers stays bounded. */
export const MAX_QUESTIONS_CHARS = 16_384;
/** The latest a survey may be mailed: it expires 30 days after creation (spec: Limits), leave the client two. */
export const MAX_SEND_DELAY_HOURS = 28 * 24;
export const DEFAULT_SEND_DELAY_HOURS = 168;

const questionId = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,39}$/, { message: "Must be 1–40 lower-case letters, digits or underscores, starting with a letter" })
  .openapi({ example: "overall" });
const common = {
  id: questionId,
  label: oneLineText(300).openapi({ description: "The question as the client reads it" }),
  help: freeText(1000).optional().openapi({ description: "A line of guidance under the question" }),
  required: z.boolean().default(false),
};

const RatingQuestion = z
  .strictObject({ ...common, type: z.literal("rating"), purpose: z.literal("overallRating").optional() })
  .openapi("RatingQuestion", { description: "An integer 1–5" });
const NpsQuestion = z
  .strictObject({ ...common, type: z.literal("nps"), purpose: z.literal("overallRating").optional() })
  .openapi("NpsQuestion", { description: "An integer 0–10; feeds NPS" });
const TextQuestion = z
  .strictObject({
    ...common,
    type: z.literal("text"),
    maxLength: z.int().min(1).max(5000).default(DEFAULT_TEXT_MAX),
    purpose: z.literal("testimonial").optional(),
  })
  .openapi("TextQuestion", { description: "Free text" });
const ChoiceQuestion = z
  .strictObject({ ...common, type: z.literal("single_choice"), options: z.array(oneLineText(200)).min(2).max(20) })
  .openapi("SingleChoiceQuestion", { description: "One of the options, answered by its text" });
const YesNoQuestion = z
  .strictObject({ ...common, type: z.literal("yes_no"), purpose: z.literal("publishConsent").optional() })
  .openapi("YesNoQuestion", { description: "true or false" });

export const SurveyQuestion = z
  .discriminatedUnion("type", [RatingQuestion, NpsQuestion, TextQuestion, ChoiceQuestion, YesNoQuestion])
  .openapi("SurveyQuestion") satisfies z.ZodType<StoredSurveyQuestion>;
export type SurveyQuestion = z.infer<typeof SurveyQuestion>;

const VISIBLE = /[^\s\p{Cf}\p{Z}]/u;
/** How an option reads: composed and decomposed accents, zero-width characters and case do not tell two apart. */
const optionKey = (o: unknown) =>
  typeof o === "string"
    ? o
        .normalize("NFKC")
        .replace(/\p{Cf}/gu, "")
        .trim()
        .toLowerCase()
    : o;

type Loose = { id?: unknown; type?: unknown; purpose?: unknown; options?: unknown };

/** The rules across questions; run on whatever parsed, so one 400 lists them with the per-question problems. */
function crossCheck(questions: unknown, ctx: z.RefinementCtx) {
  if (!Array.isArray(questions)) return;
  const list = questions as Loose[];
  const seen = new Map<unknown, number>();
  list.forEach((q, i) => {
    if (typeof q?.id !== "string") return;
    if (seen.has(q.id))
      ctx.addIssue({
        code: "custom",
        path: [i, "id"],
        message: `Duplicate question id '${q.id}' (also question ${seen.get(q.id)})`,
        params: { code: "duplicate" },
      });
    else seen.set(q.id, i);
    if (q.type === "single_choice" && Array.isArray(q.options)) {
      const options = (q.options as unknown[]).map(optionKey);
      if (new Set(options).size !== options.length)
        ctx.addIssue({
          code: "custom",
          path: [i, "options"],
          message: "Options must be distinct (accents, case and invisible characters aside)",
          params: { code: "duplicate" },
        });
    }
  });
  if (JSON.stringify(list).length > MAX_QUESTIONS_CHARS)
    ctx.addIssue({
      code: "custom",
      path: [],
      message: `The questions take more than ${MAX_QUESTIONS_CHARS} characters of JSON`,
      params: { code: "too_big" },
    });
  const count = (pred: (q: Loose) => boolean) => list.filter((q) => q && pred(q)).length;
  if (count((q) => q.purpose === "publishConsent") !== 1)
    ctx.addIssue({
      code: "custom",
      path: [],
      message: "Exactly one yes_no question must have purpose 'publishConsent' (the client's opt-in to publish)",
      params: { code: "publish_consent_required" },
    });
  if (count((q) => q.purpose === "overallRating") > 1)
    ctx.addIssue({
      code: "custom",
      path: [],
      message: "At most one question may have purpose 'overallRating'",
      params: { code: "duplicate" },
    });
  if (count((q) => q.purpose === "testimonial") > 1)
    ctx.addIssue({
      code: "custom",
      path: [],
      message: "At most one question may have purpose 'testimonial'",
      params: { code: "duplicate" },
    });
  if (count((q) => q.type === "nps") > 1)
    ctx.addIssue({ code: "custom", path: [], message: "At most one nps question per template", params: { code: "duplicate" } });
}

export const SurveyQuestions = z
  .array(SurveyQuestion)
  .min(1)
  .max(MAX_QUESTIONS)
  .superRefine(crossCheck, { when: () => true })
  .openapi({
    description: `1–${MAX_QUESTIONS} questions, at most ${MAX_QUESTIONS_CHARS} characters of JSON; exactly one yes_no question with purpose publishConsent`,
  });

export const TemplateCreate = z
  .strictObject({
    name: oneLineText(200).openapi({ description: "Shown to the client as the survey's title" }),
    description: freeText(2000).optional().openapi({ description: "Shown to the client under the title" }),
    questions: SurveyQuestions,
    sendDelayHours: z
      .int()
      .min(0)
      .max(MAX_SEND_DELAY_HOURS)
      .default(DEFAULT_SEND_DELAY_HOURS)
      .openapi({
        description: `Hours between scheduling and mailing a survey; default ${DEFAULT_SEND_DELAY_HOURS} (7 days), at most ${MAX_SEND_DELAY_HOURS}`,
      }),
    isDefault: z.boolean().optional().openapi({
      description:
        "Make this the organization's default template (used for DEAL_WON surveys). An organization's first template is its default.",
    }),
  })
  .openapi("SurveyTemplateCreate");
export type TemplateCreate = z.infer<typeof TemplateCreate>;

export const SurveyTemplate = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    questions: z.array(SurveyQuestion),
    sendDelayHours: z.int(),
    isDefault: z.boolean(),
    builtIn: z
      .boolean()
      .openapi({ description: "The standard template the service made when a deal was won before the organization had a template" }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("SurveyTemplate");
export type SurveyTemplate = z.infer<typeof SurveyTemplate>;
const PagePagination = z.object({ hasMore: z.boolean(), nextCursor: z.string().nullable(), limit: z.int() });
export const TemplateListQuery = listQuery({});
export const SurveyTemplateList = z
  .object({ templates: z.array(SurveyTemplate), pagination: PagePagination })
  .openapi("SurveyTemplateList");

export const SURVEY_STATUSES = ["SCHEDULED", "SENT", "OPENED", "COMPLETED", "EXPIRED", "SKIPPED"] as const;
export const SURVEY_CHANNELS = ["EMAIL", "LINK"] as const;
const id = z.string().min(1).max(100);

export const SurveyCreate = z
  .strictObject({
    templateId: id.optional().openapi({ description: "A template of your organization; the default template when absent" }),
    recipientPersonId: id.openapi({ description: "The client, a contact of your organization" }),
    agentUserId: id.openapi({ description: "The agent the survey is about, a user of your organization" }),
    dealId: id.optional().openapi({ description: "A deal of your organization" }),
    channel: z.enum(SURVEY_CHANNELS).default("EMAIL").openapi({
      description:
        "EMAIL: mailed to the contact after the template's sendDelayHours. LINK: never mailed; share accessToken's link yourself.",
    }),
  })
  .openapi("SurveyCreate");
export type SurveyCreate = z.infer<typeof SurveyCreate>;

export const Survey = z
  .object({
    id: z.string(),
    templateId: z.string(),
    recipientPersonId: z.string(),
    agentUserId: z.string(),
    dealId: z.string().nullable(),
    channel: z.enum(SURVEY_CHANNELS),
    trigger: z.enum(["MANUAL", "DEAL_WON"]),
    status: z.enum(SURVEY_STATUSES),
    sendAt: z.string().openapi({ description: "When an EMAIL survey is (or was due to be) mailed" }),
    sentAt: z.string().nullable(),
    openedAt: z.string().nullable(),
    completedAt: z.string().nullable(),
    skippedAt: z.string().nullable(),
    expiredAt: z.string().nullable(),
    expiresAt: z.string().openapi({ description: "30 days after creation" }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Survey");
export type Survey = z.infer<typeof Survey>;

export const SurveyWithToken = Survey.extend({
  // Optional only for replays: the first answer always has both.
  accessToken: z.string().optional().openapi({
    description:
      "The client's capability, shown only here (and mailed for EMAIL surveys); only its SHA-256 is stored. An Idempotency-Key replay of this answer leaves it out",
  }),
  surveyUrl: z.string().optional().openapi({
    description: "`{APP_URL}/survey/<accessToken>`, the page the client fills in. An Idempotency-Key replay of this answer leaves it out",
  }),
}).openapi("SurveyWithToken");

export const SurveyResponse = z
  .object({
    answers: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
    submittedAt: z.string(),
    sentiment: z
      .enum(["POSITIVE", "NEUTRAL", "NEGATIVE"])
      .nullable()
      .openapi({ description: "Of the free text; null until the response workflow ran" }),
    sentimentScore: z.number().nullable().openapi({ description: "-1 (negative) to 1 (positive)" }),
    sentimentSource: z
      .string()
      .nullable()
      .openapi({ description: "ai-gateway, or lexicon (AFINN) when no gateway is configured or it failed" }),
    testimonialId: z.string().nullable().openapi({ description: "The PENDING testimonial the response became, if any" }),
  })
  .openapi("SurveyResponse");
export const SurveyDetail = Survey.extend({ response: SurveyResponse.nullable() }).openapi("SurveyDetail");

export const SurveyListQuery = listQuery({ status: z.enum(SURVEY_STATUSES).optional(), agentUserId: id.optional() });
export const SurveyList = z.object({ surveys: z.array(Survey), pagination: PagePagination }).openapi("SurveyList");

/** GET /api/public/survey/{token}: the questions and the brokerage's name, nothing else. */
export const PublicSurvey = z
  .object({
    survey: z.object({ title: z.string(), description: z.string().nullable(), questions: z.array(SurveyQuestion), expiresAt: z.string() }),
    branding: z.object({ brokerage: z.string() }),
  })
  .openapi("PublicSurvey");

const Answer = z.union([z.string().max(20_000), z.number(), z.boolean(), z.null()]);
export const SurveySubmission = z
  .strictObject({
    answers: z.record(z.string().max(100), Answer).openapi({
      description:
        "Answer per question id: rating and nps an integer, text and single_choice a string, yes_no a boolean; null or absent is no answer",
    }),
  })
  .openapi("SurveySubmission");
export type Answers = Record<string, string | number | boolean>;

/**
 * The answers of a submission checked against the template: every problem, each at `answers.<questionId>`. Returns
 * the answers as stored (texts trimmed; empty texts and nulls dropped).
 */
export function checkAnswers(
  questions: SurveyQuestion[],
  raw: Record<string, string | number | boolean | null>,
): { answers: Answers; issues: FieldIssue[] } {
  const issues: FieldIssue[] = [];
  const answers: Answers = {};
  const problem = (qid: string, code: string, message: string) =>
    issues.push({ field: `answers.${qid}`, path: ["answers", qid], code, message });
  const known = new Set(questions.map((q) => q.id));
  for (const key of Object.keys(raw)) if (!known.has(key)) problem(key, "unknown_field", `No question '${key}' in this survey`);
  for (const q of questions) {
    let value = Object.hasOwn(raw, q.id) ? raw[q.id] : null;
    // Blank, or only invisible characters (zero-width, format): no answer.
    if (typeof value === "string" && !VISIBLE.test(value)) value = null;
    if (value === null || value === undefined) {
      if (q.required) problem(q.id, "required", "Required");
      continue;
    }
    switch (q.type) {
      case "rating":
      case "nps": {
        const [min, max] = q.type === "rating" ? [1, 5] : [0, 10];
        if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max)
          problem(q.id, "invalid_value", `Must be an integer from ${min} to ${max}`);
        else answers[q.id] = value;
        break;
      }
      case "text": {
        const parsed = freeText(q.maxLength).safeParse(value);
        if (typeof value !== "string") problem(q.id, "invalid_type", "Must be text");
        else if (!parsed.success)
          problem(q.id, parsed.error.issues[0]!.code === "too_big" ? "too_big" : "invalid_character", parsed.error.issues[0]!.message);
        else answers[q.id] = parsed.data;
        break;
      }
      case "single_choice":
        if (typeof value !== "string" || !q.options.includes(value))
          problem(q.id, "invalid_value", `Must be one of: ${q.options.join(", ")}`);
        else answers[q.id] = value;
        break;
      case "yes_no":
        if (typeof value !== "boolean") problem(q.id, "invalid_type", "Must be true or false");
        else answers[q.id] = value;
        break;
    }
  }
  return { answers, issues };
}

/** The standard template an organization gets when a deal is won before it made one (its default from then on). */
export const STANDARD_TEMPLATE: TemplateCreate & { questions: SurveyQuestion[] } = {
  name: "How did we do?",
  description: "Your transaction has closed. A minute of your time helps us serve you and others better.",
  sendDelayHours: DEFAULT_SEND_DELAY_HOURS,
  questions: [
    { id: "overall", type: "rating", label: "Overall, how would you rate your agent?", required: true, purpose: "overallRating" },
    { id: "recommend", type: "nps", label: "How likely are you to recommend your agent to a friend or colleague?", required: true },
    {
      id: "comments",
      type: "text",
      label: "Tell us about your experience",
      required: false,
      maxLength: DEFAULT_TEXT_MAX,
      purpose: "testimonial",
    },
    { id: "publish", type: "yes_no", label: "May we publish your comments as a testimonial?", required: true, purpose: "publishConsent" },
  ],
};
