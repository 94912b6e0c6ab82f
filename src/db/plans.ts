import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** A step of an action plan, as stored (the API's shape: action-plans/schemas.ts). `delay` is ISO 8601. */
export type StoredPlanStep =
  | { delay: string; type: "send_email"; email: { subject: string; body: string } }
  | { delay: string; type: "create_task"; task: { title: string; type: string } }
  | { delay: string; type: "add_tag" | "remove_tag"; tag: string }
  | { delay: string; type: "set_status"; status: string }
  | { delay: string; type: "set_stage"; stage: string }
  | { delay: string; type: "notify" };
export type StoredPlanTrigger =
  | { event: "contact.tagged"; tag: string }
  | { event: "deal.stage_changed"; stage: string }
  | { event: "contact.created"; source?: string };

/** Action plans (issue 46): timed steps a contact is enrolled in. */
export const actionPlans = sqliteTable(
  "action_plans",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    name: text().notNull(),
    steps: text({ mode: "json" }).$type<StoredPlanStep[]>().notNull(),
    triggers: text({ mode: "json" }).$type<StoredPlanTrigger[]>().notNull(),
    createdBy: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    version: integer().notNull().default(1),
  },
  (t) => [index("action_plans_org_created_idx").on(t.organizationId, t.createdAt, t.id)],
);

export type EnrollmentStatus = "active" | "paused" | "completed" | "stopped";

/**
 * A contact in a plan. `steps` is the plan's steps when the contact was enrolled (a later edit of the plan changes
 * no running enrollment). `nextStep` is the index of the step to run next and `nextRunAt` when (null unless active with
 * a step left). At most one active or paused enrollment per contact and plan (the partial unique index).
 */
export const planEnrollments = sqliteTable(
  "plan_enrollments",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    planId: text().notNull(),
    contactId: text().notNull(),
    status: text().$type<EnrollmentStatus>().notNull(),
    steps: text({ mode: "json" }).$type<StoredPlanStep[]>().notNull(),
    nextStep: integer().notNull().default(0),
    nextRunAt: text(),
    /** `manual` | `trigger` | `intake`. */
    enrolledVia: text().notNull(),
    enrolledBy: text(),
    enrolledAt: text().notNull(),
    pausedAt: text(),
    pauseReason: text(),
    endedAt: text(),
    updatedAt: text().notNull(),
    version: integer().notNull().default(1),
  },
  (t) => [
    uniqueIndex("plan_enrollments_live_unique").on(t.organizationId, t.planId, t.contactId).where(sql`${t.status} IN ('active', 'paused')`),
    index("plan_enrollments_org_plan_idx").on(t.organizationId, t.planId, t.enrolledAt, t.id),
    index("plan_enrollments_org_contact_idx").on(t.organizationId, t.contactId, t.status),
    // The step pass: active enrollments whose next step is due, soonest first.
    index("plan_enrollments_due_idx").on(t.nextRunAt).where(sql`${t.status} = 'active' AND ${t.nextRunAt} IS NOT NULL`),
  ],
);

/**
 * One row per step an enrollment ran or is running: the claim that makes a step run once (`running` while its e-mail
 * is out, `done` after), and the enrollment's history.
 */
export const planStepRuns = sqliteTable(
  "plan_step_runs",
  {
    enrollmentId: text().notNull(),
    step: integer().notNull(),
    organizationId: text().notNull(),
    type: text().notNull(),
    state: text().$type<"running" | "done" | "skipped" | "failed">().notNull(),
    dueAt: text().notNull(),
    startedAt: text().notNull(),
    finishedAt: text(),
    attempts: integer().notNull().default(1),
    outcome: text({ mode: "json" }).$type<Record<string, unknown>>(),
  },
  (t) => [primaryKey({ columns: [t.enrollmentId, t.step] }), index("plan_step_runs_org_idx").on(t.organizationId, t.enrollmentId)],
);
