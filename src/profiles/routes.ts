import { OpenAPIHono } from "@hono/zod-openapi";
import { API, apiError, apiJson } from "../platform/api-family";
import type { Context } from "hono";
import { requireSelfOrManager, serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { ETAG_HEADER, withEtag } from "../platform/etag";
import { validationHook } from "../platform/openapi";
import { defineRoute, jsonBody } from "../platform/route";
import { AgentQuery, Profile, ProfilePublish, ProfileUpsert } from "./schemas";
import { deleteProfile, getProfile, publishProfile, putProfile } from "./service";

const tags = ["Reputation"];
const security = [{ bearerAuth: [] }];
const STALE = { 412: apiError("If-Match named a version the profile is no longer at (precondition_failed)") };

const OTHER_AGENT =
  "An agent reads and writes only their own profile: `agentUserId` naming another user needs `users:manage` (owners and admins; 403 `insufficient_role` for an agent, `insufficient_permission` for a key or token without it).";
const PROFILE_NOT_FOUND = { 404: apiError("No such agent in your organization, or the agent has no profile yet") };
const readProfile = defineRoute(API, {
  operationId: "getAgentProfile",
  method: "get",
  path: "/api/reputation/profile",
  tags,
  security,
  summary: "An agent's public profile (the caller's by default)",
  description: OTHER_AGENT,
  request: { query: AgentQuery },
  responses: { 200: apiJson("The profile", Profile, ETAG_HEADER), ...PROFILE_NOT_FOUND },
});

const putProfileRoute = defineRoute(API, {
  operationId: "updateAgentProfile",
  method: "put",
  path: "/api/reputation/profile",
  tags,
  security,
  summary: "Save an agent's draft profile",
  description: `Writes draftConfig only (and the slug, when given); what the public sees changes on publish. Honours If-Match. ${OTHER_AGENT}`,
  request: jsonBody(ProfileUpsert),
  responses: {
    200: apiJson("The profile", Profile, ETAG_HEADER),
    404: apiError("No such agent in your organization"),
    409: apiError("slug_taken, or concurrent_modification"),
    ...STALE,
  },
});

const publishProfileRoute = defineRoute(API, {
  operationId: "publishAgentProfile",
  method: "post",
  path: "/api/reputation/profile/publish",
  tags,
  security,
  summary: "Publish an agent's profile",
  description:
    "Checks the draft against the approved blocks (displayName required; headline, bio, photoUrl, up to 6 featuredTestimonialIds of the agent's published testimonials, contactButton), copies it to publishedConfig and opens the public reviews feed at the slug. Every problem is listed in one 400. " +
    OTHER_AGENT,
  request: jsonBody(ProfilePublish, false),
  responses: { 200: apiJson("The published profile", Profile, ETAG_HEADER), ...PROFILE_NOT_FOUND, ...STALE },
});

const deleteProfileRoute = defineRoute(API, {
  operationId: "deleteAgentProfile",
  method: "delete",
  path: "/api/reputation/profile",
  tags,
  security,
  summary: "Take an agent's profile down",
  description: `The public feed answers 404, as for an unknown slug; the draft is kept and can be published again. A profile already taken down answers 404: of repeated deletes one succeeds. ${OTHER_AGENT}`,
  request: { query: AgentQuery },
  responses: {
    200: apiJson("The profile, DELETED", Profile, ETAG_HEADER),
    404: apiError("No such agent in your organization, no profile yet, or the profile is already taken down"),
    ...STALE,
  },
});

/**
 * The agent a profile route is about: the caller's own, or another user's with `users:manage` (owners and
 * admins; 403 `insufficient_role` for an agent), checked before anything is read, so an agent learns nothing of a
 * colleague's profile and cannot rewrite or take down the public page it feeds.
 */
function agentOf<T extends string | undefined>(c: Context<AppBindings>, agentUserId: T): T {
  requireSelfOrManager(c, agentUserId);
  return agentUserId;
}

export const profileRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(readProfile, async (c) =>
    c.json(withEtag(c, await getProfile(serviceContext(c), agentOf(c, c.req.valid("query").agentUserId))), 200),
  )
  .openapi(putProfileRoute, async (c) => {
    const input = c.req.valid("json");
    agentOf(c, input.agentUserId);
    return c.json(withEtag(c, await putProfile(serviceContext(c), input)), 200);
  })
  .openapi(publishProfileRoute, async (c) =>
    c.json(withEtag(c, await publishProfile(serviceContext(c), agentOf(c, c.req.valid("json")?.agentUserId))), 200),
  )
  .openapi(deleteProfileRoute, async (c) =>
    c.json(withEtag(c, await deleteProfile(serviceContext(c), agentOf(c, c.req.valid("query").agentUserId))), 200),
  );
