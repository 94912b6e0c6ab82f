import { OpenAPIHono } from "@hono/zod-openapi";
import { CRM, crmError, crmSuccess } from "../crm/envelope";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute, jsonBody } from "../platform/route";
import { LeadCreate, LeadIntake } from "./schemas";
import { intakeLead } from "./service";

const intake = defineRoute(CRM, {
  operationId: "createLead",
  method: "post",
  path: "/v1/leads",
  tags: ["Leads"],
  security: [{ bearerAuth: [] }],
  summary: "Take in a lead without duplicating anyone",
  description: `Matches the person to a contact of your organization by any e-mail (in any case) or phone number (in any
format; one without a country code is read in \`settings.defaultPhoneRegion\`). An e-mail match wins over a phone match,
and the contacts only the phones matched are listed in \`conflicts\`. A match is filled with what the lead brings and
never blanked (200); no match creates a contact, assigned by \`settings.leadRouting\` (201; \`contact.created\`,
\`contact.assigned\`). Either way the message is logged as a NOTE activity, and a property of yours named by
\`propertyId\` or by its exact address gets an inquiry (\`property.inquiry_received\`). The same \`source\` and
\`sourceEventId\` again answers the first answer with its status and writes nothing. Needs \`leads:write\`, which an
API key may carry alone (a website form's key).`,
  request: jsonBody(LeadCreate),
  responses: {
    200: crmSuccess("An existing contact matched and was updated", LeadIntake),
    201: crmSuccess("A new contact was created", LeadIntake),
    409: crmError("Changed by too many requests at once (concurrent_modification); retry"),
    422: crmError(
      "A phone-only lead that matches nobody (email_required: a new contact needs an e-mail), a phone that is no phone number (invalid_phone), a propertyId that is no property of yours (invalid_reference), or another invalid field",
    ),
  },
});

export const leadRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook }).openapi(intake, async (c) => {
  const { status, answer } = await intakeLead(serviceContext(c), c.req.valid("json"));
  return status === 201 ? c.json({ success: true as const, data: answer }, 201) : c.json({ success: true as const, data: answer }, 200);
});
