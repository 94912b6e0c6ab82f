import { OpenAPIHono } from "@hono/zod-openapi";
import { Contact, IdParam } from "../contacts/schemas";
import { CRM, crmError, crmSuccess, keptAnswer } from "../crm/body";
import { NoQuery } from "../crm/list-query";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute } from "../platform/route";
import { ContactRouting } from "./schemas";
import { claimContact, getContactRouting } from "./service";

// The ponds' routes under /v1/contacts (mounted in the contacts group, app.ts).

const tags = ["Ponds"];
const security = [{ bearerAuth: [] }];
const NOT_FOUND = { 404: crmError("No contact with this id in your organization (not_found_error)") };

const claim = defineRoute(CRM, {
  operationId: "claimContact",
  method: "post",
  path: "/v1/contacts/{id}/claim",
  tags,
  security,
  summary: "Claim a lead from a pond or a first-to-claim offer",
  description: `Assigns the lead to you: one waiting in a pond you are a member of, or offered to you first-to-claim
(\`settings.leadRouting\` target \`firstToClaim\`). It leaves the pond (\`contact.assigned\`, \`contact.claimed\`), and its
routing trail records the claim. Exactly one of concurrent claims wins; the others answer 409 \`already_claimed\`.
Speed to lead, when set, counts from the claim. Needs \`contacts:write\` and a user (a session, or a key acting for one).`,
  request: { params: IdParam, query: NoQuery },
  responses: {
    200: crmSuccess("The contact, now assigned to you", Contact),
    403: crmError("You are no member of the lead's pond, or it was not offered to you (insufficient_permission)"),
    ...NOT_FOUND,
    409: crmError(
      "Claimed already (already_claimed), waiting in no pond and offered to nobody (not_claimable), or changed by too many requests at once (concurrent_modification)",
    ),
  },
});

const routing = defineRoute(CRM, {
  operationId: "getContactRouting",
  method: "get",
  path: "/v1/contacts/{id}/routing",
  tags,
  security,
  summary: "Where a lead was routed, and why",
  description: `The lead's routing state (\`assigned\`, \`pond\`, \`offered\`, \`claimed\`), what the cron still has to do for
it (a first-to-claim offer's timeout, speed to lead's deadline) and its trail: every step (\`routed\` at intake,
\`claimed\`, \`offer_expired\`, \`speed_to_lead\`) with its target and reason, oldest first. A contact that was never
routed (made by hand, by an import, or a lead that matched it) has state \`assigned\` and an empty trail. Needs \`contacts:read\`.`,
  request: { params: IdParam, query: NoQuery },
  responses: { 200: crmSuccess("The routing and its trail", ContactRouting), ...NOT_FOUND },
});

export const pondContactRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(claim, async (c) => {
    const { ctx, answer } = keptAnswer<Contact>(c, 200);
    return c.json(answer(await claimContact(ctx, c.req.valid("param").id)), 200);
  })
  .openapi(routing, async (c) =>
    c.json({ success: true as const, data: await getContactRouting(serviceContext(c), c.req.valid("param").id) }, 200),
  );
