import { and, eq, sql } from "drizzle-orm";
import { appointmentAttendees, appointments, contacts, properties, users } from "../db/schema";
import { expectVersion, expectVersionMatch, type Statement, type VersionedTable, versioned, withRetries } from "../db/write";
import { commit } from "../events/commit";
import type { DomainEvent } from "../events/event";
import { newEvent } from "../events/outbox";
import { type FieldIssue, InvalidState, NotFound, Validation } from "../lib/errors";
import { newId } from "../lib/ids";
import { getProperty } from "../properties/service";
import { idsOf } from "../lib/sql";
import { wallClock } from "../lib/time-zones";
import type { ServiceContext } from "../service-context";
import { type AppointmentRecord, type AttendeeRecord, addressLine, toAppointment } from "./mapping";
import { type Appointment, type AppointmentCreate, type AppointmentUpdate, MAX_DURATION_DAYS } from "./schemas";

export { appointmentsOfContact, listAppointments } from "./list";
export { appointmentsErasable } from "./erasure";

export const APPOINTMENTS: VersionedTable = {
  table: appointments,
  id: appointments.id,
  organizationId: appointments.organizationId,
  version: appointments.version,
};

type AttendeeInput = AppointmentCreate["attendees"][number];
type PropertyRow = { id: string; address: Record<string, unknown> };
interface Person {
  name: string | null;
  email: string | null;
}

const keyOf = (a: { userId?: string | null; contactId?: string | null }) => (a.userId ? `u:${a.userId}` : `c:${a.contactId}`);
const issue = (path: (string | number)[], code: string, message: string): FieldIssue => ({ field: path.join("."), path, code, message });

/** The appointment of the caller's organization with its attendees (in the order they were added), or 404. */
export async function readAppointment(ctx: ServiceContext, id: string): Promise<{ row: AppointmentRecord; attendees: AttendeeRecord[] }> {
  const org = ctx.organizationId;
  const [[row], attendees] = await ctx.db.batch([
    ctx.db
      .select()
      .from(appointments)
      .where(and(eq(appointments.organizationId, org), eq(appointments.id, id))),
    ctx.db
      .select()
      .from(appointmentAttendees)
      .where(and(eq(appointmentAttendees.organizationId, org), eq(appointmentAttendees.appointmentId, id)))
      .orderBy(sql`rowid`),
  ]);
  if (!row) throw new NotFound("Appointment");
  return { row, attendees };
}

/** The appointment as the API shows it, marked with its version for the ETag. */
const shown = (row: AppointmentRecord, attendees: AttendeeRecord[]): Appointment => versioned(toAppointment(row, attendees), row.version);

export async function getAppointment(ctx: ServiceContext, id: string): Promise<Appointment> {
  const { row, attendees } = await readAppointment(ctx, id);
  return shown(row, attendees);
}

/**
 * The people and the property a body names, read in one batch: every id that is not of the organization is a 422
 * `invalid_reference` naming it (all of them at once, with `issues` found before).
 */
async function resolveReferences(
  ctx: ServiceContext,
  attendees: AttendeeInput[] | undefined,
  propertyId: string | null | undefined,
  issues: FieldIssue[],
): Promise<{ people: Map<string, Person>; property: PropertyRow | null }> {
  const org = ctx.organizationId;
  const userIds = (attendees ?? []).flatMap((a) => ("userId" in a ? [a.userId] : []));
  const contactIds = (attendees ?? []).flatMap((a) => ("contactId" in a ? [a.contactId] : []));
  const [userRows, contactRows, propertyRows] = await ctx.db.batch([
    ctx.db
      .select({ id: users.id, name: users.name, email: users.email })
      .from(users)
      .where(and(idsOf(users, org, userIds))),
    ctx.db
      .select({ id: contacts.id, firstName: contacts.firstName, lastName: contacts.lastName, email: contacts.email })
      .from(contacts)
      .where(and(idsOf(contacts, org, contactIds))),
    ctx.db
      .select({ id: properties.id, address: properties.address })
      .from(properties)
      .where(and(eq(properties.organizationId, org), eq(properties.id, propertyId ?? ""))),
  ]);
  const people = new Map<string, Person>();
  for (const u of userRows) people.set(`u:${u.id}`, { name: u.name, email: u.email });
  for (const c of contactRows)
    people.set(`c:${c.id}`, { name: `${c.firstName} ${c.lastName}`.trim() || null, email: c.email.trim() ? c.email : null });
  (attendees ?? []).forEach((a, i) => {
    if (people.has(keyOf(a))) return;
    const field = "userId" in a ? "userId" : "contactId";
    const what = field === "userId" ? "user" : "contact";
    issues.push(issue(["attendees", i, field], "invalid_reference", `No ${what} with this id in your organization`));
  });
  if (propertyId && propertyRows.length === 0)
    issues.push(issue(["propertyId"], "invalid_reference", "No property with this id in your organization"));
  if (issues.length > 0) throw new Validation(issues);
  return { people, property: propertyRows[0] ?? null };
}

