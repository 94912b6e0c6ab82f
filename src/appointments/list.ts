import { and, asc, count, eq, gt, inArray, lt, or, type SQL, sql } from "drizzle-orm";
import type { z } from "@hono/zod-openapi";
import type { Pagination } from "../crm/body";
import { appointmentAttendees, appointments } from "../db/schema";
import { decodeCursor, encodeCursor } from "../lib/cursor";
import type { ServiceContext } from "../service-context";
import { type AttendeeRecord, toAppointment } from "./mapping";
import type { Appointment, AppointmentListQuery } from "./schemas";

const SORT = "startsAt:asc";

/** Appointments a user attends or made (the calendar of that user), as a condition on `appointments`. */
export const ofUser = (organizationId: string, userId: string): SQL =>
  or(
    eq(appointments.createdBy, userId),
    sql`EXISTS (SELECT 1 FROM ${appointmentAttendees} WHERE ${appointmentAttendees.organizationId} = ${organizationId}
        AND ${appointmentAttendees.userId} = ${userId} AND ${appointmentAttendees.appointmentId} = ${appointments.id})`,
  )!;

const ofContact = (organizationId: string, contactId: string): SQL =>
  sql`EXISTS (SELECT 1 FROM ${appointmentAttendees} WHERE ${appointmentAttendees.organizationId} = ${organizationId}
      AND ${appointmentAttendees.contactId} = ${contactId} AND ${appointmentAttendees.appointmentId} = ${appointments.id})`;

/**
 * GET /v1/appointments: in start order (then id), keyset-paginated on the (organization, startsAt, id) index; `from`
 * and `to` select the appointments overlapping that span. The page, its attendees and the exact total in one batch.
 */
export async function listAppointments(
  ctx: ServiceContext,
  q: AppointmentListQuery,
): Promise<{ data: Appointment[]; pagination: z.infer<typeof Pagination> }> {
  const org = ctx.organizationId;
  const userId = q.userId === "me" ? (ctx.actor.userId ?? "") : q.userId;
  const filters = and(
    eq(appointments.organizationId, org),
    q.from ? gt(appointments.endsAt, q.from) : undefined,
    q.to ? lt(appointments.startsAt, q.to) : undefined,
    q.propertyId ? eq(appointments.propertyId, q.propertyId) : undefined,
    q.type ? eq(appointments.type, q.type) : undefined,
    q.status ? eq(appointments.status, q.status) : undefined,
    userId !== undefined ? ofUser(org, userId) : undefined,
    q.contactId ? ofContact(org, q.contactId) : undefined,
  );
  const after = q.cursor ? decodeCursor(q.cursor, SORT, 1) : null;
  const pageWhere = after
    ? and(
        filters,
        or(
          gt(appointments.startsAt, String(after.values[0])),
          and(eq(appointments.startsAt, String(after.values[0])), gt(appointments.id, after.id)),
        ),
      )
    : filters;
  const page = ctx.db
    .select()
    .from(appointments)
    .where(pageWhere)
    .orderBy(asc(appointments.startsAt), asc(appointments.id))
    .limit(q.limit + 1);
  const pageIds = ctx.db
    .select({ id: appointments.id })
    .from(appointments)
    .where(pageWhere)
    .orderBy(asc(appointments.startsAt), asc(appointments.id))
    .limit(q.limit + 1);
  const [rows, attendeeRows, [total]] = await ctx.db.batch([
    page,
    ctx.db
      .select()
      .from(appointmentAttendees)
      .where(and(eq(appointmentAttendees.organizationId, org), inArray(appointmentAttendees.appointmentId, pageIds)))
      .orderBy(sql`rowid`),
    ctx.db.select({ n: count() }).from(appointments).where(filters),
  ]);
  const byAppointment = new Map<string, AttendeeRecord[]>();
  for (const a of attendeeRows) byAppointment.set(a.appointmentId, [...(byAppointment.get(a.appointmentId) ?? []), a]);
  const shown = rows.slice(0, q.limit);
  const hasMore = rows.length > q.limit;
  const last = shown.at(-1);
  return {
    data: shown.map((r) => toAppointment(r, byAppointment.get(r.id) ?? [])),
    pagination: {
      hasMore,
      nextCursor: hasMore && last ? encodeCursor({ sort: SORT, values: [last.startsAt], id: last.id }) : null,
      total: total?.n ?? 0,
      limit: q.limit,
    },
  };
}

/** The appointments a contact attends, in start order with their attendees (the right of access: erasure/access.ts). */
export async function appointmentsOfContact(ctx: ServiceContext, contactId: string): Promise<Appointment[]> {
  const org = ctx.organizationId;
  const theirs = and(eq(appointments.organizationId, org), ofContact(org, contactId));
  const ids = ctx.db.select({ id: appointments.id }).from(appointments).where(theirs);
  const [rows, attendeeRows] = await ctx.db.batch([
    ctx.db.select().from(appointments).where(theirs).orderBy(asc(appointments.startsAt), asc(appointments.id)),
    ctx.db
      .select()
      .from(appointmentAttendees)
      .where(and(eq(appointmentAttendees.organizationId, org), inArray(appointmentAttendees.appointmentId, ids)))
      .orderBy(sql`rowid`),
  ]);
  return rows.map((r) =>
    toAppointment(
      r,
      attendeeRows.filter((a) => a.appointmentId === r.id),
    ),
  );
}
