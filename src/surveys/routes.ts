import { OpenAPIHono, z } from "@hono/zod-openapi";
import { API, apiError, apiJson, Gone, gone } from "../platform/api-family";
import { agentActingFor, serviceContext } from "../platform/auth";
import { limitBody } from "../platform/body-limit";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { rateLimit } from "../platform/rate-limit";
import { requestMeta } from "../platform/request-meta";
import { defineRoute, jsonBody } from "../platform/route";
import { openPublicKey, publicServiceContext } from "../platform/session";
import { surveyTokenKey } from "./invitations";
import { surveyPage } from "./page";
import { HIGH_NPS, HIGH_RATING } from "./responses";
import {
  MAX_SEND_DELAY_HOURS,
  PublicSurvey,
  SurveyCreate,
  SurveyDetail,
  SurveyList,
  SurveyListQuery,
  SurveySubmission,
  SurveyTemplate,
  SurveyTemplateList,
  SurveyWithToken,
  Survey,
  TemplateCreate,
  TemplateListQuery,
} from "./schemas";
import { openSurvey, submitSurvey } from "./public";
import { createSurvey, getSurvey, listSurveys, reissueSurvey, skipSurvey, SURVEY_EXPIRY_DAYS } from "./service";
import { createTemplate, listTemplates, MAX_TEMPLATES } from "./templates";

const tags = ["Reputation"];
const publicTags = ["Surveys (public)"];
const security = [{ bearerAuth: [] }];
/** The public survey's body limit (spec: Limits, POST public survey body at most 64 KB). */
export const PUBLIC_SURVEY_MAX_BYTES = 64 * 1024;

const IdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "id", in: "path" } }),
});
// No length bound here: any token that is not one answers the uniform gone (the service checks its form before hashing).
const TokenParam = z.object({
  token: z
    .string()
    .min(1)
    .openapi({ param: { name: "token", in: "path" } }),
});
const NOT_FOUND = { 404: apiError("No survey with this id in your organization") };
const CLOSED = { 409: apiError("The survey is completed, skipped or expired (survey_closed)") };
const GONE = {
  404: { description: "Unknown, expired, completed or skipped token (alike)", content: { "application/json": { schema: Gone } } },
};
const RATE_LIMITED = { 429: apiError("Too many requests from this address (rate_limited)") };

const STATES = `States: SCHEDULED (created; an EMAIL survey is mailed at sendAt, within a minute, by the cron, also when its link was
opened before) → SENT → OPENED (the link was opened; emits SURVEY_OPENED) → COMPLETED (response stored; emits SURVEY_COMPLETED). SCHEDULED, SENT and OPENED surveys can be
skipped (SKIPPED) and become EXPIRED ${SURVEY_EXPIRY_DAYS} days after creation; their link then answers 404 {state: "gone"}.`;

const WORKFLOW = `After SURVEY_COMPLETED a workflow classifies the sentiment of the free text (the AI gateway when configured, else
the AFINN lexicon) and, when the client opted in (the publishConsent question), rated highly (rating ≥ ${HIGH_RATING} of 5, or NPS ≥ ${HIGH_NPS}), wrote
something and the sentiment is not negative, makes a PENDING testimonial (source SURVEY) linked to the survey's deal and agent. The NPS answer
(promoters 9–10, passives 7–8, detractors 0–6) and the response rate (completed / sent) feed the aggregates.`;

const listTemplatesRoute = defineRoute(API, {
  operationId: "listSurveyTemplates",
  method: "get",
  path: "/api/reputation/surveys/templates",
  tags,
  security,
  summary: "List survey templates",
  description: `Newest first; keyset-paginated (\`pagination.nextCursor\`); an organization keeps at most ${MAX_TEMPLATES}. One of them is the default (isDefault), used for the surveys a won deal schedules.`,
  request: { query: TemplateListQuery },
  responses: { 200: apiJson("The organization's templates", SurveyTemplateList) },
});