/**
 * An appointment ends after it starts, lasts at most MAX_DURATION_DAYS, and falls before the year 10000 in its own
 * zone too: invitations and feeds write its local times, which iCalendar gives four digits of year (9999-12-31T12:00Z
 * is already 10000-01-01 in Kiritimati).
 */
function timeIssues(startsAt: string, endsAt: string, zone: string, issues: FieldIssue[]): void {
  for (const [field, at] of [
    ["startsAt", startsAt],
    ["endsAt", endsAt],
  ] as const)
    if (wallClock(zone, Date.parse(at)).year > 9999)
      issues.push(issue([field], "out_of_range", `Falls in the year 10000 in ${zone}: must fall in the years 1900 to 9999`));
  const length = Date.parse(endsAt) - Date.parse(startsAt);
  if (length <= 0) issues.push(issue(["endsAt"], "ends_before_start", "endsAt must be after startsAt"));
  else if (length > MAX_DURATION_DAYS * 86_400_000)
    issues.push(issue(["endsAt"], "too_long", `An appointment lasts at most ${MAX_DURATION_DAYS} days`));
}

function attendeeRow(ctx: ServiceContext, appointmentId: string, a: AttendeeInput, person: Person): AttendeeRecord {
  return {
    appointmentId,
    id: newId(),
    organizationId: ctx.organizationId,
    userId: "userId" in a ? a.userId : null,
    contactId: "contactId" in a ? a.contactId : null,
    email: person.email,
    name: person.name,
    response: a.response ?? "needs_action",
    invitedSequence: null,
  };
}

/** `property.showing_scheduled` for a showing of a property: the property is the object, the appointment rides along. */
async function showingEvent(ctx: ServiceContext, appointment: Appointment): Promise<DomainEvent[]> {
  if (appointment.type !== "showing" || !appointment.propertyId) return [];
  const property = await getProperty(ctx, appointment.propertyId);
  return [
    newEvent(ctx, "property.showing_scheduled", {
      object: property,
      previousAttributes: null,
      changes: null,
      appointment: { id: appointment.id, startsAt: appointment.startsAt, endsAt: appointment.endsAt, timeZone: appointment.timeZone },
    }),
  ];
}

/**
 * POST /v1/appointments. The appointment and its attendees in one batch with `appointment.created` (and, for a
 * showing of a property, `property.showing_scheduled`). Contact attendees are then mailed their invitation by the
 * events consumer (invitations.ts), once each.
 */
