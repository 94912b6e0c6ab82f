import { and, asc, count, desc, eq, inArray, sql } from "drizzle-orm";
import { decodeNewestFirstCursor, olderThan, paginate } from "../crm/pagination";
import { contacts } from "../db/schema";
import { actionPlans, planEnrollments, planStepRuns, type StoredPlanTrigger } from "../db/plans";
import { expectNoRow, expectRow, expectVersionMatch, StaleWrite, type Statement, versioned, withRetries } from "../db/write";
import { commit } from "../events/commit";
import type { DomainEvent } from "../events/event";
import { newEvent } from "../events/outbox";
import { Conflict, InvalidState, NotFound, Validation } from "../lib/errors";
import { newId } from "../lib/ids";
import { inJsonList } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import {
  type ActionPlan,
  type ActionPlanInput,
  type ActionPlanUpdate,
  delaySeconds,
  type Enrollment,
  type EnrollmentListQuery,
  type StoredPlanStep,
} from "./schemas";

export { actionPlansErasable } from "./erasure";

export type PlanRow = typeof actionPlans.$inferSelect;
export type EnrollmentRow = typeof planEnrollments.$inferSelect;
export type StepRunRow = typeof planStepRuns.$inferSelect;
export type EnrolledVia = "manual" | "trigger" | "intake";

const SORT = "createdAt:desc";
const ENROLLMENT_SORT = "enrolledAt:desc";
export const LIVE = ["active", "paused"] as const;

/** `at` plus the step's delay (ISO 8601 duration, validated on the way in). */
export const dueAfter = (at: string, step: StoredPlanStep): string =>
  new Date(Date.parse(at) + (delaySeconds(step.delay) ?? 0) * 1000).toISOString();

const toPlan = (r: PlanRow): ActionPlan => ({
  id: r.id,
  name: r.name,
  steps: r.steps as ActionPlan["steps"],
  triggers: r.triggers as ActionPlan["triggers"],
  createdBy: r.createdBy,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
  version: r.version,
});

export const toEnrollment = (r: EnrollmentRow, history: StepRunRow[] = []): Enrollment => {
  const step = r.steps[r.nextStep];
  const live = r.status === "active" || r.status === "paused";
  return {
    id: r.id,
    planId: r.planId,
    contactId: r.contactId,
    status: r.status,
    enrolledVia: r.enrolledVia as EnrolledVia,
    enrolledBy: r.enrolledBy,
    enrolledAt: r.enrolledAt,
    nextStep: live && step ? { index: r.nextStep, type: step.type, dueAt: r.nextRunAt } : null,
    pausedAt: r.pausedAt,
    pauseReason: r.pauseReason,
    endedAt: r.endedAt,
    history: history
      .filter((h) => h.enrollmentId === r.id)
      .sort((a, b) => a.step - b.step)
      .map(({ step, type, state, dueAt, startedAt, finishedAt, attempts, outcome }) => ({
        step,
        type,
        state,
        dueAt,
        startedAt,
        finishedAt,
        attempts,
        outcome: outcome ?? null,
      })),
    updatedAt: r.updatedAt,
    version: r.version,
  };
};

/** The event of an enrollment's move: `data.object` is the enrollment as GET …/enrollments shows it (without history). */
export const enrollmentEvent = (
  ctx: Pick<ServiceContext, "organizationId" | "actor">,
  type: "action_plan.enrolled" | "action_plan.paused",
  row: EnrollmentRow,
  extra: Record<string, unknown> = {},
): DomainEvent => newEvent(ctx, type, { object: toEnrollment(row), previousAttributes: null, changes: null, ...extra });

/* ------------------------------------------------------------------ plans */

const planById = (ctx: ServiceContext, id: string) => and(eq(actionPlans.organizationId, ctx.organizationId), eq(actionPlans.id, id));

async function findPlan(ctx: ServiceContext, id: string): Promise<PlanRow> {
  const row = await ctx.db.select().from(actionPlans).where(planById(ctx, id)).get();
  if (!row) throw new NotFound("Action plan");
  return row;
}

export async function createPlan(ctx: ServiceContext, input: ActionPlanInput): Promise<ActionPlan> {
  const at = new Date().toISOString();
  const row: PlanRow = {
    id: newId(),
    organizationId: ctx.organizationId,
    name: input.name,
    steps: input.steps,
    triggers: input.triggers,
    createdBy: ctx.actor.userId ?? null,
    createdAt: at,
    updatedAt: at,
    version: 1,
  };
  await commit(ctx, [ctx.db.insert(actionPlans).values(row)], [], { answer: toPlan(row) });
  return versioned(toPlan(row), row.version);
}

