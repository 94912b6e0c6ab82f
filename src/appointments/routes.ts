import { OpenAPIHono } from "@hono/zod-openapi";
import { CRM, CRM_PRECONDITION_ERROR, crmError, crmSuccess, keptAnswer, Page } from "../crm/body";
import { NoQuery } from "../crm/list-query";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { ETAG_HEADER, withEtag } from "../platform/etag";
import { validationHook } from "../platform/openapi";
import { defineRoute, jsonBody } from "../platform/route";
import { Appointment, AppointmentCancel, AppointmentCreate, AppointmentListQuery, AppointmentUpdate, IdParam } from "./schemas";
import { cancelAppointment, createAppointment, getAppointment, listAppointments, updateAppointment } from "./service";

const tags = ["Appointments"];
const security = [{ bearerAuth: [] }];
const NOT_FOUND = { 404: crmError("No appointment with this id in your organization (not_found)") };
const CONDITIONAL = "Send the appointment's ETag in `If-Match` to make the write conditional: 412 when it has changed since.";
const INVITES = `Each contact attendee with an e-mail address is mailed an iCalendar invitation (RFC 5546 iTIP, \`METHOD:REQUEST\`,
attached as \`invite.ics\`, \`text/calendar; method=REQUEST\`) once per \`sequence\`; a cancellation is mailed as \`METHOD:CANCEL\`.
Users attending see it in their calendar feed (\`POST /v1/users/me/calendar-feed\`).`;

const list = defineRoute(CRM, {
  operationId: "listAppointments",
  method: "get",
  path: "/v1/appointments",
  tags,
  security,
  summary: "List appointments",
  description:
    "In start order, keyset-paginated (pass `pagination.nextCursor` back as `cursor`), with the exact total. `from`/`to` select the appointments overlapping that span; `userId` (or `me`) those a user attends or made; `contactId` those a contact attends.",
  request: { query: AppointmentListQuery },
  responses: { 200: { description: "A page of appointments", content: { "application/json": { schema: Page(Appointment) } } } },
});

const create = defineRoute(CRM, {
  operationId: "createAppointment",
  method: "post",
  path: "/v1/appointments",
  tags,
  security,
  summary: "Schedule an appointment",
  description: `A showing, listing presentation, buyer consultation, closing or other appointment, at a \`location\` or a
\`propertyId\` (whose address is then the location), between \`startsAt\` and \`endsAt\` (at most 7 days) in an IANA
\`timeZone\`. Emits appointment.created, and property.showing_scheduled for a showing of a property. ${INVITES}`,
  request: jsonBody(AppointmentCreate),
  responses: {
    201: crmSuccess("The appointment", Appointment, ETAG_HEADER),
    422: crmError("Invalid body, or an attendee or the property is not of your organization (invalid_reference, one per id)"),
  },
});

const read = defineRoute(CRM, {
  operationId: "getAppointment",
  method: "get",
  path: "/v1/appointments/{id}",
  tags,
  security,
  summary: "Read an appointment",
  request: { params: IdParam, query: NoQuery },
  responses: { 200: crmSuccess("The appointment", Appointment, ETAG_HEADER), ...NOT_FOUND },
});

const update = defineRoute(CRM, {
  operationId: "updateAppointment",
  method: "patch",
  path: "/v1/appointments/{id}",
  tags,
  security,
  summary: "Change an appointment, record attendees' answers or its outcome",
  description: `Only the fields sent change. \`attendees\` replaces the list: an attendee kept keeps its invitation state and
takes the \`response\` given (its current one when none). A change of time or place, or an attendee taken off, moves
\`sequence\` and mails every contact attendee the updated invitation (one taken off: a cancellation). \`outcome\` is
recorded once the appointment has started (422 not_happened_yet before). A cancelled appointment takes only notes and
outcome (409 appointment_cancelled). Emits appointment.updated. ${CONDITIONAL}`,
  request: { params: IdParam, ...jsonBody(AppointmentUpdate) },
  responses: {
    200: crmSuccess("The appointment", Appointment, ETAG_HEADER),
    ...NOT_FOUND,
    409: crmError("The appointment is cancelled (appointment_cancelled), or too many concurrent changes (concurrent_modification; retry)"),
    422: crmError("Invalid body, an unknown attendee or property (invalid_reference), or an outcome before the start (not_happened_yet)"),
    ...CRM_PRECONDITION_ERROR,
  },
});

const cancel = defineRoute(CRM, {
  operationId: "cancelAppointment",
  method: "post",
  path: "/v1/appointments/{id}/cancel",
  tags,
  security,
  summary: "Cancel an appointment",
  description: `Status \`cancelled\`, \`sequence\` moved; every contact invited is mailed an iTIP \`METHOD:CANCEL\`. Emits
appointment.cancelled (with the \`reason\` given). Of concurrent cancels one lands; the others answer 409. ${CONDITIONAL}`,
  request: { params: IdParam, ...jsonBody(AppointmentCancel, false) },
  responses: {
    200: crmSuccess("The cancelled appointment", Appointment, ETAG_HEADER),
    ...NOT_FOUND,
    409: crmError("Already cancelled (appointment_cancelled)"),
    ...CRM_PRECONDITION_ERROR,
  },
});

export const appointmentRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(list, async (c) => c.json({ success: true as const, ...(await listAppointments(serviceContext(c), c.req.valid("query"))) }, 200))
  .openapi(create, async (c) => {
    const { ctx, answer } = keptAnswer<Appointment>(c, 201);
    return c.json(answer(withEtag(c, await createAppointment(ctx, c.req.valid("json")))), 201);
  })
  .openapi(read, async (c) =>
    c.json({ success: true as const, data: withEtag(c, await getAppointment(serviceContext(c), c.req.valid("param").id)) }, 200),
  )
  .openapi(update, async (c) => {
    const { ctx, answer } = keptAnswer<Appointment>(c, 200);
    return c.json(answer(withEtag(c, await updateAppointment(ctx, c.req.valid("param").id, c.req.valid("json")))), 200);
  })
  .openapi(cancel, async (c) => {
    const { ctx, answer } = keptAnswer<Appointment>(c, 200);
    const body = c.req.valid("json") as { reason?: string } | undefined;
    return c.json(answer(withEtag(c, await cancelAppointment(ctx, c.req.valid("param").id, body?.reason))), 200);
  });
