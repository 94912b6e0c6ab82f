import { OpenAPIHono } from "@hono/zod-openapi";
import { CRM, CRM_PRECONDITION_ERROR, crmDeleted, crmError, crmSuccess, keptAnswer, Page } from "../crm/body";
import { ETAG_HEADER, withEtag } from "../platform/etag";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute, jsonBody } from "../platform/route";
import {
  ActionPlan,
  ActionPlanInput,
  ActionPlanUpdate,
  Enrollment,
  EnrollmentCreate,
  EnrollmentListQuery,
  EnrollmentParams,
  PlanIdParam,
  PlanListQuery,
} from "./schemas";
import { createPlan, deletePlan, enrollContact, getPlan, listEnrollments, listPlans, moveEnrollment, updatePlan } from "./service";

const tags = ["Action plans"];
const security = [{ bearerAuth: [] }];
const NOT_FOUND = { 404: crmError("No action plan with this id in your organization (not_found_error)") };
const ENROLLMENT_NOT_FOUND = { 404: crmError("No such action plan, or no such enrollment in it (not_found_error)") };

const PLAN_RULES = `Each step runs its \`delay\` (ISO 8601 duration of weeks, days, hours, minutes and seconds, \`PT0S\` to
\`P365D\`; years and months are refused) after the previous step's due time (the first: after enrollment), so a plan
stays on time whenever the cron pass runs; each step runs exactly once. An e-mail step renders its merge fields
(\`{{contact.firstName}}\`, \`{{contact.lastName}}\`, \`{{contact.email}}\`, \`{{agent.name}}\`, \`{{agent.email}}\`;
the agent is the contact's assignee, else who enrolled it, named by their e-mail when they have no name; an unknown field is a 422), goes through the mailer and is
logged as the contact's outbound e-mail. Triggers enroll contacts automatically: \`{event: "contact.tagged", tag}\`,
\`{event: "deal.stage_changed", stage}\`, \`{event: "contact.created", source}\` (lead intake's rule: new contacts of
that source; any source when none is named). Every problem of a body is listed in one 422.`;

const create = defineRoute(CRM, {
  operationId: "createActionPlan",
  method: "post",
  path: "/v1/action-plans",
  tags,
  security,
  summary: "Create an action plan",
  description: PLAN_RULES,
  request: jsonBody(ActionPlanInput),
  responses: { 201: crmSuccess("The plan", ActionPlan, ETAG_HEADER) },
});

const list = defineRoute(CRM, {
  operationId: "listActionPlans",
  method: "get",
  path: "/v1/action-plans",
  tags,
  security,
  summary: "List action plans",
  description: "Newest first, keyset-paginated: pass `pagination.nextCursor` back as `cursor`.",
  request: { query: PlanListQuery },
  responses: { 200: { description: "A page of plans", content: { "application/json": { schema: Page(ActionPlan) } } } },
});

const read = defineRoute(CRM, {
  operationId: "getActionPlan",
  method: "get",
  path: "/v1/action-plans/{id}",
  tags,
  security,
  summary: "Get an action plan",
  request: { params: PlanIdParam },
  responses: { 200: crmSuccess("The plan", ActionPlan, ETAG_HEADER), ...NOT_FOUND },
});

const update = defineRoute(CRM, {
  operationId: "updateActionPlan",
  method: "patch",
  path: "/v1/action-plans/{id}",
  tags,
  security,
  summary: "Change an action plan",
  description: `The fields given replace the plan's. Contacts enrolled already keep the steps they were enrolled with. ${PLAN_RULES}`,
  request: { params: PlanIdParam, ...jsonBody(ActionPlanUpdate) },
  responses: {
    200: crmSuccess("The plan", ActionPlan, ETAG_HEADER),
    ...NOT_FOUND,
    409: crmError("Changed by too many requests at once (concurrent_modification); retry"),
    ...CRM_PRECONDITION_ERROR,
  },
});

const remove = defineRoute(CRM, {
  operationId: "deleteActionPlan",
  method: "delete",
  path: "/v1/action-plans/{id}",
  tags,
  security,
  summary: "Delete an action plan",
  description: "Its active and paused enrollments are stopped (their history stays readable through nothing: the plan is gone).",
  request: { params: PlanIdParam },
  responses: { 200: crmDeleted, ...NOT_FOUND, ...CRM_PRECONDITION_ERROR },
});

const enroll = defineRoute(CRM, {
  operationId: "enrollInActionPlan",
  method: "post",
  path: "/v1/action-plans/{id}/enrollments",
  tags,
  security,
  summary: "Enroll a contact",
  description:
    "The first step is due its delay from now. A contact is in a plan at most once at a time: 409 `already_enrolled` while it has an active or paused enrollment in it (also when two enrollments race). Emits `action_plan.enrolled`.",
  request: { params: PlanIdParam, ...jsonBody(EnrollmentCreate) },
  responses: {
    201: crmSuccess("The enrollment", Enrollment),
    ...NOT_FOUND,
    409: crmError("The contact is already in this plan, active or paused (already_enrolled)"),
  },
});

