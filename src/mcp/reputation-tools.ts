import { z } from "zod";
import { getAggregate } from "../reputation/aggregates";
import { AgentQuery } from "../profiles/schemas";
import { Referral, REFERRAL_STATUSES, ReferralCreate, ReferralList, ReferralListQuery } from "../referrals/schemas";
import { createReferral, listReferrals } from "../referrals/service";
import { Survey, SURVEY_CHANNELS, SurveyCreate } from "../surveys/schemas";
import { createSurvey } from "../surveys/service";
import { Aggregate, CATEGORIES, STATUSES, Testimonial, TestimonialList, TestimonialListQuery, VISIBILITIES } from "../testimonials/schemas";
import { approveTestimonial, listTestimonials, publishTestimonial } from "../testimonials/service";
import { definedOnly, defineTool, listParams, pageInputs, parseWith } from "./tool";

const id = (what: string) => z.string().min(1).max(100).describe(`The ${what}'s id`);

const OTHERS = "An agent acts only on the testimonials about themselves; owners and admins on anyone's (else insufficient_role).";

export const listTestimonialsTool = defineTool({
  name: "list_testimonials",
  route: "GET /api/reputation/testimonials",
  title: "List testimonials",
  description:
    "Lists the organization's testimonials matching every given filter (moderation status, visibility, agent, category), ordered by sortOrder, then newest first, one keyset page at a time. PENDING ones wait for approval; APPROVED ones can be published.",
  permission: "reputation:read",
  effect: "read",
  input: z.strictObject({
    status: z.enum(STATUSES).optional(),
    visibility: z.enum(VISIBILITIES).optional(),
    agentUserId: id("agent (user) the testimonials are about").optional(),
    category: z.enum(CATEGORIES).optional(),
    ...pageInputs,
  }),
  output: TestimonialList,
  async run(i, { ctx }) {
    // Through the route's own query schema, as GET /api/reputation/testimonials parses it.
    const query = parseWith(
      TestimonialListQuery,
      definedOnly({ ...listParams(i), status: i.status, visibility: i.visibility, agentUserId: i.agentUserId, category: i.category }),
    );
    return listTestimonials(ctx, query);
  },
});

export const approveTestimonialTool = defineTool({
  name: "approve_testimonial",
  route: "POST /api/reputation/testimonials/{id}/approve",
  title: "Approve a testimonial",
  description: `Moves a PENDING testimonial to APPROVED, recording who approved it and when (emits testimonial.approved). It stays private until published. Anything but PENDING is refused (invalid_state). ${OTHERS}`,
  permission: "reputation:write",
  input: z.strictObject({ testimonialId: id("testimonial") }),
  output: z.object({ testimonial: Testimonial }),
  // A state set, not an add: approving again changes nothing (it is refused as no longer PENDING).
  effect: "write",
  idempotent: true,
  async run({ testimonialId }, scope) {
    return { testimonial: await approveTestimonial(scope.ctx, testimonialId, scope.actingFor) };
  },
});

export const publishTestimonialTool = defineTool({
  name: "publish_testimonial",
  route: "POST /api/reputation/testimonials/{id}/publish",
  title: "Publish a testimonial",
  description: `Moves an APPROVED testimonial to PUBLISHED and PUBLIC: it shows on the agent's public reviews feed and counts in the agent's and the organization's rating rollups (emits testimonial.published). A PENDING one is refused (not_approved: approve it first), a REJECTED or already PUBLISHED one too (invalid_state). ${OTHERS}`,
  permission: "reputation:write",
  input: z.strictObject({ testimonialId: id("testimonial") }),
  output: z.object({ testimonial: Testimonial }),
  // Public, but not for good: unpublishing (POST …/unpublish) takes it off the feed and out of the rollups, and drops
  // the feed's cached copy at once. It mails no one, so no outside party is reached by the call itself.
  effect: "write",
  idempotent: true,
  async run({ testimonialId }, scope) {
    return { testimonial: await publishTestimonial(scope.ctx, testimonialId, scope.actingFor) };
  },
});