const createTemplateRoute = defineRoute(API, {
  operationId: "createSurveyTemplate",
  method: "post",
  path: "/api/reputation/surveys/templates",
  tags,
  security,
  summary: "Create a survey template",
  description: `A template is a question schema that responses are validated against. Question types: rating (integer 1–5), nps
(integer 0–10, at most one per template), text (maxLength 1–5000, default 2000), single_choice (2–20 distinct options), yes_no (boolean);
each with an id (its answer's key; lower-case letters, digits, underscores), a label, optional help and a required flag. Purposes:
exactly one yes_no question has purpose publishConsent (the client's opt-in to publish); at most one rating or nps question has
purpose overallRating (the score that decides "rated highly"); at most one text question has purpose testimonial (the words that
become the testimonial). sendDelayHours: default 168, at most ${MAX_SEND_DELAY_HOURS}. An invalid schema is one 400 listing every problem.
A won deal of an organization without any template makes the standard one (builtIn) its default.`,
  request: jsonBody(TemplateCreate),
  responses: { 201: apiJson("The template", SurveyTemplate), 409: apiError(`Already ${MAX_TEMPLATES} templates (template_limit)`) },
});

const list = defineRoute(API, {
  operationId: "listSurveys",
  method: "get",
  path: "/api/reputation/surveys",
  tags,
  security,
  summary: "List surveys",
  description: `Newest first; keyset-paginated (\`pagination.nextCursor\`). ${STATES}`,
  request: { query: SurveyListQuery },
  responses: { 200: apiJson("A page of surveys", SurveyList) },
});

const create = defineRoute(API, {
  operationId: "createSurvey",
  method: "post",
  path: "/api/reputation/surveys",
  tags,
  security,
  summary: "Schedule a survey",
  description: `Emits SURVEY_SCHEDULED. An agent sends surveys only about themselves (\`agentUserId\` their own; owners and admins any; 403 insufficient_role). The access token (256 random bits) is in this answer only, and in the e-mail of an EMAIL survey:
only its SHA-256 is stored. EMAIL surveys need SURVEY_TOKEN_KEY (503 not_configured without it). A won deal schedules one
automatically (once per deal). ${STATES} ${WORKFLOW}`,
  request: jsonBody(SurveyCreate),
  responses: {
    201: apiJson("The survey, with its access token", SurveyWithToken),
    503: apiError("EMAIL survey and SURVEY_TOKEN_KEY is not configured (not_configured)"),
  },
});

const read = defineRoute(API, {
  operationId: "getSurvey",
  method: "get",
  path: "/api/reputation/surveys/{id}",
  tags,
  security,
  summary: "Read a survey with its response",
  description:
    "Ours. `response` is null until the client answered; its sentiment and testimonialId are null until the response workflow ran.",
  request: { params: IdParam },
  responses: { 200: apiJson("The survey", SurveyDetail), ...NOT_FOUND },
});

const reissue = defineRoute(API, {
  operationId: "reissueSurvey",
  method: "post",
  path: "/api/reputation/surveys/{id}/reissue",
  tags,
  security,
  summary: "Issue a new access token, killing the old one",
  description:
    "An agent re-issues only the surveys about themselves (owners and admins any; 403 insufficient_role). Ours. The old link answers gone at once. An EMAIL survey already mailed is mailed the new link now; one not mailed yet is mailed it at its time. The expiry stays 30 days from creation.",
  request: { params: IdParam },
  responses: { 200: apiJson("The survey, with its new access token", SurveyWithToken), ...NOT_FOUND, ...CLOSED },
});

const skip = defineRoute(API, {
  operationId: "skipSurvey",
  method: "post",
  path: "/api/reputation/surveys/{id}/skip",
  tags,
  security,
  summary: "Skip a survey",
  description:
    "Ours. SCHEDULED, SENT or OPENED → SKIPPED: nothing more is mailed and the link answers gone. An agent skips only the surveys about themselves (owners and admins any; 403 insufficient_role).",
  request: { params: IdParam },
  responses: { 200: apiJson("The skipped survey", Survey), ...NOT_FOUND, ...CLOSED },
});

const open = defineRoute(API, {
  operationId: "openPublicSurvey",
  method: "get",
  path: "/api/public/survey/{token}",
  security: [],
  tags: publicTags,
  summary: "Open a survey",
  description: `No authentication: the access token is the capability. The questions and the brokerage's name only. The first open
moves the survey to OPENED and emits SURVEY_OPENED. 60 requests a minute per address (429).`,
  middleware: [rateLimit("public-survey:get")] as const,
  request: { params: TokenParam },
  responses: {
    200: apiJson("The survey's questions", PublicSurvey),
    ...GONE,
    ...RATE_LIMITED,
    503: apiError(
      "organization_moving: the first open records OPENED, which waits while a shard move fences the organization's writes (a few seconds; Retry-After)",
    ),
  },
});

