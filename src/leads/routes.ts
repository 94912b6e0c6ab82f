import { OpenAPIHono } from "@hono/zod-openapi";
import { IdParam } from "../contacts/schemas";
import { CRM, crmDeleted, crmError, crmSuccess, keptAnswer, Page } from "../crm/body";
import { NoQuery } from "../crm/list-query";
import { grantedPermissions, serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute, jsonBody } from "../platform/route";
import { acceptReview, dismissReview, listReviews, REVIEW_RETENTION_DAYS } from "./reviews";
import { LeadCreate, LeadIntake, LeadReceived, LeadReview, LeadReviewAccept, LeadReviewListQuery } from "./schemas";
import { receiveLead } from "./inbox";
import { intakeLead, previewRoute } from "./service";
import { RoutePreview } from "../ponds/schemas";

const tags = ["Leads"];
const security = [{ bearerAuth: [] }];
const CONTENDED = { 409: crmError("Changed by too many requests at once (concurrent_modification); retry") };
const NO_REVIEW = { 404: crmError("No lead waiting for review with this id in your organization (not_found_error)") };

const intake = defineRoute(CRM, {
  operationId: "createLead",
  method: "post",
  path: "/v1/leads",
  tags,
  security,
  summary: "Take in a lead without duplicating anyone",
  description: `Matches the person to a contact of your organization by any e-mail (in any case) or phone number (in any
format; one without a country code is read in \`settings.defaultPhoneRegion\`). An e-mail match wins over a phone match,
and the contacts only the phones matched are listed in \`conflicts\`. No match creates a contact, assigned by
\`settings.leadRouting\` (201; \`contact.created\`, \`contact.assigned\`). A match (200) gets names and address fields
it lacks, and is never blanked nor given the lead's phone numbers or source: those it does not have are suggestions
on the lead's activity (\`metadata.suggested {phones, source}\`) for an agent to accept. A lead with only phone
numbers that match nobody is kept for your team to review (202; \`GET /v1/leads/reviews\`). On the contact it reaches
(a review's once accepted) the message is logged as a NOTE activity, and a property of yours named by \`propertyId\`
or by its exact address gets an inquiry (\`property.inquiry_received\`). The same \`source\` and \`sourceEventId\` again answers as the first time and writes
nothing.

Needs \`leads:write\`, which an API key may carry alone (a website form's key). **The answer depends on the
credential**: one that may read contacts (\`contacts:read\`) gets the answer above (201, 200, or 202 with the
\`reviewId\`); any other gets 202 \`{received: true}\` whatever happened — a match, a new contact or a review, a
repeat too — so a form's key cannot learn who your clients are. Its lead is checked, stored and answered, and taken in right after
the answer (by the cron within minutes should that fail), so neither the answer's time nor its headers tell either.`,
  request: jsonBody(LeadCreate),
  responses: {
    200: crmSuccess("An existing contact matched and was filled (to a credential that may read contacts)", LeadIntake),
    201: crmSuccess("A new contact was created (to a credential that may read contacts)", LeadIntake),
    202: crmSuccess(
      "Taken in: to a credential without contacts:read always this, with no id; to one with it, a phone-only lead kept for review, with its reviewId",
      LeadReceived,
    ),
    ...CONTENDED,
    422: crmError(
      "A phone that is no phone number (invalid_phone), a propertyId that is no property of yours (invalid_reference), or another invalid field",
    ),
  },
});

const preview = defineRoute(CRM, {
  operationId: "previewLeadRoute",
  method: "post",
  path: "/v1/leads/route-preview",
  tags,
  security,
  summary: "Preview where a lead would be routed, creating nothing",
  description: `Takes a lead's body as \`POST /v1/leads\` does and answers where \`settings.leadRouting\` would send it as a
new contact, and why: \`{target: {type: "user"|"pond"|"claim_group", id}, reason}\` (a claim group's id names the rule
that made it: \`rules.0\`, \`default\`; \`target\` null when nobody would take it). Nothing is written: no contact, no
activity, and round robin's turn does not move (it names the user whose turn is next). A lead that matches a contact
would fill it and not be routed; the preview answers as for a new person. Needs \`contacts:read\`.`,
  request: jsonBody(LeadCreate),
  responses: {
    200: crmSuccess("Where the lead would go", RoutePreview),
    422: crmError(
      "A phone that is no phone number (invalid_phone), a propertyId that is no property of yours (invalid_reference), or another invalid field",
    ),
  },
});