export const getPlan = async (ctx: ServiceContext, id: string): Promise<ActionPlan> => {
  const row = await findPlan(ctx, id);
  return versioned(toPlan(row), row.version);
};

export async function listPlans(ctx: ServiceContext, q: { limit: number; cursor?: string }) {
  const after = decodeNewestFirstCursor(q.cursor, SORT);
  const t = actionPlans;
  const scope = eq(t.organizationId, ctx.organizationId);
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(t)
      .where(after ? and(scope, olderThan(t.createdAt, t.id, after)) : scope)
      .orderBy(desc(t.createdAt), desc(t.id))
      .limit(q.limit + 1),
    ctx.db.select({ n: count() }).from(t).where(scope),
  ]);
  const { page, pagination } = paginate(rows, q.limit, total?.n ?? 0, (r) => ({ at: r.createdAt, id: r.id }), SORT);
  return { data: page.map(toPlan), pagination };
}

/**
 * PATCH: the fields given replace the plan's (a compare-and-set on its version). Contacts enrolled already keep the
 * steps they were enrolled with; the new steps apply to enrollments from now on.
 */
export async function updatePlan(ctx: ServiceContext, id: string, input: ActionPlanUpdate): Promise<ActionPlan> {
  return withRetries(async () => {
    const before = await findPlan(ctx, id);
    expectVersionMatch(ctx, before.version);
    const after: PlanRow = { ...before, ...input, updatedAt: new Date().toISOString(), version: before.version + 1 };
    const at = and(planById(ctx, id), eq(actionPlans.version, before.version));
    await commit(ctx, [expectRow(ctx.db, actionPlans, at), ctx.db.update(actionPlans).set(after).where(at)], [], { answer: toPlan(after) });
    return versioned(toPlan(after), after.version);
  });
}

/**
 * DELETE: the plan goes, and its active and paused enrollments are stopped in the same batch (their history stays).
 * Guarded on the plan being there: of concurrent deletes one answers 200, the others 404.
 */
export async function deletePlan(ctx: ServiceContext, id: string): Promise<void> {
  await withRetries(async () => {
    expectVersionMatch(ctx, (await findPlan(ctx, id)).version);
    const at = new Date().toISOString();
    await commit(ctx, [
      expectRow(ctx.db, actionPlans, planById(ctx, id)),
      ctx.db
        .update(planEnrollments)
        .set({ status: "stopped", nextRunAt: null, endedAt: at, updatedAt: at, version: sql`${planEnrollments.version} + 1` })
        .where(
          and(
            eq(planEnrollments.organizationId, ctx.organizationId),
            eq(planEnrollments.planId, id),
            inArray(planEnrollments.status, [...LIVE]),
          ),
        ),
      ctx.db.delete(actionPlans).where(planById(ctx, id)),
    ]);
  });
}

/* ------------------------------------------------------------------ enrollments */

const alreadyEnrolled = (contactId: string) =>
  new Conflict(`Contact ${contactId} is already in this plan (active or paused)`, "already_enrolled", [
    { field: "contactId", path: ["contactId"], code: "already_enrolled", message: "Already in this plan" },
  ]);

const liveIn = (ctx: ServiceContext, planId: string, contactId: string) =>
  and(
    eq(planEnrollments.organizationId, ctx.organizationId),
    eq(planEnrollments.planId, planId),
    eq(planEnrollments.contactId, contactId),
    inArray(planEnrollments.status, [...LIVE]),
  );

/**
 * The statements that enroll `contactId` in `plan` at `at` (the first step due its delay after), guarded: the contact
 * exists and has no live enrollment in the plan (the partial unique index holds it too under any race).
 */
export function enrollStatements(
  ctx: ServiceContext,
  plan: PlanRow,
  contactId: string,
  via: EnrolledVia,
  at: string,
): { row: EnrollmentRow; statements: Statement[]; event: DomainEvent } {
  const row: EnrollmentRow = {
    id: newId(),
    organizationId: ctx.organizationId,
    planId: plan.id,
    contactId,
    status: "active",
    steps: plan.steps,
    nextStep: 0,
    nextRunAt: dueAfter(at, plan.steps[0]!),
    enrolledVia: via,
    enrolledBy: ctx.actor.userId ?? null,
    enrolledAt: at,
    pausedAt: null,
    pauseReason: null,
    endedAt: null,
    updatedAt: at,
    version: 1,
  };
  return {
    row,
    statements: [
      expectRow(ctx.db, actionPlans, and(planById(ctx, plan.id), eq(actionPlans.version, plan.version))),
      expectRow(ctx.db, contacts, and(eq(contacts.organizationId, ctx.organizationId), eq(contacts.id, contactId))),
      expectNoRow(ctx.db, planEnrollments, liveIn(ctx, plan.id, contactId)),
      ctx.db.insert(planEnrollments).values(row),
    ],
    event: enrollmentEvent(ctx, "action_plan.enrolled", row),
  };
}

