import { and, asc, count, desc, eq, gt, gte, inArray, isNull, lt, lte, or, sql } from "drizzle-orm";
import { unionAll } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import { appointmentAttendees, appointments, contacts, deals, tasks, documentObligations, envelopeSigners, envelopes } from "../db/schema";
import { DUE_SOON_DAYS, toObligation, utcDay } from "../documents/service";
import type { Permission } from "../platform/permissions";
import type { ServiceContext } from "../service-context";
import { BRIEF_SECTIONS, type BriefSection, type DailyBrief, DEFAULT_BRIEF_ITEMS } from "./schemas";

const SECTIONS = Object.keys(BRIEF_SECTIONS) as BriefSection[];
/** A signer whose turn it is and who has not signed; `pending` is a later turn of a sequential envelope. */
const ACTING = new Set(["sent", "opened", "authenticated", "consented"]);
type TaskPriority = NonNullable<DailyBrief["tasksDue"]>["items"][number]["priority"];

/**
 * The reads of a brief, each a page of `limit` and its count, each one or two index ranges (migrations/tenant/0026,
 * test/brief/brief-plans.test.ts): "the user's or nobody's" is two ranges of the same index merged in order (UNION
 * ALL), since SQLite serves an OR of them by scanning the organization's whole list. Days are UTC, as the obligations
 * list counts them.
 */
