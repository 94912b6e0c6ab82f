import { and, eq, isNull, lt, or, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { appointmentAttendees, appointments, organizations, users } from "../db/schema";
import { appUrlOf, type Env, readConfig } from "../env";
import type { EventConsumer } from "../events/consumers";
import { mailerFor } from "../mail/mailer";
import { invitationIcal, type Organizer } from "./ical";
import type { AppointmentRecord, AttendeeRecord } from "./mapping";
import { defaultTitle } from "./mapping";

/**
 * The invitations (issue 46): after an appointment is created, changed or cancelled, every contact attendee with an
 * address whose last invitation is older than the appointment's SEQUENCE is mailed one (iTIP REQUEST, or CANCEL once
 * cancelled), and `invitedSequence` records it. The consumer looks at the appointment as it now is, not at the
 * event: of two changes in quick succession the first consumer to run mails the newest state, the second finds
 * nothing left to do. Exactly once per (attendee, SEQUENCE): the mail carries an idempotency key of the two (the log
 * provider keeps one row per key, Resend drops a repeat), so a send whose record was lost is not sent twice.
 */
const EVENTS = new Set(["appointment.created", "appointment.updated", "appointment.cancelled"]);

interface Uninvited {
  id: string;
  name: string | null;
  email: string;
}

export const appointmentInvitationConsumer: EventConsumer = {
  name: "appointment-invitations",
  accepts: (type) => EVENTS.has(type),
  async handle(events, { env, db }) {
    // One pass per appointment of the batch; the cancellations of attendees taken off ride with their event.
    const byAppointment = new Map<string, { organizationId: string; uninvited: Uninvited[] }>();
    for (const e of events) {
      const id = (e.data.object as { id?: string } | undefined)?.id;
      if (!id) continue;
      const entry = byAppointment.get(id) ?? { organizationId: e.organizationId, uninvited: [] };
      entry.uninvited.push(...((e.data.uninvited as Uninvited[] | undefined) ?? []));
      byAppointment.set(id, entry);
    }
    for (const [id, { organizationId, uninvited }] of byAppointment) await sendInvitations(env, db, organizationId, id, uninvited);
  },
};

/** What an invitation says in words, beside its .ics (the client shows the file as the event). */
function invitationText(a: AppointmentRecord, method: "REQUEST" | "CANCEL", organizer: Organizer): string {
  const local = (at: string) =>
    new Intl.DateTimeFormat("en-US", { timeZone: a.timeZone, dateStyle: "full", timeStyle: "short" }).format(new Date(at));
  const title = a.title ?? defaultTitle(a.type, a.location);
  const who = organizer.name ?? organizer.email;
  if (method === "CANCEL") return `${who} cancelled "${title}" on ${local(a.startsAt)} (${a.timeZone}).`;
  return [
    `${who} invites you to "${title}".`,
    "",
    `When: ${local(a.startsAt)} to ${local(a.endsAt)} (${a.timeZone})`,
    a.location ? `Where: ${a.location}` : null,
    "",
    "The attached invitation adds it to your calendar; answer it there.",
  ]
    .filter((l) => l !== null)
    .join("\n");
}

/** The organizer: the user who made the appointment, or the organization at the mailer's address. */
async function organizerOf(env: Env, db: Db, a: AppointmentRecord): Promise<Organizer> {
  const [[user], [org]] = await db.batch([
    db
      .select({ name: users.name, email: users.email })
      .from(users)
      .where(and(eq(users.organizationId, a.organizationId), eq(users.id, a.createdBy ?? ""))),
    db.select({ name: organizations.name }).from(organizations).where(eq(organizations.id, a.organizationId)),
  ]);
  if (user) return { name: user.name, email: user.email };
  const from = readConfig(env).EMAIL_FROM;
  return { name: org?.name ?? null, email: from.match(/<([^>]+)>/)?.[1] ?? from };
}

async function sendInvitations(env: Env, db: Db, organizationId: string, id: string, uninvited: Uninvited[]): Promise<void> {
  const [[a], attendees] = await db.batch([
    db
      .select()
      .from(appointments)
      .where(and(eq(appointments.organizationId, organizationId), eq(appointments.id, id))),
    db
      .select()
      .from(appointmentAttendees)
      .where(and(eq(appointmentAttendees.organizationId, organizationId), eq(appointmentAttendees.appointmentId, id)))
      .orderBy(sql`rowid`),
  ]);
  // Erased meanwhile: nobody is left to invite.
  if (!a) return;
  const cancelled = a.status === "cancelled";
  const due = attendees.filter(
    (p) =>
      p.contactId &&
      p.email &&
      (cancelled ? p.invitedSequence !== null && p.invitedSequence < a.sequence : (p.invitedSequence ?? -1) < a.sequence),
  );
  const off = uninvited.filter((u) => !attendees.some((p) => p.id === u.id));
  if (due.length === 0 && off.length === 0) return;

  const host = new URL(appUrlOf(readConfig(env))).hostname;
  const organizer = await organizerOf(env, db, a);
  const mailer = mailerFor(env, db);
  const stamp = new Date(a.updatedAt);
  const mail = async (to: { id: string; email: string }, method: "REQUEST" | "CANCEL", listed: AttendeeRecord[]) => {
    const title = a.title ?? defaultTitle(a.type, a.location);
    await mailer.send({
      organizationId,
      to: to.email,
      subject: method === "CANCEL" ? `Cancelled: ${title}` : a.sequence > 0 ? `Updated invitation: ${title}` : `Invitation: ${title}`,
      text: invitationText(a, method, organizer),
      attachments: [
        {
          filename: method === "CANCEL" ? "cancel.ics" : "invite.ics",
          contentType: `text/calendar; method=${method}; charset=UTF-8`,
          content: invitationIcal(a, method, {
            host,
            stamp,
            organizer,
            attendees: listed,
            description: invitationText(a, method, organizer),
          }),
        },
      ],
      idempotencyKey: `appointment-invitation:${a.id}:${to.id}:${a.sequence}:${method}`,
    });
  };
  for (const p of due) {
    await mail({ id: p.id, email: p.email! }, cancelled ? "CANCEL" : "REQUEST", cancelled ? [p] : attendees);
    await db
      .update(appointmentAttendees)
      .set({ invitedSequence: a.sequence })
      .where(
        and(
          eq(appointmentAttendees.appointmentId, id),
          eq(appointmentAttendees.id, p.id),
          or(isNull(appointmentAttendees.invitedSequence), lt(appointmentAttendees.invitedSequence, a.sequence)),
        ),
      )
      .run();
  }
  for (const u of off) {
    const gone: AttendeeRecord = {
      appointmentId: id,
      id: u.id,
      organizationId,
      userId: null,
      contactId: "removed",
      email: u.email,
      name: u.name,
      response: "declined",
      invitedSequence: null,
    };
    await mail(u, "CANCEL", [gone]);
  }
}
