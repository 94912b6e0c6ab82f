import { z } from "zod";
import { Appointment, AppointmentCreate } from "../appointments/schemas";
import { createAppointment } from "../appointments/service";
import { defineTool, parseWith } from "./tool";

const id = z.string().min(1).max(100);
// The route's own checks of each field, so one answer names every bad argument (a looser check here answered alone).
const fields = AppointmentCreate.shape;
/** A showing's length when the call names no end. */
const DEFAULT_SHOWING_MINUTES = 30;

export const scheduleShowing = defineTool({
  name: "schedule_showing",
  route: "POST /v1/appointments",
  title: "Schedule a showing of a property",
  description: `Schedules a showing of a property (its address is the place) at startsAt (ISO 8601) in an IANA timeZone
(America/New_York …), ending at endsAt or ${DEFAULT_SHOWING_MINUTES} minutes later, with the contacts who come (contactIds) and you
(and any userIds) as attendees. Every contact with an e-mail address is mailed a calendar invitation (iCalendar, which
their calendar adds), so check the time first. Emits appointment.created and property.showing_scheduled. Ids not of the
organization answer invalid_reference, each named; reschedule or cancel through the appointments API.`,
  permission: "appointments:write",
  input: z.strictObject({
    propertyId: id.describe("The property shown"),
    startsAt: fields.startsAt.describe("ISO 8601 timestamp of the start"),
    endsAt: fields.endsAt
      .optional()
      .describe(`ISO 8601 timestamp of the end (default: ${DEFAULT_SHOWING_MINUTES} minutes after the start)`),
    timeZone: fields.timeZone.describe("IANA time zone the showing is held in, e.g. America/New_York"),
    contactIds: z.array(id).max(20).default([]).describe("The contacts who come (buyers): each is mailed an invitation"),
    userIds: z.array(id).max(20).optional().describe("Users who attend (default: you)"),
    title: fields.title,
    notes: fields.notes.describe("For the agents (not mailed)"),
  }),
  output: z.object({ appointment: Appointment }),
  // A mail sent cannot be taken back.
  effect: "destructive",
  openWorld: true,
  async run(i, { ctx }) {
    const end = i.endsAt ?? new Date(Date.parse(i.startsAt) + DEFAULT_SHOWING_MINUTES * 60_000).toISOString();
    const users = i.userIds ?? (ctx.actor.userId ? [ctx.actor.userId] : []);
    const input = parseWith(AppointmentCreate, {
      type: "showing",
      propertyId: i.propertyId,
      startsAt: i.startsAt,
      endsAt: end,
      timeZone: i.timeZone,
      attendees: [...users.map((userId) => ({ userId, response: "accepted" })), ...i.contactIds.map((contactId) => ({ contactId }))],
      ...(i.title ? { title: i.title } : {}),
      ...(i.notes ? { notes: i.notes } : {}),
    });
    return { appointment: await createAppointment(ctx, input) };
  },
});

export const appointmentTools = [scheduleShowing];
