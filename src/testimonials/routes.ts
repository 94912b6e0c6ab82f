import { OpenAPIHono } from "@hono/zod-openapi";
import { API, apiError, apiJson } from "../platform/api-family";
import { agentActingFor, serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { ETAG_HEADER, withEtag } from "../platform/etag";
import { validationHook } from "../platform/openapi";
import { defineRoute, jsonBody } from "../platform/route";
import { getAggregate } from "../reputation/aggregates";
import { AgentQuery } from "../profiles/schemas";
import {
  Aggregate,
  IdParam,
  RejectBody,
  Testimonial,
  TestimonialCreate,
  TestimonialList,
  TestimonialListQuery,
  TestimonialUpdate,
} from "./schemas";
import {
  approveTestimonial,
  createTestimonial,
  getTestimonial,
  listTestimonials,
  publishTestimonial,
  rejectTestimonial,
  unpublishTestimonial,
  updateTestimonial,
} from "./service";

const tags = ["Reputation"];
const security = [{ bearerAuth: [] }];
const NOT_FOUND = { 404: apiError("No testimonial with this id in your organization") };
const STALE = { 412: apiError("If-Match named a version the testimonial is no longer at (precondition_failed)") };
const one = (description: string) => apiJson(description, Testimonial, ETAG_HEADER);

const OTHERS =
  "An agent writes only the testimonials about themselves; another agent's, or the organization's, are for owners and admins (403 `insufficient_role`).";

const RULES = `Ratings are integers 1–5. Categories: BUYER, SELLER, INVESTOR, LANDLORD, TENANT, OTHER. Sources: MANUAL, SURVEY, EMAIL, WEBSITE, GOOGLE, ZILLOW, IMPORT, OTHER.
The display fields (displayName, displayLocation, displayPhotoUrl) reach the public feed only with their consent flag
(permissionToPublishName, permissionToPublishLocation, permissionToPublishPhoto).`;

const list = defineRoute(API, {
  operationId: "listTestimonials",
  method: "get",
  path: "/api/reputation/testimonials",
  tags,
  security,
  summary: "List testimonials",
  description: "Ordered by sortOrder ascending, then newest first; keyset-paginated (`pagination.nextCursor`).",
  request: { query: TestimonialListQuery },
  responses: { 200: apiJson("A page of testimonials", TestimonialList) },
});

const create = defineRoute(API, {
  operationId: "createTestimonial",
  method: "post",
  path: "/api/reputation/testimonials",
  tags,
  security,
  summary: "Record a testimonial",
  description: `A new testimonial is always PENDING and PRIVATE, whatever the body says. ${OTHERS} ${RULES}`,
  request: jsonBody(TestimonialCreate),
  responses: { 201: one("The testimonial") },
});

const read = defineRoute(API, {
  operationId: "getTestimonial",
  method: "get",
  path: "/api/reputation/testimonials/{id}",
  tags,
  security,
  summary: "Read a testimonial, with where it is syndicated",
  request: { params: IdParam },
  responses: { 200: one("The testimonial with its syndications"), ...NOT_FOUND },
});

const update = defineRoute(API, {
  operationId: "updateTestimonial",
  method: "patch",
  path: "/api/reputation/testimonials/{id}",
  tags,
  security,
  summary: "Edit a testimonial",
  description:
    "Copy, featuring, order, display fields and consent flags. Visibility only goes down: moving a PUBLISHED testimonial to PRIVATE or INTERNAL unpublishes it (back to APPROVED; the rollups are recomputed). Honours If-Match. " +
    OTHERS,
  request: { params: IdParam, ...jsonBody(TestimonialUpdate) },
  responses: {
    200: one("The testimonial"),
    ...NOT_FOUND,
    ...STALE,
    409: apiError("Changed by too many requests at once (concurrent_modification)"),
  },
});

const move = (operationId: string, verb: string, summary: string, description: string, refusal: string) =>
  defineRoute(API, {
    operationId,
    method: "post",
    path: `/api/reputation/testimonials/{id}/${verb}`,
    tags,
    security,
    summary,
    description: `${description} ${OTHERS}`,
    request: { params: IdParam },
    responses: { 200: one("The testimonial after the move"), ...NOT_FOUND, ...STALE, 409: apiError(refusal) },
  });

const approve = move(
  "approveTestimonial",
  "approve",
  "Approve a testimonial",
  "PENDING → APPROVED; records who and when; emits REVIEW_APPROVED. Still not public.",
  "invalid_state: not PENDING",
);
const publish = move(
  "publishTestimonial",
  "publish",
  "Publish a testimonial",
  "APPROVED → PUBLISHED and PUBLIC; stamps publishedAt; emits REVIEW_PUBLISHED; the agent's and the organization's rollups are recomputed in the same write. Anything else fails closed and changes nothing.",
  "not_approved (the testimonial is PENDING) or invalid_state (REJECTED, or already PUBLISHED)",
);
const unpublish = move(
  "unpublishTestimonial",
  "unpublish",
  "Unpublish a testimonial",
  "PUBLISHED → APPROVED and PRIVATE; the rollups are recomputed; emits REVIEW_UNPUBLISHED.",
  "invalid_state: not PUBLISHED",
);
const reject = defineRoute(API, {
  operationId: "rejectTestimonial",
  method: "post",
  path: "/api/reputation/testimonials/{id}/reject",
  tags,
  security,
  summary: "Reject a testimonial",
  description: `PENDING or APPROVED → REJECTED (final), with an optional reason; emits REVIEW_REJECTED. ${OTHERS}`,
  request: { params: IdParam, ...jsonBody(RejectBody, false) },
  responses: {
    200: one("The testimonial after the move"),
    ...NOT_FOUND,
    ...STALE,
    409: apiError("invalid_state: PUBLISHED (unpublish first) or already REJECTED"),
  },
});

const aggregate = defineRoute(API, {
  operationId: "getReputationAggregate",
  method: "get",
  path: "/api/reputation/aggregate",
  tags,
  security,
  summary: "Rating rollup of an agent, or of the organization",
  description: "Scope AGENT with agentUserId, ORG without. Stored and recomputed on each publish and unpublish; a read is one row.",
  request: { query: AgentQuery },
  responses: { 200: apiJson("The rollup", Aggregate), 404: apiError("No agent with this id in your organization") },
});

export const testimonialRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(list, async (c) => c.json(await listTestimonials(serviceContext(c), c.req.valid("query")), 200))
  .openapi(create, async (c) =>
    c.json(withEtag(c, await createTestimonial(serviceContext(c), c.req.valid("json"), agentActingFor(c))), 201),
  )
  .openapi(read, async (c) => c.json(withEtag(c, await getTestimonial(serviceContext(c), c.req.valid("param").id)), 200))
  .openapi(update, async (c) =>
    c.json(withEtag(c, await updateTestimonial(serviceContext(c), c.req.valid("param").id, c.req.valid("json"), agentActingFor(c))), 200),
  )
  .openapi(approve, async (c) =>
    c.json(withEtag(c, await approveTestimonial(serviceContext(c), c.req.valid("param").id, agentActingFor(c))), 200),
  )
  .openapi(publish, async (c) =>
    c.json(withEtag(c, await publishTestimonial(serviceContext(c), c.req.valid("param").id, agentActingFor(c))), 200),
  )
  .openapi(unpublish, async (c) =>
    c.json(withEtag(c, await unpublishTestimonial(serviceContext(c), c.req.valid("param").id, agentActingFor(c))), 200),
  )
  .openapi(reject, async (c) =>
    c.json(
      withEtag(c, await rejectTestimonial(serviceContext(c), c.req.valid("param").id, c.req.valid("json")?.reason, agentActingFor(c))),
      200,
    ),
  )
  .openapi(aggregate, async (c) => c.json(await getAggregate(serviceContext(c), c.req.valid("query").agentUserId), 200));
