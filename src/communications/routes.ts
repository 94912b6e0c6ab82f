import { OpenAPIHono } from "@hono/zod-openapi";
import { CRM, CRM_PRECONDITION_ERROR, crmError, crmSuccess, keptAnswer, Page } from "../crm/body";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute, jsonBody } from "../platform/route";
import { IdParam } from "../contacts/schemas";
import { Communication, CommunicationCreate, CommunicationListQuery, MAX_CLOCK_SKEW_MS } from "./schemas";
import { listCommunications, logCommunication } from "./service";

const tags = ["Contacts"];
const security = [{ bearerAuth: [] }];
const NOT_FOUND = { 404: crmError("No contact with this id in your organization (not_found_error)") };

const EVENTS = `Emits the matching event, with the communication as \`data.object\`: an e-mail \`communication.email_sent\`
(outbound) or \`communication.email_received\` (inbound), an SMS \`communication.sms_sent\` or \`communication.sms_received\`,
a call \`communication.call_started\` and, when logged with its \`durationSeconds\` (it has ended), also
\`communication.call_ended\` carrying the call with its duration; a voicemail (always inbound)
\`communication.voicemail_received\`.`;

const log = defineRoute(CRM, {
  operationId: "createContactCommunication",
  method: "post",
  path: "/v1/contacts/{id}/communications",
  tags,
  security,
  summary: "Log an e-mail, SMS, call or voicemail",
  description: `${EVENTS}

A subject is an e-mail's; a body an e-mail's, an SMS's or a voicemail's transcript; a duration a call's or a
voicemail's: anything else is a 422 \`not_allowed\`, with every other problem of the body. \`occurredAt\` defaults to now
and may not be more than ${MAX_CLOCK_SKEW_MS / 60_000} minutes ahead of the server's clock (\`in_future\`).

The contact's \`lastContactedAt\` moves to \`occurredAt\` when that is later (never backwards), which is a
\`contact.updated\` event; the contact's version (its ETag) moves in any case. Send the contact's ETag in \`If-Match\`
to make the write conditional: 412 when the contact has changed since.`,
  request: { params: IdParam, ...jsonBody(CommunicationCreate) },
  responses: {
    201: crmSuccess("The communication", Communication),
    ...NOT_FOUND,
    409: crmError("Changed by too many requests at once (concurrent_modification); retry"),
    ...CRM_PRECONDITION_ERROR,
  },
});

const list = defineRoute(CRM, {
  operationId: "listContactCommunications",
  method: "get",
  path: "/v1/contacts/{id}/communications",
  tags,
  security,
  summary: "A contact's communications, newest first",
  description:
    "Ordered by occurredAt, newest first, optionally of one `type`; keyset-paginated: pass `pagination.nextCursor` back as `cursor`.",
  request: { params: IdParam, query: CommunicationListQuery },
  responses: {
    200: { description: "A page of communications", content: { "application/json": { schema: Page(Communication) } } },
    ...NOT_FOUND,
  },
});

export const communicationRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(list, async (c) =>
    c.json(
      { success: true as const, ...(await listCommunications(serviceContext(c), c.req.valid("param").id, c.req.valid("query"))) },
      200,
    ),
  )
  .openapi(log, async (c) => {
    const { ctx, answer } = keptAnswer<Communication>(c, 201);
    return c.json(answer(await logCommunication(ctx, c.req.valid("param").id, c.req.valid("json"))), 201);
  });