export function briefReads(db: Db, organizationId: string, userId: string, limit: number, now: Date) {
  const org = organizationId;
  // The partial indexes' own terms written as literals: SQLite picks a partial index only for a WHERE that states them.
  const lead = and(
    eq(contacts.organizationId, org),
    sql`${contacts.type} = 'LEAD' AND ${contacts.status} = 'ACTIVE' AND ${contacts.lastContactedAt} IS NULL`,
  );
  const mineLeads = and(lead, eq(contacts.assignedTo, userId));
  const nobodysLeads = and(lead, isNull(contacts.assignedTo));
  const leadColumns = {
    id: contacts.id,
    firstName: contacts.firstName,
    lastName: contacts.lastName,
    email: contacts.email,
    phone: contacts.phone,
    source: contacts.source,
    leadScore: contacts.leadScore,
    assignedTo: contacts.assignedTo,
    createdAt: contacts.createdAt,
  };
  const task = and(
    eq(tasks.organizationId, org),
    sql`${tasks.completed} = 0 AND ${tasks.dueAt} IS NOT NULL`,
    // Dates and timestamps alike: anything before tomorrow's date is due today or earlier.
    lt(tasks.dueAt, utcDay(1, now)),
  );
  const mineTasks = and(task, eq(tasks.assignedTo, userId));
  const nobodysOnMyDeals = and(task, isNull(tasks.assignedTo), eq(deals.assignedTo, userId));
  const ofDeal = and(eq(deals.id, tasks.dealId), eq(deals.organizationId, org));
  const taskColumns = {
    // Aliased: both tables have an id and a title, and D1 answers a batch's rows, as the UNION's ORDER BY names them,
    // by column name.
    id: sql<string>`${tasks.id}`.as("id"),
    type: tasks.type,
    contactId: tasks.contactId,
    dealId: tasks.dealId,
    dealTitle: sql<string | null>`${deals.title}`.as("deal_title"),
    title: tasks.title,
    dueDate: tasks.dueAt,
    priority: tasks.priority,
    assignedTo: tasks.assignedTo,
  };
  const obligations = and(eq(documentObligations.organizationId, org), lte(documentObligations.dueDate, utcDay(DUE_SOON_DAYS, now)));
  // Past its expiry but not swept yet (signatures/sweeps.ts): it waits on no one any more.
  const open = and(
    eq(envelopes.organizationId, org),
    eq(envelopes.status, "partially_signed"),
    or(isNull(envelopes.expiresAt), gt(envelopes.expiresAt, now.toISOString())),
  );
  const oldestFirst = [asc(envelopes.createdAt), asc(envelopes.id)] as const;
  // Today's appointments of the organization in start order (one range of appointments_org_starts_idx), kept when the
  // user made or attends them (the attendees' primary key, per appointment): an organization's one day is few rows.
  const theirs = and(
    eq(appointments.organizationId, org),
    gte(appointments.startsAt, utcDay(0, now)),
    lt(appointments.startsAt, utcDay(1, now)),
    eq(appointments.status, "scheduled"),
    or(
      eq(appointments.createdBy, userId),
      sql`EXISTS (SELECT 1 FROM ${appointmentAttendees} WHERE ${appointmentAttendees.appointmentId} = ${appointments.id} AND ${appointmentAttendees.userId} = ${userId})`,
    ),
  );
  return {
    leads: unionAll(db.select(leadColumns).from(contacts).where(mineLeads), db.select(leadColumns).from(contacts).where(nobodysLeads))
      .orderBy(desc(contacts.createdAt), desc(contacts.id))
      .limit(limit),
    mineLeadCount: db.select({ n: count() }).from(contacts).where(mineLeads),
    nobodysLeadCount: db.select({ n: count() }).from(contacts).where(nobodysLeads),
    tasks: unionAll(
      // The user's own: on a contact, a deal, a property or nothing (the deal's title when on one).
      db.select(taskColumns).from(tasks).leftJoin(deals, ofDeal).where(mineTasks),
      db.select(taskColumns).from(tasks).innerJoin(deals, ofDeal).where(nobodysOnMyDeals),
    )
      .orderBy(asc(tasks.dueAt), asc(sql`id`))
      .limit(limit),
    mineTaskCount: db.select({ n: count() }).from(tasks).where(mineTasks),
    nobodysTaskCount: db.select({ n: count() }).from(tasks).innerJoin(deals, ofDeal).where(nobodysOnMyDeals),
    obligations: db
      .select()
      .from(documentObligations)
      .where(obligations)
      .orderBy(asc(documentObligations.dueDate), asc(documentObligations.id))
      .limit(limit),
    obligationCount: db.select({ n: count() }).from(documentObligations).where(obligations),
    envelopes: db
      .select({
        id: envelopes.id,
        documentId: envelopes.documentId,
        documentTitle: envelopes.documentTitle,
        mode: envelopes.mode,
        sentAt: envelopes.createdAt,
        sentBy: envelopes.createdBy,
        expiresAt: envelopes.expiresAt,
      })
      .from(envelopes)
      .where(open)
      .orderBy(...oldestFirst)
      .limit(limit),
    envelopeCount: db.select({ n: count() }).from(envelopes).where(open),
    appointments: db
      .select({
        id: appointments.id,
        type: appointments.type,
        title: appointments.title,
        startsAt: appointments.startsAt,
        endsAt: appointments.endsAt,
        timeZone: appointments.timeZone,
        location: appointments.location,
        propertyId: appointments.propertyId,
      })
      .from(appointments)
      .where(theirs)
      .orderBy(asc(appointments.startsAt), asc(appointments.id))
      .limit(limit),
    appointmentCount: db.select({ n: count() }).from(appointments).where(theirs),
    // The signers of that page of envelopes, named by the page's own query: read in the same batch.
    signers: db
      .select({
        envelopeId: envelopeSigners.envelopeId,
        id: envelopeSigners.id,
        name: envelopeSigners.name,
        email: envelopeSigners.email,
        role: envelopeSigners.role,
        status: envelopeSigners.status,
      })
      .from(envelopeSigners)
      .where(
        and(
          eq(envelopeSigners.organizationId, org),
          inArray(
            envelopeSigners.envelopeId,
            db
              .select({ id: envelopes.id })
              .from(envelopes)
              .where(open)
              .orderBy(...oldestFirst)
              .limit(limit),
          ),
        ),
      )
      .orderBy(asc(envelopeSigners.envelopeId), asc(envelopeSigners.position)),
  };
}