const listReviewRoute = defineRoute(CRM, {
  operationId: "listLeadReviews",
  method: "get",
  path: "/v1/leads/reviews",
  tags,
  security,
  summary: "Leads waiting for review, newest first",
  description: `Leads with only phone numbers that matched no contact: a contact needs an e-mail, so someone of your team
calls them back, then accepts the lead with the person's e-mail or dismisses it. Kept ${REVIEW_RETENTION_DAYS} days, and
deleted by the erasure of a contact with one of their numbers. Keyset-paginated: pass \`pagination.nextCursor\` back as
\`cursor\`. Needs \`contacts:read\`.`,
  request: { query: LeadReviewListQuery },
  responses: { 200: { description: "A page of leads waiting for review", content: { "application/json": { schema: Page(LeadReview) } } } },
});

const accept = defineRoute(CRM, {
  operationId: "acceptLeadReview",
  method: "post",
  path: "/v1/leads/reviews/{id}/accept",
  tags,
  security,
  summary: "Take a lead waiting for review in, with the person's e-mail",
  description: `Takes the lead in as \`POST /v1/leads\` would have with this e-mail: a new contact routed by
\`settings.leadRouting\` (201), or the contact the e-mail or one of the numbers now matches (200, filled by the same
rule), with the lead's message as its activity and the inquiry on the property it asked about; the same \`source\` and
\`sourceEventId\` then answer this. The review is gone in the same write: of concurrent accepts one takes the lead in,
the others answer 404. Needs \`contacts:write\`.`,
  request: { params: IdParam, ...jsonBody(LeadReviewAccept) },
  responses: {
    200: crmSuccess("An existing contact matched and was filled", LeadIntake),
    201: crmSuccess("A new contact was created", LeadIntake),
    ...NO_REVIEW,
    ...CONTENDED,
  },
});

const dismiss = defineRoute(CRM, {
  operationId: "deleteLeadReview",
  method: "delete",
  path: "/v1/leads/reviews/{id}",
  tags,
  security,
  summary: "Dismiss a lead waiting for review",
  description: "Deletes the lead for good (it made no contact). Needs `contacts:write`.",
  request: { params: IdParam, query: NoQuery },
  responses: { 200: crmDeleted, ...NO_REVIEW },
});

export const leadRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(intake, async (c) => {
    // Only a credential that may read contacts learns what the lead met. Any other gets the same answer
    // whatever it met: stored and taken in after the answer (its bookmark encrypted like every answer's: platform/session.ts).
    if (!grantedPermissions(c).includes("contacts:read")) {
      await receiveLead(serviceContext(c), c.req.valid("json"));
      return c.json({ success: true as const, data: { received: true as const } }, 202);
    }
    const { status, answer } = await intakeLead(serviceContext(c), c.req.valid("json"));
    if (status === 202) return c.json({ success: true as const, data: answer }, 202);
    return status === 201 ? c.json({ success: true as const, data: answer }, 201) : c.json({ success: true as const, data: answer }, 200);
  })
  .openapi(preview, async (c) => c.json({ success: true as const, data: await previewRoute(serviceContext(c), c.req.valid("json")) }, 200))
  .openapi(listReviewRoute, async (c) =>
    c.json({ success: true as const, ...(await listReviews(serviceContext(c), c.req.valid("query"))) }, 200),
  )
  .openapi(accept, async (c) => {
    const { ctx, answer } = keptAnswer<LeadIntake>(c, (data) => (data.created ? 201 : 200));
    const { status, answer: data } = await acceptReview(ctx, c.req.valid("param").id, c.req.valid("json").email);
    return status === 201 ? c.json(answer(data), 201) : c.json(answer(data), 200);
  })
  .openapi(dismiss, async (c) => {
    const { id } = c.req.valid("param");
    await dismissReview(serviceContext(c), id);
    return c.json({ success: true as const, message: "Lead dismissed", data: { id, deleted: true as const } }, 200);
  });
