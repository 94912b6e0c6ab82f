import type { appointmentAttendees, appointments, tasks } from "../db/schema";
import type { PersonKeys } from "../intake/service";
import {
  type AgendaContext,
  appointmentTypeOf,
  booleanOf,
  type Cells,
  instantOf,
  inviteesOf,
  isDay,
  isTimeZone,
  issue,
  PRIORITIES,
  taskTypeOf,
  wallTimeToUtc,
} from "./agenda-rows";
import type { RowIssue } from "./contact-rows";

/**
 * One Follow Up Boss task or appointment record as the row it becomes (without its id, which the caller derives from
 * `key`), or the problems that fail it: one line each in the errors CSV, by column, as a contact row's.
 */

type TaskRow = typeof tasks.$inferSelect;
type AppointmentRow = typeof appointments.$inferSelect;
type AttendeeRow = typeof appointmentAttendees.$inferSelect;
type Unplaced<T> = Omit<T, "id" | "organizationId">;

const TITLE_MAX = 200;
const TEXT_MAX = 10_000;
const NO_CONTACT = "contact_not_found: no contact has this e-mail or phone; import the people first, then this file again";

/** The row's person: null when it names none; a problem when it names one nobody is. */
function personOf(cells: Cells, agenda: AgendaContext, keys: PersonKeys, issues: RowIssue[]): string | null {
  if (keys.emails.length === 0 && keys.phones.length === 0) return null;
  const contact = agenda.contactOf(keys);
  if (!contact) issues.push(issue((cells.get("personEmail") ?? cells.get("personPhone"))!.column, NO_CONTACT));
  return contact?.id ?? null;
}

function textOf(cells: Cells, target: string, max: number, issues: RowIssue[]): string | null {
  const cell = cells.get(target);
  if (!cell) return null;
  if (cell.value.length > max) issues.push(issue(cell.column, `too_long: ${target} takes at most ${max} characters`));
  return cell.value;
}

export function readTask(
  cells: Cells,
  agenda: AgendaContext,
  keys: PersonKeys,
): { task: Unplaced<TaskRow> | null; key: string[]; issues: RowIssue[] } {
  const issues: RowIssue[] = [];
  const title = textOf(cells, "title", TITLE_MAX, issues);
  if (title === null) issues.push(issue("name", "required: a task needs a title (Follow Up Boss's name)"));
  // dueDateTime first; a day alone (dueDate) stays a day, as a deal task's dueDate does.
  const due = cells.get("dueAt") ?? cells.get("dueDate");
  const dueAt = due ? (isDay(due.value) ? due.value : instantOf(due.value, agenda.timeZone)) : null;
  if (due && !dueAt) issues.push(issue(due.column, "invalid_date: an ISO 8601 date (YYYY-MM-DD) or date-time"));
  const done = cells.get("completed");
  const completed = done ? booleanOf(done.value) : false;
  if (completed === null) issues.push(issue(done!.column, "invalid_boolean: true or false (yes or no)"));
  const given = cells.get("priority");
  const priority = (given?.value.toUpperCase() ?? "MEDIUM") as TaskRow["priority"];
  if (!(PRIORITIES as readonly string[]).includes(priority))
    issues.push(issue(given!.column, `invalid_priority: one of ${PRIORITIES.join(", ")}`));
  const notes = textOf(cells, "notes", TEXT_MAX, issues);
  const contactId = personOf(cells, agenda, keys, issues);
  const assignee = cells.get("assignedTo");
  const assignedTo = assignee ? agenda.userOf(assignee.value) : null;
  const failed = issues.length > 0;
  if (assignee && !assignedTo)
    issues.push(
      issue(assignee.column, "unknown_user: no single user of the organization has this id, e-mail or name; imported unassigned"),
    );
  if (failed) return { task: null, key: [], issues };
  const external = cells.get("externalId")?.value;
  return {
    task: {
      title: title!,
      type: taskTypeOf(cells.get("type")?.value),
      notes,
      dueAt,
      priority,
      assignedTo,
      contactId,
      dealId: null,
      propertyId: null,
      completed: completed === true,
      // Follow Up Boss says whether, not when or by whom: done by the time it came in.
      completedAt: completed ? agenda.at : null,
      completedBy: null,
      createdBy: agenda.createdBy,
      createdAt: agenda.at,
      updatedAt: agenda.at,
      version: 1,
      // Came due in Follow Up Boss already (which reminded then): the due pass does not announce it again.
      dueAnnouncedAt: !completed && dueAt !== null && dueAt <= agenda.at ? agenda.at : null,
    },
    key: external ? ["followupboss-task", external] : ["task", contactId ?? "", title!, dueAt ?? ""],
    issues,
  };
}

const DAY_MS = 86_400_000;
const nextDay = (day: string) => new Date(Date.parse(`${day}T00:00:00Z`) + DAY_MS).toISOString().slice(0, 10);

/** The invitees' keys, for the chunk's one match of people. */
export const inviteeKeys = (cells: Cells): PersonKeys[] =>
  (inviteesOf(cells.get("invitees")?.value ?? "") ?? []).flatMap((i) => (i.email ? [{ emails: [i.email], phones: [] }] : []));