const submit = defineRoute(API, {
  operationId: "completePublicSurvey",
  method: "post",
  path: "/api/public/survey/{token}",
  security: [],
  tags: publicTags,
  summary: "Answer a survey",
  description: `No authentication: the access token is the capability. \`answers\` maps question ids to answers: rating and nps an
integer, text and single_choice a string, yes_no a boolean; null, absent or blank is no answer. Validated against the template:
every problem in one 400 at answers.<questionId>. Only an OPENED survey takes answers: a link never opened (no GET first) is
refused with 409 invalid_state and nothing is written. Stores the response, completes the survey, emits SURVEY_COMPLETED; the link
answers gone from then on. Body at most 64 KB (413); 10 requests a minute per address (429). ${WORKFLOW}`,
  middleware: [limitBody(PUBLIC_SURVEY_MAX_BYTES), rateLimit("public-survey:post")] as const,
  request: { params: TokenParam, ...jsonBody(SurveySubmission) },
  responses: {
    200: apiJson("Recorded", z.object({ completed: z.literal(true) }).openapi("SurveyCompleted")),
    ...GONE,
    409: apiError("The survey was never opened: open its link first (invalid_state)"),
    ...RATE_LIMITED,
  },
});

const page = defineRoute(API, {
  operationId: "getSurveyPage",
  method: "get",
  path: "/survey/{token}",
  security: [],
  tags: publicTags,
  summary: "The survey page",
  description:
    "An HTML page (`{APP_URL}/survey/<token>`, the link of the e-mail): the survey's questions as an accessible form that submits through the public survey API.",
  request: { params: TokenParam },
  responses: { 200: { description: "The page", content: { "text/html": { schema: z.string() } } } },
});

/**
 * The token's organization, found in the directory by the token's key, with its shard opened; null when
 * the directory knows no such token, which answers as any unknown one.
 */
async function publicBase(c: Parameters<typeof serviceContext>[0], token: string) {
  const key = await surveyTokenKey(token);
  const organizationId = key && (await openPublicKey(c, "survey_link", key));
  return organizationId ? publicServiceContext(c, organizationId) : null;
}

/** The access token is shown once: an Idempotency-Key replay of its answer leaves it (and its link) out. */
const TOKEN_FIELDS = [["accessToken"], ["surveyUrl"]];

export const surveyRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook });
// Templates first: /surveys/templates is not a survey id.
surveyRoutes
  .openapi(listTemplatesRoute, async (c) => c.json(await listTemplates(serviceContext(c), c.req.valid("query")), 200))
  .openapi(createTemplateRoute, async (c) => c.json(await createTemplate(serviceContext(c), c.req.valid("json")), 201))
  .openapi(list, async (c) => c.json(await listSurveys(serviceContext(c), c.req.valid("query")), 200))
  .openapi(create, async (c) => {
    c.set("replayOmits", TOKEN_FIELDS);
    return c.json((await createSurvey(serviceContext(c), c.req.valid("json"), { actingFor: agentActingFor(c) }))!, 201);
  })
  .openapi(read, async (c) => c.json(await getSurvey(serviceContext(c), c.req.valid("param").id), 200))
  .openapi(reissue, async (c) => {
    c.set("replayOmits", TOKEN_FIELDS);
    return c.json(await reissueSurvey(serviceContext(c), c.req.valid("param").id, agentActingFor(c)), 200);
  })
  .openapi(skip, async (c) => c.json(await skipSurvey(serviceContext(c), c.req.valid("param").id, agentActingFor(c)), 200))
  .openapi(open, async (c) => {
    c.header("cache-control", "no-store");
    c.header("referrer-policy", "no-referrer");
    const { token } = c.req.valid("param");
    const base = await publicBase(c, token);
    const survey = base && (await openSurvey(base, token));
    return survey ? c.json(survey, 200) : gone(c);
  })
  .openapi(submit, async (c) => {
    c.header("cache-control", "no-store");
    const { token } = c.req.valid("param");
    const base = await publicBase(c, token);
    const done = base && (await submitSurvey(base, token, c.req.valid("json").answers, requestMeta(c)));
    return done ? c.json(done, 200) : gone(c);
  })
  .openapi(page, (c) => surveyPage(c) as never);
