import { and, eq, sql } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { ContactRecord } from "../contacts/service";
import { appointmentAttendees, appointments, tasks } from "../db/schema";
import { tasksMoveContacts } from "../crm/list-totals";
import { driverRow, valuesFromJson } from "../db/row-json";
import { expectRow, type Statement } from "../db/write";
import { type ImportOutcome, MAX_MATCH_PEOPLE, matchContacts, type PersonKeys } from "../intake/service";
import { derivedId } from "../lib/ids";
import { chunkBySize, inJsonList } from "../lib/sql";
import { nowIso } from "../lib/time";
import { getOrganization } from "../organization/service";
import type { ServiceContext } from "../service-context";
import { userResolver } from "../users/service";
import { inviteeKeys, readAppointment, readTask } from "./agenda-records";
import { type AgendaContext, type Cells, cellsOf } from "./agenda-rows";
import type { RowIssue } from "./contact-rows";
import { targetsOf } from "./mapping";
import type { ImportRow } from "./service";

/**
 * A chunk of Follow Up Boss tasks or appointments (issue 46 part 6) as statements for the chunk's one batch
 * (chunks.ts), written through the schema like the rest of an import: no per-record events (`import.completed`
 * carries the counts), and no invitation mailed for an imported appointment, which happened or was sent by Follow Up
 * Boss already (each attendee is marked invited at its SEQUENCE; a later change here mails them as any change would).
 * Ids derive from Follow Up Boss's own id (else from the record's person, title and time), so a re-run of the same
 * export matches what the first run wrote: skipped, updated or merged by `onDuplicate`, never doubled.
 */

export interface AgendaPlan {
  outcomes: ImportOutcome[];
  failed: number;
  issues: { row: number; issue: RowIssue }[];
  statements: Statement[];
}

type TaskRow = typeof tasks.$inferSelect;
type AppointmentRow = typeof appointments.$inferSelect;
type AttendeeRow = typeof appointmentAttendees.$inferSelect;

const keysOf = (cells: Cells): PersonKeys => ({
  emails: [cells.get("personEmail")?.value ?? ""].filter(Boolean),
  phones: [cells.get("personPhone")?.value ?? ""].filter(Boolean),
});

/** The chunk's people (each row's person and invitees), matched as imported people are, 500 a query. */
async function agendaContext(ctx: ServiceContext, job: ImportRow, people: PersonKeys[]): Promise<AgendaContext> {
  const [org, userOf] = await Promise.all([getOrganization(ctx), userResolver(ctx)]);
  const found = new Map<string, ContactRecord | null>();
  const keyOf = (p: PersonKeys) => JSON.stringify([p.emails.map((e) => e.toLowerCase()), p.phones]);
  const unique = [...new Map(people.map((p) => [keyOf(p), p])).values()].filter((p) => p.emails.length || p.phones.length);
  for (let i = 0; i < unique.length; i += MAX_MATCH_PEOPLE) {
    const part = unique.slice(i, i + MAX_MATCH_PEOPLE);
    const matches = await matchContacts(ctx, part);
    for (const [j, p] of part.entries()) found.set(keyOf(p), matches[j]!.contact);
  }
  return { timeZone: org.timeZone, at: nowIso(), createdBy: job.createdBy, userOf, contactOf: (p) => found.get(keyOf(p)) ?? null };
}

/** New rows of `table` in as few statements as fit (one JSON parameter each); a row whose id another run wrote stays. */
function insertNew(ctx: ServiceContext, table: SQLiteTable, rows: Record<string, unknown>[]): Statement[] {
  if (rows.length === 0) return [];
  return chunkBySize(
    rows.map((r) => JSON.stringify(driverRow(table, r))),
    900 * 1024,
  ).map((g) =>
    ctx.db
      .insert(table)
      .select(sql`SELECT ${valuesFromJson(table, "value")} FROM json_each(${`[${g.join(",")}]`}) WHERE true`)
      .onConflictDoNothing(),
  );
}

/** The row a re-run writes over `before` by `rule`: `update` takes the record's values, `merge` only fills what is empty. */
function rewrite<T extends Record<string, unknown>>(before: T, incoming: T, fields: (keyof T)[], rule: string): Partial<T> | null {
  const changes: Partial<T> = {};
  for (const f of fields) {
    const value = rule === "merge" ? (before[f] ?? incoming[f]) : incoming[f];
    if (value !== before[f]) changes[f] = value;
  }
  return Object.keys(changes).length ? changes : null;
}

const TASK_FIELDS: (keyof TaskRow)[] = [
  "title",
  "type",
  "notes",
  "dueAt",
  "priority",
  "assignedTo",
  "contactId",
  "completed",
  "completedAt",
];
const APPOINTMENT_FIELDS: (keyof AppointmentRow)[] = ["type", "title", "startsAt", "endsAt", "timeZone", "location", "notes", "outcome"];