export function readAppointment(
  cells: Cells,
  agenda: AgendaContext,
  keys: PersonKeys,
): {
  appointment: Unplaced<AppointmentRow> | null;
  attendees: (Omit<AttendeeRow, "appointmentId" | "organizationId" | "id"> & { key: string })[];
  key: string[];
  issues: RowIssue[];
} {
  const issues: RowIssue[] = [];
  const zone = cells.get("timeZone");
  const timeZone = zone && isTimeZone(zone.value) ? zone.value : agenda.timeZone;
  if (zone && !isTimeZone(zone.value)) issues.push(issue(zone.column, "invalid_time_zone: an IANA time zone such as America/Toronto"));
  const start = cells.get("startsAt");
  const end = cells.get("endsAt");
  const allDay = cells.get("allDay") ? booleanOf(cells.get("allDay")!.value) : false;
  if (allDay === null) issues.push(issue(cells.get("allDay")!.column, "invalid_boolean: true or false (yes or no)"));
  let startsAt: string | null = null;
  let endsAt: string | null = null;
  if (!start) issues.push(issue("start", "required: an appointment needs its start"));
  else if (allDay || isDay(start.value)) {
    // All day: from the day's midnight to the next one's (or the end day's), in the appointment's zone.
    const first = start.value.slice(0, 10);
    const last = end && isDay(end.value.slice(0, 10)) && end.value.slice(0, 10) > first ? end.value.slice(0, 10) : first;
    if (!isDay(first)) issues.push(issue(start.column, "invalid_date: an ISO 8601 date or date-time"));
    else {
      startsAt = wallTimeToUtc(`${first}T00:00:00`, timeZone);
      endsAt = wallTimeToUtc(`${nextDay(last)}T00:00:00`, timeZone);
    }
  } else {
    startsAt = instantOf(start.value, timeZone);
    if (!startsAt) issues.push(issue(start.column, "invalid_date: an ISO 8601 date-time"));
    endsAt = end ? instantOf(end.value, timeZone) : startsAt && new Date(Date.parse(startsAt) + 3_600_000).toISOString();
    if (end && !endsAt) issues.push(issue(end.column, "invalid_date: an ISO 8601 date-time"));
    if (startsAt && endsAt && endsAt < startsAt) issues.push(issue(end!.column, "invalid_range: the end is before the start"));
  }
  const title = textOf(cells, "title", TITLE_MAX, issues);
  const location = textOf(cells, "location", 500, issues);
  const notes = textOf(cells, "notes", TEXT_MAX, issues);
  const outcome = textOf(cells, "outcome", 500, issues);
  const contactId = personOf(cells, agenda, keys, issues);
  const invitees = cells.has("invitees") ? inviteesOf(cells.get("invitees")!.value) : [];
  if (invitees === null)
    issues.push(
      issue(cells.get("invitees")!.column, "invalid_invitees: a JSON list of {name, email}, or names and e-mails separated by ;"),
    );
  if (issues.length > 0) return { appointment: null, attendees: [], key: [], issues };

  const attendees: ReturnType<typeof readAppointment>["attendees"] = [];
  const add = (userId: string | null, contactId: string | null, email: string | null, name: string | null) => {
    const key = userId ? `user:${userId}` : `contact:${contactId}`;
    if (attendees.some((a) => a.key === key)) return;
    // Invited by Follow Up Boss already: marked invited at SEQUENCE 0, so nothing is mailed for the import itself.
    attendees.push({ key, userId, contactId, email, name, response: "needs_action", invitedSequence: 0 });
  };
  if (contactId) {
    const c = agenda.contactOf(keys)!;
    add(null, c.id, c.email, [c.firstName, c.lastName].filter(Boolean).join(" ") || null);
  }
  for (const invitee of invitees!) {
    const userId = agenda.userOf(invitee.email ?? invitee.name ?? "");
    const contact = userId || !invitee.email ? null : agenda.contactOf({ emails: [invitee.email], phones: [] });
    if (userId) add(userId, null, null, null);
    else if (contact) add(null, contact.id, contact.email, [contact.firstName, contact.lastName].filter(Boolean).join(" ") || null);
    // Someone who is neither a user nor a contact here has nowhere to be an attendee: said, and left out.
    else issues.push(issue(cells.get("invitees")!.column, "unknown_invitee: neither a user nor a contact; left out of the attendees"));
  }
  const external = cells.get("externalId")?.value;
  return {
    appointment: {
      type: appointmentTypeOf(cells.get("type")?.value ?? title ?? undefined),
      title,
      startsAt: startsAt!,
      endsAt: endsAt!,
      timeZone,
      location,
      propertyId: null,
      notes,
      outcome,
      status: "scheduled",
      sequence: 0,
      createdBy: agenda.createdBy,
      createdAt: agenda.at,
      updatedAt: agenda.at,
      cancelledAt: null,
      version: 1,
    },
    attendees,
    key: external ? ["followupboss-appointment", external] : ["appointment", contactId ?? "", title ?? "", startsAt!],
    issues,
  };
}
