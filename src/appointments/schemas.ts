import { z } from "@hono/zod-openapi";
import { listQuery, timestampParam } from "../crm/list-query";
import { freeText, oneLineText, utcInstant } from "../lib/validation";
import { isTimeZone } from "../lib/time-zones";
import { canonicalTimeZone } from "../organization/schemas";

export const APPOINTMENT_TYPES = ["showing", "listing_presentation", "buyer_consultation", "closing", "other"] as const;
export const RESPONSES = ["needs_action", "accepted", "declined", "tentative"] as const;
/** Attendees an appointment holds at most (each contact among them is mailed an invitation). */
export const MAX_ATTENDEES = 50;
/** The longest appointment: a closing day, not a vacation. */
export const MAX_DURATION_DAYS = 7;

const id = z.string().min(1).max(100);
const timestamp = utcInstant(1900).openapi({ type: "string", format: "date-time", example: "2027-03-15T18:00:00Z" });
const timeZone = z
  .string()
  .max(64)
  .refine(isTimeZone, { message: "Must be an IANA time zone such as America/New_York", params: { code: "invalid_time_zone" } })
  // Intl takes any case ("america/new_york"): kept as the zone is named, as the organization's is, for TZID and feeds.
  .transform((zone) => canonicalTimeZone(zone) ?? zone)
  .openapi({
    type: "string",
    example: "America/New_York",
    description: "IANA time zone the appointment is held in: invitations and feeds show its local times",
  });

const AttendeeInput = z
  .union([
    z.strictObject({ userId: id, response: z.enum(RESPONSES).optional() }),
    z.strictObject({ contactId: id, response: z.enum(RESPONSES).optional() }),
  ])
  .openapi("AppointmentAttendeeInput", {
    description: "A user of the organization or a contact; `response` defaults to needs_action",
  });

const attendeesInput = z
  .array(AttendeeInput)
  .max(MAX_ATTENDEES)
  .refine(
    (list) => {
      const keys = list.map((a) => ("userId" in a ? `u:${a.userId}` : `c:${a.contactId}`));
      return new Set(keys).size === keys.length;
    },
    { message: "An attendee is listed twice", params: { code: "duplicate_attendee" } },
  );

export const AppointmentCreate = z
  .strictObject({
    type: z.enum(APPOINTMENT_TYPES),
    title: oneLineText(200).optional(),
    startsAt: timestamp,
    endsAt: timestamp,
    timeZone,
    location: oneLineText(500).optional(),
    propertyId: id.optional(),
    attendees: attendeesInput.default([]),
    notes: freeText(5000).optional(),
  })
  .openapi("AppointmentCreate");
export type AppointmentCreate = z.infer<typeof AppointmentCreate>;

export const AppointmentUpdate = z
  .strictObject({
    type: z.enum(APPOINTMENT_TYPES).optional(),
    title: oneLineText(200).nullable().optional(),
    startsAt: timestamp.optional(),
    endsAt: timestamp.optional(),
    timeZone: timeZone.optional(),
    location: oneLineText(500).nullable().optional(),
    propertyId: id.nullable().optional(),
    attendees: attendeesInput.optional(),
    notes: freeText(5000).nullable().optional(),
    outcome: freeText(5000).nullable().optional(),
  })
  .openapi("AppointmentUpdate");
export type AppointmentUpdate = z.infer<typeof AppointmentUpdate>;

export const AppointmentCancel = z.strictObject({ reason: freeText(1000).optional() }).openapi("AppointmentCancel");

export const Attendee = z
  .object({
    id: z.string(),
    userId: z.string().nullable(),
    contactId: z.string().nullable(),
    name: z.string().nullable(),
    email: z.string().nullable(),
    response: z.enum(RESPONSES),
    invitedSequence: z
      .int()
      .nullable()
      .openapi({ description: "The SEQUENCE of the last invitation mailed to this attendee; null: none (users are not mailed)" }),
  })
  .openapi("AppointmentAttendee");
export type Attendee = z.infer<typeof Attendee>;

export const Appointment = z
  .object({
    id: z.string(),
    type: z.enum(APPOINTMENT_TYPES),
    title: z.string(),
    startsAt: z.string(),
    endsAt: z.string(),
    timeZone: z.string(),
    location: z.string().nullable(),
    propertyId: z.string().nullable(),
    notes: z.string().nullable(),
    outcome: z.string().nullable(),
    status: z.enum(["scheduled", "cancelled"]),
    sequence: z.int().openapi({ description: "iCalendar SEQUENCE: moves with every change of time, place or status" }),
    attendees: z.array(Attendee),
    createdBy: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    cancelledAt: z.string().nullable(),
    version: z.int(),
  })
  .openapi("Appointment");
export type Appointment = z.infer<typeof Appointment>;

export const AppointmentListQuery = listQuery({
  from: timestampParam
    .optional()
    .openapi({ type: "string", format: "date-time", description: "Appointments ending at or after this time" }),
  to: timestampParam.optional().openapi({ type: "string", format: "date-time", description: "Appointments starting before this time" }),
  userId: id.optional().openapi({ description: "Appointments this user attends (`me` for the caller)" }),
  contactId: id.optional().openapi({ description: "Appointments this contact attends" }),
  propertyId: id.optional(),
  type: z.enum(APPOINTMENT_TYPES).optional(),
  status: z.enum(["scheduled", "cancelled"]).optional(),
}).superRefine((q, ctx) => {
  // A window that ends before it starts holds nothing: a swapped pair, answered as the contact list's ranges are.
  if (q.from && q.to && q.from > q.to)
    ctx.addIssue({ code: "custom", path: ["from"], message: "from is after to", params: { code: "invalid_range" } });
});
export type AppointmentListQuery = z.infer<typeof AppointmentListQuery>;

export const IdParam = z.object({ id: id.openapi({ param: { name: "id", in: "path" } }) });

export const CalendarFeedState = z
  .object({
    exists: z.boolean(),
    createdAt: z.string().nullable().openapi({ description: "When the live feed URL was issued; null when there is none" }),
  })
  .openapi("CalendarFeedState");

export const CalendarFeedIssued = z
  .object({
    url: z.string().openapi({ description: "The secret feed URL (shown this once; keep it like a password)" }),
    createdAt: z.string(),
  })
  .openapi("CalendarFeedIssued");
