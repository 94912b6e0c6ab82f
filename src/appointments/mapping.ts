import type { appointmentAttendees, appointments } from "../db/schema";
import type { Appointment, Attendee } from "./schemas";

export type AppointmentRecord = typeof appointments.$inferSelect;
export type AttendeeRecord = typeof appointmentAttendees.$inferSelect;

const TYPE_LABELS: Record<AppointmentRecord["type"], string> = {
  showing: "Showing",
  listing_presentation: "Listing presentation",
  buyer_consultation: "Buyer consultation",
  closing: "Closing",
  other: "Appointment",
};

/** The title an appointment shows when none was given: its type, and the place when there is one. */
export const defaultTitle = (type: AppointmentRecord["type"], location: string | null): string =>
  location ? `${TYPE_LABELS[type]}: ${location}`.slice(0, 200) : TYPE_LABELS[type];

export const toAttendee = (r: AttendeeRecord): Attendee => ({
  id: r.id,
  userId: r.userId,
  contactId: r.contactId,
  name: r.name,
  email: r.email,
  response: r.response,
  invitedSequence: r.invitedSequence,
});

export const toAppointment = (r: AppointmentRecord, attendees: AttendeeRecord[]): Appointment => ({
  id: r.id,
  type: r.type,
  title: r.title ?? defaultTitle(r.type, r.location),
  startsAt: r.startsAt,
  endsAt: r.endsAt,
  timeZone: r.timeZone,
  location: r.location,
  propertyId: r.propertyId,
  notes: r.notes,
  outcome: r.outcome,
  status: r.status,
  sequence: r.sequence,
  attendees: attendees.map(toAttendee),
  createdBy: r.createdBy,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
  cancelledAt: r.cancelledAt,
  version: r.version,
});

/** One line of a property's address (`12 Main St, Unit 4, Springfield, IL 62701`), for an appointment's place. */
export function addressLine(address: Record<string, unknown>): string {
  const part = (k: string) => (typeof address[k] === "string" && address[k] ? (address[k] as string) : null);
  const region = [part("state"), part("zipCode")].filter(Boolean).join(" ");
  return [part("street"), part("unit") && `Unit ${part("unit")}`, part("city"), region || null].filter(Boolean).join(", ");
}
