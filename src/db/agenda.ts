import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export type TaskType = "call" | "email" | "text" | "showing" | "follow_up" | "other";

/**
 * Tasks (issue 46): on a contact, a deal and/or a property, or on nothing but the agent's day. The deal tasks of old
 * are the rows with a `deal_id` (migration 0031 moved `deal_tasks` here): `/v1/deals/{id}/tasks` reads and writes them
 * as before. `due_at` is a UTC timestamp or, for a task due on a day (the deal tasks' `dueDate`), `YYYY-MM-DD`: both sort
 * as text. `due_announced_at` is set by the cron's due pass in the batch that stages `task.due`, so it is sent once.
 */
export const tasks = sqliteTable(
  "tasks",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    title: text().notNull(),
    type: text().$type<TaskType>().notNull().default("other"),
    notes: text(),
    dueAt: text(),
    priority: text().notNull(),
    assignedTo: text(),
    contactId: text(),
    dealId: text(),
    propertyId: text(),
    completed: integer({ mode: "boolean" }).notNull().default(false),
    completedAt: text(),
    completedBy: text(),
    createdBy: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    version: integer().notNull().default(1),
    dueAnnouncedAt: text(),
  },
  (t) => [
    index("tasks_org_deal_idx").on(t.organizationId, t.dealId, t.createdAt, t.id),
    index("tasks_org_contact_idx").on(t.organizationId, t.contactId, t.completed, t.dueAt, t.id),
    // A user's open tasks falling due, in due order: GET /v1/tasks?assignedTo=…, my_tasks and the daily brief.
    index("tasks_assignee_due_idx").on(t.organizationId, t.assignedTo, t.completed, t.dueAt, t.id),
    index("tasks_org_due_idx").on(t.organizationId, t.completed, t.dueAt, t.id),
    index("tasks_org_created_idx").on(t.organizationId, t.createdAt, t.id),
    // The cron's due pass: open tasks whose task.due has not been sent, in due order.
    index("tasks_due_pass_idx").on(t.dueAt).where(sql`${t.completed} = 0 AND ${t.dueAnnouncedAt} IS NULL AND ${t.dueAt} IS NOT NULL`),
  ],
);

export type AppointmentType = "showing" | "listing_presentation" | "buyer_consultation" | "closing" | "other";
export type AttendeeResponse = "needs_action" | "accepted" | "declined" | "tentative";

/**
 * Appointments (issue 46). `sequence` is iCalendar's SEQUENCE: bumped by every change an invitee should see (time,
 * place, cancel), in the change's batch. `status` `scheduled` | `cancelled`.
 */
export const appointments = sqliteTable(
  "appointments",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    type: text().$type<AppointmentType>().notNull(),
    title: text(),
    startsAt: text().notNull(),
    endsAt: text().notNull(),
    timeZone: text().notNull(),
    location: text(),
    propertyId: text(),
    notes: text(),
    outcome: text(),
    status: text().$type<"scheduled" | "cancelled">().notNull().default("scheduled"),
    sequence: integer().notNull().default(0),
    createdBy: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    cancelledAt: text(),
    version: integer().notNull().default(1),
  },
  (t) => [
    index("appointments_org_starts_idx").on(t.organizationId, t.startsAt, t.id),
    index("appointments_org_property_idx").on(t.organizationId, t.propertyId, t.startsAt, t.id),
  ],
);

/**
 * An appointment's attendees: a user or a contact (exactly one of the two). `email`/`name` are the contact's when the
 * invitation was last sent; `invitedSequence` the SEQUENCE last mailed to them (null: never), so a retried change
 * mails each invitation once.
 */
export const appointmentAttendees = sqliteTable(
  "appointment_attendees",
  {
    appointmentId: text().notNull(),
    id: text().notNull(),
    organizationId: text().notNull(),
    userId: text(),
    contactId: text(),
    email: text(),
    name: text(),
    response: text().$type<AttendeeResponse>().notNull().default("needs_action"),
    invitedSequence: integer(),
  },
  (t) => [
    primaryKey({ columns: [t.appointmentId, t.id] }),
    index("appointment_attendees_org_user_idx").on(t.organizationId, t.userId, t.appointmentId),
    index("appointment_attendees_org_contact_idx").on(t.organizationId, t.contactId, t.appointmentId),
  ],
);

/**
 * A user's secret calendar feed (`{APP_URL}/calendar/<token>.ics`): the token is kept only as its SHA-256 (the
 * directory's `calendar_feed` public key finds the organization by the same hash). One per user: issuing again
 * replaces the row, so the old URL stops.
 */
export const calendarFeeds = sqliteTable(
  "calendar_feeds",
  {
    tokenHash: text().primaryKey(),
    organizationId: text().notNull(),
    userId: text().notNull(),
    createdAt: text().notNull(),
  },
  (t) => [uniqueIndex("calendar_feeds_org_user_unique").on(t.organizationId, t.userId)],
);