const isLiveUniqueClash = (err: unknown) => /plan_enrollments_live_unique|UNIQUE constraint failed: plan_enrollments/.test(String(err));

/**
 * Enrolls a contact, or answers null when it is in the plan already (active or paused) and `onClash` is "skip";
 * otherwise 409. A race of two enrollments makes one of them lose its guard (or the unique index): re-read, 409.
 */
export async function enrollContact(
  ctx: ServiceContext,
  planId: string,
  contactId: string,
  opts: { via?: EnrolledVia; at?: string; onClash?: "conflict" | "skip" } = {},
): Promise<Enrollment | null> {
  return withRetries(async () => {
    const plan = await findPlan(ctx, planId);
    const contact = await ctx.db
      .select({ id: contacts.id })
      .from(contacts)
      .where(and(eq(contacts.organizationId, ctx.organizationId), eq(contacts.id, contactId)))
      .get();
    if (!contact)
      throw new Validation([{ field: "contactId", path: ["contactId"], code: "invalid_reference", message: "No contact with this id" }]);
    const live = await ctx.db
      .select({ id: planEnrollments.id })
      .from(planEnrollments)
      .where(liveIn(ctx, planId, contactId))
      .get();
    if (live) {
      if (opts.onClash === "skip") return null;
      throw alreadyEnrolled(contactId);
    }
    const { row, statements, event } = enrollStatements(ctx, plan, contactId, opts.via ?? "manual", opts.at ?? new Date().toISOString());
    const answer = toEnrollment(row);
    try {
      await commit(ctx, statements, [event], { answer });
    } catch (err) {
      // Another enrollment of the contact landed first: the retry reads it and answers 409.
      if (isLiveUniqueClash(err)) throw new StaleWrite();
      throw err;
    }
    return answer;
  });
}

/** GET …/enrollments: newest first, each with its next step and its history, the page and total in one round trip. */
export async function listEnrollments(ctx: ServiceContext, planId: string, q: EnrollmentListQuery) {
  await findPlan(ctx, planId);
  const after = decodeNewestFirstCursor(q.cursor, ENROLLMENT_SORT);
  const t = planEnrollments;
  const scope = and(
    eq(t.organizationId, ctx.organizationId),
    eq(t.planId, planId),
    q.status ? eq(t.status, q.status) : undefined,
    q.contactId ? eq(t.contactId, q.contactId) : undefined,
  );
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(t)
      .where(after ? and(scope, olderThan(t.enrolledAt, t.id, after)) : scope)
      .orderBy(desc(t.enrolledAt), desc(t.id))
      .limit(q.limit + 1),
    ctx.db.select({ n: count() }).from(t).where(scope),
  ]);
  const { page, pagination } = paginate(rows, q.limit, total?.n ?? 0, (r) => ({ at: r.enrolledAt, id: r.id }), ENROLLMENT_SORT);
  const history = page.length
    ? await ctx.db
        .select()
        .from(planStepRuns)
        .where(
          and(
            eq(planStepRuns.organizationId, ctx.organizationId),
            inJsonList(
              planStepRuns.enrollmentId,
              page.map((r) => r.id),
            ),
          ),
        )
        .orderBy(asc(planStepRuns.step))
    : [];
  return { data: page.map((r) => toEnrollment(r, history)), pagination };
}

async function findEnrollment(ctx: ServiceContext, planId: string, id: string): Promise<EnrollmentRow> {
  const row = await ctx.db
    .select()
    .from(planEnrollments)
    .where(and(eq(planEnrollments.organizationId, ctx.organizationId), eq(planEnrollments.planId, planId), eq(planEnrollments.id, id)))
    .get();
  if (!row) throw new NotFound("Enrollment");
  return row;
}

const enrollmentAt = (row: EnrollmentRow) => and(eq(planEnrollments.id, row.id), eq(planEnrollments.version, row.version));