export async function createAppointment(ctx: ServiceContext, input: AppointmentCreate): Promise<Appointment> {
  const issues: FieldIssue[] = [];
  timeIssues(input.startsAt, input.endsAt, input.timeZone, issues);
  if (!input.location && !input.propertyId)
    issues.push(issue(["location"], "location_required", "Give a location or a propertyId (where the appointment is held)"));
  const { people, property } = await resolveReferences(ctx, input.attendees, input.propertyId, issues);
  const at = new Date().toISOString();
  const location = input.location ?? (property ? addressLine(property.address) : null);
  const row: AppointmentRecord = {
    id: newId(),
    organizationId: ctx.organizationId,
    type: input.type,
    title: input.title ?? null,
    startsAt: input.startsAt,
    endsAt: input.endsAt,
    timeZone: input.timeZone,
    location,
    propertyId: input.propertyId ?? null,
    notes: input.notes ?? null,
    outcome: null,
    status: "scheduled",
    sequence: 0,
    createdBy: ctx.actor.userId ?? null,
    createdAt: at,
    updatedAt: at,
    cancelledAt: null,
    version: 1,
  };
  const attendees = input.attendees.map((a) => attendeeRow(ctx, row.id, a, people.get(keyOf(a))!));
  const answer = shown(row, attendees);
  const events = [
    newEvent(ctx, "appointment.created", { object: toAppointment(row, attendees), previousAttributes: null, changes: null }),
    ...(await showingEvent(ctx, answer)),
  ];
  await commit(
    ctx,
    [ctx.db.insert(appointments).values(row), ...attendees.map((a) => ctx.db.insert(appointmentAttendees).values(a))],
    events,
    { answer },
  );
  return answer;
}

/** The fields whose change an invitee must see: they move SEQUENCE (RFC 5545 §3.8.7.4) and re-send the invitation. */
const PLACE_AND_TIME = ["startsAt", "endsAt", "timeZone", "location", "propertyId"] as const;
const PLAIN_FIELDS = ["type", "title", ...PLACE_AND_TIME, "notes", "outcome"] as const;

/**
 * PATCH /v1/appointments/{id}. Only the fields sent change; `attendees` replaces the list (an attendee kept keeps its
 * invitation state; a response given changes). A change of time or place, or an attendee taken off, moves `sequence`:
 * every contact attendee is mailed the updated invitation, one taken off a cancellation. `outcome` only once the
 * appointment has started. Compare-and-set on the version: concurrent changes each land, applied to what the other
 * left.
 */