const enrollments = defineRoute(CRM, {
  operationId: "listActionPlanEnrollments",
  method: "get",
  path: "/v1/action-plans/{id}/enrollments",
  tags,
  security,
  summary: "A plan's enrollments, with each one's next step and history",
  description: "Newest first, keyset-paginated; optionally of one `status` or `contactId`.",
  request: { params: PlanIdParam, query: EnrollmentListQuery },
  responses: {
    200: { description: "A page of enrollments", content: { "application/json": { schema: Page(Enrollment) } } },
    ...NOT_FOUND,
  },
});

const MOVES = {
  pause: {
    operationId: "pauseActionPlanEnrollment",
    summary: "Pause an enrollment",
    description:
      "No step runs until it is resumed (an e-mail already out is recorded). An enrollment also pauses by itself when its contact answers: an inbound e-mail, SMS, call or voicemail logged on the contact. 409 `invalid_state` unless active. Emits `action_plan.paused`.",
  },
  resume: {
    operationId: "resumeActionPlanEnrollment",
    summary: "Resume a paused enrollment",
    description:
      "The plan's clock stood still while paused: the next step is due the wait it had left when it was paused, counted from now (a step already due then runs at the next cron pass). 409 `invalid_state` unless paused.",
  },
  stop: {
    operationId: "stopActionPlanEnrollment",
    summary: "Stop an enrollment",
    description: "No further step runs; the contact may be enrolled again. 409 `invalid_state` unless active or paused.",
  },
} as const;

const moveRoute = (move: keyof typeof MOVES) =>
  defineRoute(CRM, {
    ...MOVES[move],
    method: "post",
    path: `/v1/action-plans/{id}/enrollments/{enrollmentId}/${move}`,
    tags,
    security,
    request: { params: EnrollmentParams },
    responses: {
      200: crmSuccess("The enrollment", Enrollment, ETAG_HEADER),
      ...ENROLLMENT_NOT_FOUND,
      409: crmError("The enrollment is not in a state this move starts from (invalid_state)"),
      ...CRM_PRECONDITION_ERROR,
    },
  });

const pause = moveRoute("pause");
const resume = moveRoute("resume");
const stop = moveRoute("stop");

export const actionPlanRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(list, async (c) => c.json({ success: true as const, ...(await listPlans(serviceContext(c), c.req.valid("query"))) }, 200))
  .openapi(create, async (c) => {
    const { ctx, answer } = keptAnswer<ActionPlan>(c, 201);
    return c.json(answer(withEtag(c, await createPlan(ctx, c.req.valid("json")))), 201);
  })
  .openapi(read, async (c) =>
    c.json({ success: true as const, data: withEtag(c, await getPlan(serviceContext(c), c.req.valid("param").id)) }, 200),
  )
  .openapi(update, async (c) => {
    const { ctx, answer } = keptAnswer<ActionPlan>(c, 200);
    return c.json(answer(withEtag(c, await updatePlan(ctx, c.req.valid("param").id, c.req.valid("json")))), 200);
  })
  .openapi(remove, async (c) => {
    const { id } = c.req.valid("param");
    await deletePlan(serviceContext(c), id);
    return c.json({ success: true as const, message: "Action plan deleted", data: { id, deleted: true as const } }, 200);
  })
  .openapi(enrollments, async (c) =>
    c.json({ success: true as const, ...(await listEnrollments(serviceContext(c), c.req.valid("param").id, c.req.valid("query"))) }, 200),
  )
  .openapi(enroll, async (c) => {
    const { ctx, answer } = keptAnswer<Enrollment>(c, 201);
    const enrollment = await enrollContact(ctx, c.req.valid("param").id, c.req.valid("json").contactId);
    return c.json(answer(enrollment!), 201);
  })
  .openapi(pause, async (c) => {
    const { id, enrollmentId } = c.req.valid("param");
    return c.json({ success: true as const, data: withEtag(c, await moveEnrollment(serviceContext(c), id, enrollmentId, "pause")) }, 200);
  })
  .openapi(resume, async (c) => {
    const { id, enrollmentId } = c.req.valid("param");
    return c.json({ success: true as const, data: withEtag(c, await moveEnrollment(serviceContext(c), id, enrollmentId, "resume")) }, 200);
  })
  .openapi(stop, async (c) => {
    const { id, enrollmentId } = c.req.valid("param");
    return c.json({ success: true as const, data: withEtag(c, await moveEnrollment(serviceContext(c), id, enrollmentId, "stop")) }, 200);
  });