export const sendSurvey = defineTool({
  name: "send_survey",
  route: "POST /api/reputation/surveys",
  title: "Send a client a satisfaction survey",
  description:
    "Schedules a survey about an agent (default: you) for a client (a contact), usually after a closing (name the deal). EMAIL (the default) mails the client the survey link after the template's delay (default 7 days; at once when it is 0); LINK mails nothing and answers the surveyUrl for you to share. Uses the organization's default template unless templateId names another. A completed survey feeds NPS and the response rate, and a highly rated, consented answer becomes a PENDING testimonial. An agent sends surveys only about themselves (owners and admins about anyone).",
  permission: "reputation:write",
  input: z.strictObject({
    recipientPersonId: id("client (contact)"),
    agentUserId: id("agent (user) the survey is about; default: you").optional(),
    dealId: id("deal").optional(),
    templateId: id("survey template").optional(),
    channel: z.enum(SURVEY_CHANNELS).default("EMAIL"),
  }),
  // The link is the client's capability: an EMAIL survey's goes to the client by mail only, never into an agent's
  // context; a LINK survey's is answered, since sharing it is the caller's part.
  output: z.object({ survey: Survey.extend({ surveyUrl: z.string().optional().describe("LINK surveys: the page to share") }) }),
  // A mail to a client cannot be called back: skipping stops an EMAIL survey only until the cron has mailed it.
  effect: "destructive",
  openWorld: true,
  async run(i, scope) {
    const input = parseWith(SurveyCreate, { ...i, agentUserId: i.agentUserId ?? scope.ctx.actor.userId });
    const { accessToken: _token, surveyUrl, ...survey } = (await createSurvey(scope.ctx, input, { actingFor: scope.actingFor }))!;
    return { survey: input.channel === "LINK" ? { ...survey, surveyUrl } : survey };
  },
});

export const listReferralsTool = defineTool({
  name: "list_referrals",
  route: "GET /api/reputation/referrals",
  title: "List referrals",
  description:
    "Lists the organization's referrals (who referred whom to which agent, by which channel, with any reward and the lead contact made from it), newest first, one keyset page at a time.",
  permission: "reputation:read",
  effect: "read",
  input: z.strictObject({
    status: z.enum(REFERRAL_STATUSES).optional(),
    agentUserId: id("agent (user) the referrals are for").optional(),
    ...pageInputs,
  }),
  output: ReferralList,
  async run(i, { ctx }) {
    const query = parseWith(ReferralListQuery, definedOnly({ ...listParams(i), status: i.status, agentUserId: i.agentUserId }));
    return listReferrals(ctx, query);
  },
});

/** The body of POST /api/reputation/referrals, the agent defaulting to the caller; its reward rules run in `run`. */
const CreateReferralInput = z.strictObject({ ...ReferralCreate.shape, agentUserId: ReferralCreate.shape.agentUserId.optional() });

export const createReferralTool = defineTool({
  name: "create_referral",
  route: "POST /api/reputation/referrals",
  title: "Log a referral",
  description:
    "Records that someone (referrerPersonId, a contact) referred a person (referredName, and an e-mail address or phone in referredContact) to an agent (default: you), with the channel and an optional reward (rewardType, then rewardStatus and rewardValue). Emits referral.received; with an e-mail address the referred person then becomes a lead contact assigned to the agent (an existing contact with that address is linked instead), named in leadContactId once done.",
  permission: "reputation:write",
  input: CreateReferralInput,
  output: z.object({ referral: Referral }),
  // Adds a referral and, later, a lead; it destroys or mails nothing.
  effect: "write",
  async run(i, { ctx }) {
    const input = parseWith(ReferralCreate, { ...i, agentUserId: i.agentUserId ?? ctx.actor.userId });
    return { referral: await createReferral(ctx, input) };
  },
});

export const reputationSummary = defineTool({
  name: "reputation_summary",
  route: "GET /api/reputation/aggregate",
  title: "Reputation summary",
  description:
    "The rating rollup of one agent (agentUserId), or of the whole organization without it: published reviews, average rating, rating distribution, review velocity (published per 30 days), NPS from survey answers and the survey response rate.",
  permission: "reputation:read",
  effect: "read",
  input: z.strictObject({ agentUserId: id("agent (user)").optional() }),
  output: z.object({ summary: Aggregate }),
  async run(i, { ctx }) {
    const { agentUserId } = parseWith(AgentQuery, i);
    return { summary: await getAggregate(ctx, agentUserId) };
  },
});

/** The reputation suite: testimonials, surveys, referrals and the summary. */
export const reputationTools = [
  listTestimonialsTool,
  approveTestimonialTool,
  publishTestimonialTool,
  sendSurvey,
  listReferralsTool,
  createReferralTool,
  reputationSummary,
];
