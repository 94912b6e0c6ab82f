import { dateValue, type IcalComponent, type IcalProperty, utcStamp, writeIcal } from "../lib/ical";
import { localStamp, vtimezone, wallClock } from "../lib/time-zones";
import type { AppointmentRecord, AttendeeRecord } from "./mapping";
import { defaultTitle } from "./mapping";

/**
 * Appointments as iCalendar: the invitation a contact is mailed (iTIP, RFC 5546: METHOD REQUEST, or CANCEL once
 * cancelled or taken off) and the feed a user subscribes to (RFC 5545 with RFC 7986's refresh hints). Times are in
 * the appointment's own zone (DTSTART;TZID with its VTIMEZONE) so a client shows them as the agent set them, or UTC
 * for a UTC appointment.
 */
const PRODID = "-//Brokerage Edge//Appointments 1.0//EN";
const UTC_ZONES = new Set(["UTC", "Etc/UTC", "Etc/GMT", "GMT", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Etc/Zulu", "Zulu"]);

const PARTSTAT: Record<AttendeeRecord["response"], string> = {
  needs_action: "NEEDS-ACTION",
  accepted: "ACCEPTED",
  declined: "DECLINED",
  tentative: "TENTATIVE",
};

/** DTSTART / DTEND of an instant in `zone`: a local time with TZID, or UTC. */
function timeProperty(name: string, at: string, zone: string): IcalProperty {
  if (UTC_ZONES.has(zone)) return { name, value: utcStamp(at) };
  return { name, params: { TZID: zone }, value: localStamp(wallClock(zone, Date.parse(at))) };
}

/** The VTIMEZONEs of the zones `items` use, each covering its items' years and the year either side. */
function timezonesFor(items: { timeZone: string; startsAt: string; endsAt: string }[]): IcalComponent[] {
  const spans = new Map<string, [number, number]>();
  for (const i of items) {
    if (UTC_ZONES.has(i.timeZone)) continue;
    const from = new Date(i.startsAt).getUTCFullYear() - 1;
    // Not past 9999: iCalendar dates have four digits of year (an observance in 10000 reads as no date at all).
    const to = Math.min(new Date(i.endsAt).getUTCFullYear() + 1, 9999);
    const span = spans.get(i.timeZone);
    spans.set(i.timeZone, span ? [Math.min(span[0], from), Math.max(span[1], to)] : [from, to]);
  }
  return [...spans].map(([zone, [from, to]]) => vtimezone(zone, from, to));
}

const mailto = (email: string) => `mailto:${email}`;

export interface Organizer {
  name: string | null;
  email: string;
}

export interface EventOptions {
  uid: string;
  stamp: Date;
  organizer?: Organizer;
  /** Attendees listed (with their response); invitations list every attendee with an address. */
  attendees?: AttendeeRecord[];
  /** Invitations say what it is and where; a subscriber's own feed also carries the notes. */
  description?: string;
  cancelled?: boolean;
}

/** The VEVENT of an appointment (RFC 5545 §3.6.1). */
export function appointmentEvent(a: AppointmentRecord, o: EventOptions): IcalComponent {
  return {
    name: "VEVENT",
    properties: [
      { name: "UID", value: o.uid },
      { name: "DTSTAMP", value: utcStamp(o.stamp) },
      timeProperty("DTSTART", a.startsAt, a.timeZone),
      timeProperty("DTEND", a.endsAt, a.timeZone),
      { name: "SEQUENCE", value: String(a.sequence) },
      { name: "SUMMARY", text: a.title ?? defaultTitle(a.type, a.location) },
      a.location ? { name: "LOCATION", text: a.location } : null,
      o.description ? { name: "DESCRIPTION", text: o.description } : null,
      { name: "STATUS", value: o.cancelled || a.status === "cancelled" ? "CANCELLED" : "CONFIRMED" },
      { name: "TRANSP", value: "OPAQUE" },
      { name: "CREATED", value: utcStamp(a.createdAt) },
      { name: "LAST-MODIFIED", value: utcStamp(a.updatedAt) },
      o.organizer ? { name: "ORGANIZER", params: { CN: o.organizer.name ?? undefined }, value: mailto(o.organizer.email) } : null,
      ...(o.attendees ?? [])
        .filter((p) => p.email)
        .map(
          (p): IcalProperty => ({
            name: "ATTENDEE",
            params: {
              CUTYPE: "INDIVIDUAL",
              ROLE: "REQ-PARTICIPANT",
              PARTSTAT: PARTSTAT[p.response],
              RSVP: p.contactId ? "TRUE" : undefined,
              CN: p.name ?? undefined,
            },
            value: mailto(p.email!),
          }),
        ),
    ],
  };
}

/** The UID of an appointment: stable across every invitation and the feed, so clients update one event. */
export const appointmentUid = (appointmentId: string, host: string) => `appointment-${appointmentId}@${host}`;

/**
 * The iTIP message of one invitation: REQUEST (new or changed; every attendee listed) or CANCEL (the appointment
 * cancelled, or this attendee taken off: then only they are listed, §3.2.5).
 */
export function invitationIcal(
  a: AppointmentRecord,
  method: "REQUEST" | "CANCEL",
  o: { host: string; stamp: Date; organizer: Organizer; attendees: AttendeeRecord[]; description: string },
): string {
  return writeIcal({
    name: "VCALENDAR",
    properties: [
      { name: "PRODID", value: PRODID },
      { name: "VERSION", value: "2.0" },
      { name: "CALSCALE", value: "GREGORIAN" },
      { name: "METHOD", value: method },
    ],
    components: [
      ...timezonesFor([a]),
      appointmentEvent(a, {
        uid: appointmentUid(a.id, o.host),
        stamp: o.stamp,
        organizer: o.organizer,
        attendees: o.attendees,
        description: o.description,
        cancelled: method === "CANCEL",
      }),
    ],
  });
}

/** A dated task in a feed: a timed event of 15 minutes at its due time, or an all-day event on its due day. */
export interface FeedTask {
  id: string;
  title: string;
  dueAt: string;
  notes: string | null;
  updatedAt: string;
}

function taskEvent(t: FeedTask, host: string, stamp: Date): IcalComponent {
  const day = /^\d{4}-\d{2}-\d{2}$/.test(t.dueAt);
  const start = day ? null : Date.parse(t.dueAt);
  return {
    name: "VEVENT",
    properties: [
      { name: "UID", value: `task-${t.id}@${host}` },
      { name: "DTSTAMP", value: utcStamp(stamp) },
      day
        ? { name: "DTSTART", params: { VALUE: "DATE" }, value: dateValue(t.dueAt) }
        : { name: "DTSTART", value: utcStamp(new Date(start!)) },
      day
        ? {
            name: "DTEND",
            params: { VALUE: "DATE" },
            value: dateValue(new Date(Date.parse(`${t.dueAt}T00:00:00Z`) + 86_400_000).toISOString()),
          }
        : { name: "DTEND", value: utcStamp(new Date(start! + 15 * 60_000)) },
      { name: "SUMMARY", text: `Task: ${t.title}` },
      t.notes ? { name: "DESCRIPTION", text: t.notes } : null,
      // A task does not make its owner busy.
      { name: "TRANSP", value: "TRANSPARENT" },
      { name: "LAST-MODIFIED", value: utcStamp(t.updatedAt) },
    ],
  };
}

/**
 * A user's feed: their appointments and dated open tasks as VEVENTs (Google Calendar ignores VTODO), with the
 * VTIMEZONE of every zone used. `REFRESH-INTERVAL` (RFC 7986) and `X-PUBLISHED-TTL` (Outlook, Apple) ask for an
 * hourly refresh; no METHOD, as for a published calendar that is not an iTIP message.
 */
export function feedIcal(
  name: string,
  host: string,
  stamp: Date,
  items: { appointments: { row: AppointmentRecord; description: string }[]; tasks: FeedTask[] },
): string {
  return writeIcal({
    name: "VCALENDAR",
    properties: [
      { name: "PRODID", value: PRODID },
      { name: "VERSION", value: "2.0" },
      { name: "CALSCALE", value: "GREGORIAN" },
      { name: "NAME", text: name },
      { name: "X-WR-CALNAME", text: name },
      { name: "REFRESH-INTERVAL", params: { VALUE: "DURATION" }, value: "PT1H" },
      { name: "X-PUBLISHED-TTL", value: "PT1H" },
    ],
    components: [
      ...timezonesFor(items.appointments.map((a) => a.row)),
      ...items.appointments.map(({ row, description }) =>
        appointmentEvent(row, { uid: appointmentUid(row.id, host), stamp, description: description || undefined }),
      ),
      ...items.tasks.map((t) => taskEvent(t, host, stamp)),
    ],
  });
}
