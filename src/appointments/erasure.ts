import { and, eq, sql } from "drizzle-orm";
import { type Copy, rewriteCopies } from "../crm/copies";
import type { Erasable } from "../crm/erasure";
import { appointmentAttendees, appointments } from "../db/schema";
import type { ServiceContext } from "../service-context";

// The appointments' share of a person's erasure (crm/erasure.ts, erasure/erase.ts): the attendee rows that hold
// them (their name and e-mail, copied when they were invited) go in the first step, so they are no longer invited nor
// shown in anyone's calendar feed; the appointments themselves stay (the agent's and the other attendees' record),
// their texts cleaned of the person's name, e-mail and phone. The invitations mailed to them are the mail log's
// (erasure/platform.ts); the attendee objects in event payloads lose their name and e-mail (`objects`).

const theirRows = (ctx: ServiceContext, contactId: string) =>
  and(eq(appointmentAttendees.organizationId, ctx.organizationId), eq(appointmentAttendees.contactId, contactId));

const COPIES: Copy[] = [
  { kind: "appointment_texts", table: appointments, key: "id", column: "title", versioned: true },
  { kind: "appointment_texts", table: appointments, key: "id", column: "notes", versioned: true },
  { kind: "appointment_texts", table: appointments, key: "id", column: "location", versioned: true },
  { kind: "appointment_texts", table: appointments, key: "id", column: "outcome", versioned: true },
];

export const appointmentsErasable: Erasable = {
  begin: (ctx, { id }) => ({
    reads: [ctx.db.select({ n: sql<number>`COUNT(*)` }).from(appointmentAttendees).where(theirRows(ctx, id))],
    write: ([rows]) => ({
      statements: [ctx.db.delete(appointmentAttendees).where(theirRows(ctx, id))],
      erased: { appointment_attendees: (rows as { n: number }[])[0]!.n },
    }),
  }),
  erase: async (ctx, scrub, counted) => ({ name_mentions: await rewriteCopies(ctx, scrub, counted, COPIES) }),
  // An attendee of an appointment's payload (appointment.* events, kept answers): theirs when it names their contact.
  objects: [{ is: (obj, person) => obj.contactId === person.id && "invitedSequence" in obj, fields: ["name", "email"] }],
};