/**
 * The daily brief of user `userId` (the MCP tool daily_brief): active leads assigned to them or to nobody and never
 * contacted, newest first; open tasks due today or before, theirs (on contacts, deals or nothing) or nobody's on their deals, soonest first; the
 * organization's document obligations overdue or due within a week, soonest first; its envelopes sent and still
 * open, oldest first, with the signers they wait on; the user's appointments starting today. Each section is its `limit` first items and a total. A section
 * whose permission is not in `granted` is neither read nor answered, and is named in `omitted`. One D1 batch.
 */
export async function dailyBrief(
  ctx: ServiceContext,
  userId: string,
  granted: readonly Permission[],
  { limit = DEFAULT_BRIEF_ITEMS, now = new Date() }: { limit?: number; now?: Date } = {},
): Promise<DailyBrief> {
  const may = (s: BriefSection) => granted.includes(BRIEF_SECTIONS[s]);
  const { db } = ctx;
  const today = utcDay(0, now);
  const at = now.toISOString();
  const r = briefReads(db, ctx.organizationId, userId, limit, now);
  // A section the credential may not read holds its place in the batch with a select of nothing (LIMIT 0 reads no row).
  const none = db.select({ n: count() }).from(contacts).where(sql`0`).limit(0);
  const when = <Q>(s: BriefSection, query: Q): Q => (may(s) ? query : (none as Q));
  const [
    leads,
    [mineLeads],
    [nobodysLeads],
    tasks,
    [mineTasks],
    [nobodysTasks],
    obligations,
    [obligationCount],
    open,
    [openCount],
    signers,
    todays,
    [todaysCount],
  ] = await db.batch([
    when("newLeads", r.leads),
    when("newLeads", r.mineLeadCount),
    when("newLeads", r.nobodysLeadCount),
    when("tasksDue", r.tasks),
    when("tasksDue", r.mineTaskCount),
    when("tasksDue", r.nobodysTaskCount),
    when("obligationsDueSoon", r.obligations),
    when("obligationsDueSoon", r.obligationCount),
    when("envelopesWaiting", r.envelopes),
    when("envelopesWaiting", r.envelopeCount),
    when("envelopesWaiting", r.signers),
    when("appointmentsToday", r.appointments),
    when("appointmentsToday", r.appointmentCount),
  ]);

  const brief: DailyBrief = { date: today, omitted: [] };
  const total = (...counts: ({ n: number } | undefined)[]) => counts.reduce((sum, c) => sum + (c?.n ?? 0), 0);
  if (may("newLeads")) brief.newLeads = { total: total(mineLeads, nobodysLeads), items: leads };
  if (may("tasksDue"))
    brief.tasksDue = {
      total: total(mineTasks, nobodysTasks),
      items: tasks.map((t) => ({
        ...t,
        dueDate: t.dueDate!,
        priority: t.priority as TaskPriority,
        // A date is due all day; a timestamp is overdue from its time on.
        overdue: t.dueDate!.length === 10 ? t.dueDate! < today : t.dueDate! < at,
      })),
    };
  if (may("obligationsDueSoon"))
    brief.obligationsDueSoon = {
      total: total(obligationCount),
      items: obligations.map((o) => toObligation(o, today, utcDay(DUE_SOON_DAYS, now))),
    };
  if (may("envelopesWaiting"))
    brief.envelopesWaiting = {
      total: total(openCount),
      items: open.map((e) => {
        const theirs = signers.filter((s) => s.envelopeId === e.id);
        return {
          ...e,
          signed: theirs.filter((s) => s.status === "signed").length,
          signers: theirs.length,
          waitingOn: theirs.filter((s) => ACTING.has(s.status)).map(({ envelopeId: _e, ...s }) => s),
        };
      }),
    };
  if (may("appointmentsToday")) brief.appointmentsToday = { total: total(todaysCount), items: todays };
  brief.omitted = SECTIONS.filter((s) => !may(s)).map((section) => ({ section, permission: BRIEF_SECTIONS[section] }));
  return brief;
}