async function withHistory(ctx: ServiceContext, row: EnrollmentRow): Promise<Enrollment> {
  const history = await ctx.db.select().from(planStepRuns).where(eq(planStepRuns.enrollmentId, row.id));
  return toEnrollment(row, history);
}

/** Pauses an active enrollment (`reason` "manual", or the event that paused it): no step runs until it is resumed. */
export function pauseStatements(ctx: ServiceContext, before: EnrollmentRow, reason: string, at: string) {
  const after: EnrollmentRow = {
    ...before,
    status: "paused",
    nextRunAt: null,
    pausedAt: at,
    pauseReason: reason,
    updatedAt: at,
    version: before.version + 1,
  };
  return {
    after,
    statements: [
      expectRow(ctx.db, planEnrollments, enrollmentAt(before)),
      ctx.db.update(planEnrollments).set(after).where(enrollmentAt(before)),
    ],
    event: enrollmentEvent(ctx, "action_plan.paused", after, { reason }),
  };
}

type Move = "pause" | "resume" | "stop";

/** POST …/pause | resume | stop: 409 `invalid_state` when the enrollment is not in a state the move starts from. */
export async function moveEnrollment(ctx: ServiceContext, planId: string, id: string, move: Move): Promise<Enrollment> {
  return withRetries(async () => {
    const before = await findEnrollment(ctx, planId, id);
    expectVersionMatch(ctx, before.version);
    const at = new Date().toISOString();
    const from: Record<Move, EnrollmentRow["status"][]> = { pause: ["active"], resume: ["paused"], stop: ["active", "paused"] };
    if (!from[move].includes(before.status))
      throw new InvalidState("invalid_state", `A ${before.status} enrollment cannot ${move}; it must be ${from[move].join(" or ")}`);
    if (move === "pause") {
      const { after, statements, event } = pauseStatements(ctx, before, "manual", at);
      await commit(ctx, statements, [event]);
      return versioned(await withHistory(ctx, after), after.version);
    }
    const after: EnrollmentRow =
      move === "stop"
        ? { ...before, status: "stopped", nextRunAt: null, endedAt: at, updatedAt: at, version: before.version + 1 }
        : { ...before, status: "active", nextRunAt: await resumedDue(ctx, before, at), updatedAt: at, version: before.version + 1 };
    await commit(ctx, [
      expectRow(ctx.db, planEnrollments, enrollmentAt(before)),
      ctx.db.update(planEnrollments).set(after).where(enrollmentAt(before)),
    ]);
    return versioned(await withHistory(ctx, after), after.version);
  });
}

/**
 * When a resumed enrollment's next step is due: the wait it had left when it was paused, counted from the resume (the
 * plan's clock stands still while paused). A step that was already due when it was paused runs at the next pass.
 */
async function resumedDue(ctx: ServiceContext, row: EnrollmentRow, at: string): Promise<string | null> {
  const step = row.steps[row.nextStep];
  if (!step) return null;
  const previous =
    row.nextStep === 0
      ? null
      : await ctx.db
          .select({ dueAt: planStepRuns.dueAt })
          .from(planStepRuns)
          .where(and(eq(planStepRuns.enrollmentId, row.id), eq(planStepRuns.step, row.nextStep - 1)))
          .get();
  const scheduled = Date.parse(dueAfter(previous?.dueAt ?? row.enrolledAt, step));
  const left = Math.max(0, scheduled - Date.parse(row.pausedAt ?? at));
  return new Date(Date.parse(at) + left).toISOString();
}

/* ------------------------------------------------------------------ for the consumers */

/** The organization's plans with a trigger on `event` (the few plans an organization has, filtered in SQL). */
export const plansTriggeredBy = (ctx: ServiceContext, event: StoredPlanTrigger["event"]) =>
  ctx.db
    .select()
    .from(actionPlans)
    .where(
      and(
        eq(actionPlans.organizationId, ctx.organizationId),
        sql`EXISTS (SELECT 1 FROM json_each(${actionPlans.triggers}) WHERE json_extract(value, '$.event') = ${event})`,
      ),
    );

/** The contact's active enrollments (any plan). */
export const activeEnrollmentsOf = (ctx: ServiceContext, contactId: string) =>
  ctx.db
    .select()
    .from(planEnrollments)
    .where(
      and(
        eq(planEnrollments.organizationId, ctx.organizationId),
        eq(planEnrollments.contactId, contactId),
        eq(planEnrollments.status, "active"),
      ),
    );

export { findPlan };