export async function updateAppointment(ctx: ServiceContext, id: string, input: AppointmentUpdate): Promise<Appointment> {
  const refs =
    input.attendees !== undefined || input.propertyId
      ? await resolveReferences(ctx, input.attendees, input.propertyId, [])
      : { people: new Map<string, Person>(), property: null };
  return withRetries(async () => {
    const { row: before, attendees: beforeAttendees } = await readAppointment(ctx, id);
    expectVersionMatch(ctx, before.version);
    const issues: FieldIssue[] = [];
    const touchesPlan = Object.keys(input).some((k) => k !== "notes" && k !== "outcome");
    if (before.status === "cancelled" && touchesPlan)
      throw new InvalidState("appointment_cancelled", "The appointment is cancelled: only its notes and outcome change now");
    const now = new Date();
    const after: AppointmentRecord = { ...before };
    for (const field of PLAIN_FIELDS) if (input[field] !== undefined) (after as Record<string, unknown>)[field] = input[field];
    // A new property without a location of its own takes the property's address as the place.
    if (input.propertyId && input.location === undefined && refs.property) after.location = addressLine(refs.property.address);
    if (input.startsAt !== undefined || input.endsAt !== undefined || input.timeZone !== undefined)
      timeIssues(after.startsAt, after.endsAt, after.timeZone, issues);
    if (!after.location && !after.propertyId)
      issues.push(issue(["location"], "location_required", "An appointment keeps a location or a propertyId"));
    if (input.outcome && now.getTime() < Date.parse(after.startsAt))
      issues.push(issue(["outcome"], "not_happened_yet", "An outcome is recorded once the appointment has started"));
    if (issues.length > 0) throw new Validation(issues);

    const kept = new Map(beforeAttendees.map((a) => [keyOf(a), a]));
    const attendees =
      input.attendees === undefined
        ? beforeAttendees
        : input.attendees.map((a) => {
            const old = kept.get(keyOf(a));
            if (!old) return attendeeRow(ctx, id, a, refs.people.get(keyOf(a))!);
            return { ...old, response: a.response ?? old.response };
          });
    const stay = new Set(attendees.map((a) => a.id));
    const removed = beforeAttendees.filter((a) => !stay.has(a.id));
    const added = attendees.filter((a) => !kept.has(keyOf(a)));
    const responded = attendees.filter((a) => kept.has(keyOf(a)) && kept.get(keyOf(a))!.response !== a.response);

    const changes: string[] = PLAIN_FIELDS.filter((f) => after[f] !== before[f]);
    if (removed.length + added.length + responded.length > 0) changes.push("attendees");
    if (changes.length === 0) return shown(before, beforeAttendees);
    const moved = PLACE_AND_TIME.some((f) => after[f] !== before[f]) || removed.length > 0;
    Object.assign(after, {
      sequence: before.sequence + (moved ? 1 : 0),
      updatedAt: now.toISOString(),
      version: before.version + 1,
    });
    const previousAttributes: Record<string, unknown> = {};
    for (const f of changes)
      previousAttributes[f] = f === "attendees" ? toAppointment(before, beforeAttendees).attendees : before[f as keyof AppointmentRecord];
    const answer = shown(after, attendees);
    const events = [
      newEvent(ctx, "appointment.updated", {
        object: toAppointment(after, attendees),
        previousAttributes,
        changes,
        // Contacts taken off after an invitation: the consumer mails them a cancellation.
        uninvited: removed
          .filter((a) => a.contactId && a.email && a.invitedSequence !== null)
          .map((a) => ({ id: a.id, name: a.name, email: a.email })),
      }),
    ];
    if (after.type === "showing" && after.propertyId && (before.type !== "showing" || before.propertyId !== after.propertyId))
      events.push(...(await showingEvent(ctx, answer)));
    const att = (a: AttendeeRecord) => and(eq(appointmentAttendees.appointmentId, id), eq(appointmentAttendees.id, a.id));
    const statements: Statement[] = [
      expectVersion(ctx.db, APPOINTMENTS, ctx.organizationId, before),
      ctx.db
        .update(appointments)
        .set(after)
        .where(and(eq(appointments.organizationId, ctx.organizationId), eq(appointments.id, id))),
      ...removed.map((a) => ctx.db.delete(appointmentAttendees).where(att(a))),
      ...added.map((a) => ctx.db.insert(appointmentAttendees).values(a)),
      ...responded.map((a) => ctx.db.update(appointmentAttendees).set({ response: a.response }).where(att(a))),
    ];
    await commit(ctx, statements, events, { answer });
    return answer;
  });
}

/**
 * POST /v1/appointments/{id}/cancel: status cancelled and SEQUENCE moved, with `appointment.cancelled`; every contact
 * invited is mailed an iTIP CANCEL. Of concurrent cancels one lands; the others, and any later one, answer 409
 * `appointment_cancelled`.
 */
export async function cancelAppointment(ctx: ServiceContext, id: string, reason: string | undefined): Promise<Appointment> {
  return withRetries(async () => {
    const { row: before, attendees } = await readAppointment(ctx, id);
    expectVersionMatch(ctx, before.version);
    if (before.status === "cancelled") throw new InvalidState("appointment_cancelled", "The appointment is already cancelled");
    const at = new Date().toISOString();
    const after: AppointmentRecord = {
      ...before,
      status: "cancelled",
      sequence: before.sequence + 1,
      cancelledAt: at,
      updatedAt: at,
      version: before.version + 1,
    };
    const answer = shown(after, attendees);
    await commit(
      ctx,
      [
        expectVersion(ctx.db, APPOINTMENTS, ctx.organizationId, before),
        ctx.db
          .update(appointments)
          .set(after)
          .where(and(eq(appointments.organizationId, ctx.organizationId), eq(appointments.id, id))),
      ],
      [
        newEvent(ctx, "appointment.cancelled", {
          object: toAppointment(after, attendees),
          previousAttributes: { status: before.status },
          changes: ["status"],
          reason: reason ?? null,
        }),
      ],
      { answer },
    );
    return answer;
  });
}