/** One chunk of tasks. */
export async function planTaskRows(ctx: ServiceContext, job: ImportRow, records: string[][], firstRow: number): Promise<AgendaPlan> {
  const targets = targetsOf(job.resolvedMapping!, job.columns!);
  const cells = records.map((fields) => cellsOf(fields, job.columns!, targets));
  const agenda = await agendaContext(ctx, job, cells.map(keysOf));
  const plan: AgendaPlan = { outcomes: [], failed: 0, issues: [], statements: [] };
  const incoming = new Map<string, TaskRow>();
  for (const [i, c] of cells.entries()) {
    const read = readTask(c, agenda, keysOf(c));
    plan.issues.push(...read.issues.map((issue) => ({ row: firstRow + i, issue })));
    if (!read.task) {
      plan.failed++;
      continue;
    }
    const id = await derivedId(job.organizationId, ...read.key);
    // The same task twice in one file: the first row is it.
    if (incoming.has(id)) plan.outcomes.push("skipped");
    else incoming.set(id, { ...read.task, id, organizationId: job.organizationId });
  }
  const existing = await existingRows(ctx, tasks, tasks.id, tasks.organizationId, job.organizationId, [...incoming.keys()]);
  const created: TaskRow[] = [];
  for (const row of incoming.values()) {
    const before = existing.get(row.id) as TaskRow | undefined;
    if (!before) {
      created.push(row);
      plan.outcomes.push("created");
      continue;
    }
    // Still as done as it was: it keeps when it was done.
    const same = before.completed === row.completed ? { ...row, completedAt: before.completedAt } : row;
    const changes = job.onDuplicate === "skip" ? null : rewrite(before, same, TASK_FIELDS, job.onDuplicate);
    plan.outcomes.push(changes ? "updated" : "skipped");
    if (changes) plan.statements.push(...rewriteAt(ctx, tasks, before, { ...changes, updatedAt: agenda.at }));
  }
  plan.statements.push(...insertNew(ctx, tasks, created));
  // Every imported task is a person's: who has an open one may have changed.
  if (plan.statements.length) plan.statements.push(tasksMoveContacts(ctx.db, job.organizationId));
  return plan;
}

/** One chunk of appointments, with their attendees. */
export async function planAppointmentRows(ctx: ServiceContext, job: ImportRow, records: string[][], firstRow: number): Promise<AgendaPlan> {
  const targets = targetsOf(job.resolvedMapping!, job.columns!);
  const cells = records.map((fields) => cellsOf(fields, job.columns!, targets));
  const agenda = await agendaContext(ctx, job, [...cells.map(keysOf), ...cells.flatMap(inviteeKeys)]);
  const plan: AgendaPlan = { outcomes: [], failed: 0, issues: [], statements: [] };
  const incoming = new Map<string, { appointment: AppointmentRow; attendees: AttendeeRow[] }>();
  for (const [i, c] of cells.entries()) {
    const read = readAppointment(c, agenda, keysOf(c));
    plan.issues.push(...read.issues.map((issue) => ({ row: firstRow + i, issue })));
    if (!read.appointment) {
      plan.failed++;
      continue;
    }
    const id = await derivedId(job.organizationId, ...read.key);
    if (incoming.has(id)) {
      plan.outcomes.push("skipped");
      continue;
    }
    const attendees = await Promise.all(
      read.attendees.map(async (a) => ({ ...a, appointmentId: id, organizationId: job.organizationId, id: await derivedId(id, a.key) })),
    );
    incoming.set(id, {
      appointment: { ...read.appointment, id, organizationId: job.organizationId },
      attendees: attendees.map(({ key: _, ...a }) => a),
    });
  }
  const a = appointments;
  const existing = await existingRows(ctx, a, a.id, a.organizationId, job.organizationId, [...incoming.keys()]);
  const created: AppointmentRow[] = [];
  const attendees: AttendeeRow[] = [];
  for (const { appointment, attendees: theirs } of incoming.values()) {
    const before = existing.get(appointment.id) as AppointmentRow | undefined;
    if (!before) {
      created.push(appointment);
      attendees.push(...theirs);
      plan.outcomes.push("created");
      continue;
    }
    if (job.onDuplicate === "skip") {
      plan.outcomes.push("skipped");
      continue;
    }
    // A re-run adds the attendees it names that are not there yet, each marked invited at the appointment's SEQUENCE.
    attendees.push(...theirs.map((t) => ({ ...t, invitedSequence: before.sequence })));
    const changes = rewrite(before, appointment, APPOINTMENT_FIELDS, job.onDuplicate);
    plan.outcomes.push(changes ? "updated" : "skipped");
    if (changes) plan.statements.push(...rewriteAt(ctx, a, before, { ...changes, updatedAt: agenda.at }));
  }
  plan.statements.push(...insertNew(ctx, a, created), ...insertNew(ctx, appointmentAttendees, attendees));
  return plan;
}

/** The rows of `table` among `ids` in the organization, by id: what an earlier run wrote. */
async function existingRows(
  ctx: ServiceContext,
  table: typeof tasks | typeof appointments,
  idColumn: typeof tasks.id | typeof appointments.id,
  orgColumn: typeof tasks.organizationId | typeof appointments.organizationId,
  organizationId: string,
  ids: string[],
): Promise<Map<string, Record<string, unknown> & { id: string }>> {
  if (ids.length === 0) return new Map();
  const rows = (await ctx.db
    .select()
    .from(table)
    .where(and(eq(orgColumn, organizationId), inJsonList(idColumn, ids)))) as (Record<string, unknown> & { id: string })[];
  return new Map(rows.map((r) => [r.id, r]));
}

/**
 * The update of a row an earlier run wrote, guarded on its version as read: a write landing in between (an agent
 * completing the task) fails the chunk's batch, which plans again on what is there (chunks.ts).
 */
function rewriteAt<T extends typeof tasks | typeof appointments>(
  ctx: ServiceContext,
  table: T,
  before: { id: string; organizationId: string; version: number },
  changes: Record<string, unknown>,
): Statement[] {
  const at = and(eq(table.organizationId, before.organizationId), eq(table.id, before.id), eq(table.version, before.version));
  return [
    expectRow(ctx.db, table, at),
    ctx.db
      .update(table)
      .set({ ...changes, version: before.version + 1 } as never)
      .where(at),
  ];
}
