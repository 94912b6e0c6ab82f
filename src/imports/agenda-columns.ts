/**
 * The columns of a Follow Up Boss book's tasks and appointments (issue 46 part 6): Follow Up Boss exports its people as
 * a CSV but hands tasks and appointments out through its API (`/v1/tasks`, `/v1/appointments`), so the defaults are
 * that API's field names, which a migration posts as JSON rows as they come, and their spreadsheet spellings ("Due
 * Date", "Is Completed"), which match through the normalized name. A row names its person by e-mail or phone (Follow Up
 * Boss's `personId` is no id of ours), matched as an imported person is.
 */

export const TASK_TARGETS = [
  "externalId",
  "title",
  "type",
  "dueAt",
  "dueDate",
  "completed",
  "assignedTo",
  "personEmail",
  "personPhone",
  "priority",
  "notes",
  "ignore",
] as const;

export const APPOINTMENT_TARGETS = [
  "externalId",
  "title",
  "type",
  "startsAt",
  "endsAt",
  "allDay",
  "timeZone",
  "location",
  "notes",
  "outcome",
  "invitees",
  "personEmail",
  "personPhone",
  "ignore",
] as const;

/** Follow Up Boss task fields (`GET /v1/tasks`), and a person's e-mail or phone beside them. */
export const FOLLOW_UP_BOSS_TASK: Record<string, string> = {
  id: "externalId",
  "Task Id": "externalId",
  name: "title",
  title: "title",
  type: "type",
  dueDateTime: "dueAt",
  dueDate: "dueDate",
  isCompleted: "completed",
  completed: "completed",
  assignedTo: "assignedTo",
  priority: "priority",
  note: "notes",
  notes: "notes",
  description: "notes",
  personEmail: "personEmail",
  email: "personEmail",
  personPhone: "personPhone",
  phone: "personPhone",
};

/** Follow Up Boss appointment fields (`GET /v1/appointments`): `invitees` a list of `{userId|personId, name, email}`. */
export const FOLLOW_UP_BOSS_APPOINTMENT: Record<string, string> = {
  id: "externalId",
  "Appointment Id": "externalId",
  title: "title",
  name: "title",
  type: "type",
  start: "startsAt",
  startsAt: "startsAt",
  end: "endsAt",
  endsAt: "endsAt",
  allDay: "allDay",
  timeZone: "timeZone",
  location: "location",
  description: "notes",
  notes: "notes",
  outcome: "outcome",
  invitees: "invitees",
  personEmail: "personEmail",
  email: "personEmail",
  personPhone: "personPhone",
  phone: "personPhone",
};
