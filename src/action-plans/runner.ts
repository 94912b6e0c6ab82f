import { and, asc, desc, eq, gt, isNotNull, lte, notInArray, or } from "drizzle-orm";
import type { Db } from "../db/client";
import { deals, users } from "../db/schema";
import { planEnrollments, planStepRuns, type StoredPlanStep } from "../db/plans";
import { expectNoRow, expectRow, StaleWrite, type Statement, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { newEvent } from "../events/outbox";
import type { DomainEvent } from "../events/event";
import type { Env } from "../env";
import { type Defer, withDeferred } from "../lib/deferred";
import { Conflict, NotFound, OrganizationMoving } from "../lib/errors";
import { loggableError } from "../lib/log";
import { regionOf } from "../lib/phone";
import { mailerFor } from "../mail/mailer";
import type { ServiceContext } from "../service-context";
import { systemContext } from "../shards/tenants";
import { inJsonList } from "../lib/sql";
import { communicationStatements } from "../communications/service";
import {
  applyInput,
  bumpCounters,
  type ContactRecord,
  changeEvents,
  facetMoves,
  readContactForWrite,
  replaceContact,
  tagStatements,
  uniqueTags,
} from "../contacts/service";
import { moveDeal } from "../deals/service";
import { createTaskRow, taskCreatedEvent } from "../tasks/service";
import type { TaskType } from "../db/agenda";
import { renderMergeFields } from "./schemas";
import { dueAfter, type EnrollmentRow, type StepRunRow, toEnrollment } from "./service";

/** How long a step's claim holds while its e-mail is out: a claim older than this died mid-way and is taken again. */
export const STEP_LEASE_MS = 10 * 60_000;
/** Sends of one step's e-mail before the step is recorded failed and the plan goes on. */
export const MAX_SEND_ATTEMPTS = 8;
/** Enrollments read per round of a pass, and run side by side. */
const ROUND = 200;
const SIDE_BY_SIDE = 25;

/**
 * Cron: every active enrollment whose next step is due at `now` (index plan_enrollments_due_idx) runs that step once.
 * A step is claimed by inserting its planStepRuns row (the primary key makes a racing pass lose) in a batch that
 * checks the enrollment is still active at that step. Steps that only write (a task, a tag, a status, a `notify`
 * event) write in that batch and advance the enrollment there. A step that reaches outside (the e-mail, a deal's move
 * through the deals' verb) claims `running`, acts, then records `done` and advances in one batch; the e-mail goes with
 * an idempotency key of the step, so a claim that died after the send (taken again after STEP_LEASE_MS) sends no
 * second mail. The next step is due its delay after this one's due time, not after when it ran: a plan stays on time.
 * Answers the steps run.
 */
export function runDuePlanSteps(env: Env, db: Db, now: Date, { maxRounds = 100 } = {}): Promise<number> {
  return withDeferred(async (defer) => {
    let ran = 0;
    let after: { at: string; id: string } | null = null;
    for (let round = 0; round < maxRounds; round++) {
      // Keyset on (nextRunAt, id): a pass reads each due enrollment once, however its steps went.
      const due: EnrollmentRow[] = await db
        .select()
        .from(planEnrollments)
        .where(
          and(
            eq(planEnrollments.status, "active"),
            isNotNull(planEnrollments.nextRunAt),
            lte(planEnrollments.nextRunAt, now.toISOString()),
            after
              ? or(gt(planEnrollments.nextRunAt, after.at), and(eq(planEnrollments.nextRunAt, after.at), gt(planEnrollments.id, after.id)))
              : undefined,
          ),
        )
        .orderBy(asc(planEnrollments.nextRunAt), asc(planEnrollments.id))
        .limit(ROUND);
      // The round's claims already made (a step out, or a stale one to take again), in one read rather than one per enrollment.
      const claims = new Map<string, StepRunRow>();
      if (due.length) {
        const rows = await db
          .select()
          .from(planStepRuns)
          .where(
            inJsonList(
              planStepRuns.enrollmentId,
              due.map((r) => r.id),
            ),
          );
        for (const r of rows) claims.set(`${r.enrollmentId}:${r.step}`, r);
      }
      for (let i = 0; i < due.length; i += SIDE_BY_SIDE) {
        const results = await Promise.all(
          due.slice(i, i + SIDE_BY_SIDE).map((row) => runOne(env, db, defer, row, now, claims.get(`${row.id}:${row.nextStep}`) ?? null)),
        );
        ran += results.reduce((a, b) => a + b, 0);
      }
      const last = due.at(-1);
      if (!last || due.length < ROUND) break;
      after = { at: last.nextRunAt!, id: last.id };
    }
    return ran;
  });
}

/** One enrollment's due steps, in order: a step due at once after the one before (PT0S) runs in the same pass. */
async function runOne(env: Env, db: Db, defer: Defer, first: EnrollmentRow, now: Date, claim: StepRunRow | null): Promise<number> {
  const ctx = systemContext(env, db, first.organizationId, `cron:action-plans:${first.id}`, defer);
  let row: EnrollmentRow | undefined = first;
  let known: StepRunRow | null | undefined = claim;
  let ran = 0;
  try {
    while (row && row.status === "active" && row.nextRunAt !== null && row.nextRunAt <= now.toISOString()) {
      const index: number = row.nextStep;
      const outcome = await runStep(ctx, row, now, known);
      if (!outcome) break;
      ran++;
      known = null; // a step after this one has no claim yet
      // A write step answers the enrollment as it left it; after an e-mail or a deal's move it is read again.
      row = outcome === true ? await db.select().from(planEnrollments).where(eq(planEnrollments.id, row.id)).get() : outcome;
      if (row?.nextStep === index) break; // the step is out (an e-mail released for a retry): the next pass
    }
  } catch (err) {
    // Lost to another pass, or the enrollment moved meanwhile: the next pass reads it again.
    if (err instanceof StaleWrite || OrganizationMoving.raisedBy(err)) return ran;
    ctx.log.error("action plan step failed; the next pass retries it", { enrollmentId: first.id, error: loggableError(err) });
  }
  return ran;
}

const runOf = (enrollmentId: string, step: number) => and(eq(planStepRuns.enrollmentId, enrollmentId), eq(planStepRuns.step, step));
const activeAt = (row: EnrollmentRow) =>
  and(eq(planEnrollments.id, row.id), eq(planEnrollments.status, "active"), eq(planEnrollments.nextStep, row.nextStep));

/**
 * Runs the enrollment's next step: answers the enrollment after it (a write step), true (a step that went out), or
 * false (nothing ran). `known`: the step's claim as the round read it (null: none; undefined: not read).
 */
async function runStep(ctx: ServiceContext, row: EnrollmentRow, now: Date, known?: StepRunRow | null): Promise<EnrollmentRow | boolean> {
  const index = row.nextStep;
  const step = row.steps[index];
  const dueAt = row.nextRunAt!;
  const at = now.toISOString();
  if (!step) {
    await finish(ctx, row.id, index, dueAt, now, { state: "skipped", outcome: { reason: "no_such_step" } });
    return false;
  }
  const existing = known === undefined ? await ctx.db.select().from(planStepRuns).where(runOf(row.id, index)).get() : (known ?? undefined);
  if (existing && existing.state !== "running") {
    // Recorded but not advanced (cannot happen through this file: both go in one batch); advance it now.
    await finish(ctx, row.id, index, existing.dueAt, now, null);
    return false;
  }
  if (existing && Date.parse(existing.startedAt) > now.getTime() - STEP_LEASE_MS) return false; // another pass has it
  if (step.type === "send_email" || step.type === "set_stage") {
    const attempts = (existing?.attempts ?? 0) + 1;
    await claimRunning(ctx, row, step, dueAt, at, existing);
    if (step.type === "send_email") await sendStepMail(ctx, row, step, dueAt, now, attempts);
    else await moveStepDeal(ctx, row, step, dueAt, now, attempts);
    return true;
  }
  // A step that only writes: claim, write and advance in one batch.
  if (existing) return false; // a write step never stays `running`
  const contact = await readContactForWrite(ctx, row.contactId).catch(gone);
  if (!contact) return stopForGoneContact(ctx, row, step, dueAt, now);
  const effect = writeStep(ctx, row, step, contact.before, contact.figures, dueAt, now);
  const advance = advanceStatements(ctx, row, index, dueAt, now);
  await commit(
    ctx,
    [
      expectRow(ctx.db, planEnrollments, and(activeAt(row), eq(planEnrollments.version, row.version))),
      expectNoRow(ctx.db, planStepRuns, runOf(row.id, index)),
      ctx.db.insert(planStepRuns).values(runRow(row, step, dueAt, at, "done", effect.outcome)),
      ...effect.statements,
      ...advance.statements,
    ],
    [...effect.events, ...advance.events],
  );
  return advance.after;
}

const gone = (err: unknown) => {
  if (err instanceof NotFound) return null;
  throw err;
};

const runRow = (
  row: EnrollmentRow,
  step: StoredPlanStep,
  dueAt: string,
  at: string,
  state: StepRunRow["state"],
  outcome: object | null,
) => ({
  enrollmentId: row.id,
  step: row.nextStep,
  organizationId: row.organizationId,
  type: step.type,
  state,
  dueAt,
  startedAt: at,
  finishedAt: state === "running" ? null : at,
  attempts: 1,
  outcome: outcome as Record<string, unknown> | null,
});

/** The contact is gone (deleted or erased): the step is skipped and the enrollment stopped, in one batch. */
async function stopForGoneContact(ctx: ServiceContext, row: EnrollmentRow, step: StoredPlanStep, dueAt: string, now: Date) {
  const at = now.toISOString();
  await commit(ctx, [
    expectRow(ctx.db, planEnrollments, and(activeAt(row), eq(planEnrollments.version, row.version))),
    expectNoRow(ctx.db, planStepRuns, runOf(row.id, row.nextStep)),
    ctx.db.insert(planStepRuns).values(runRow(row, step, dueAt, at, "skipped", { reason: "contact_gone" })),
    ctx.db
      .update(planEnrollments)
      .set({ status: "stopped", nextRunAt: null, endedAt: at, updatedAt: at, version: row.version + 1 })
      .where(eq(planEnrollments.id, row.id)),
  ]);
  return false;
}

/** The write of a tag, status, task or notify step, for the claim's batch. */
function writeStep(
  ctx: ServiceContext,
  row: EnrollmentRow,
  step: StoredPlanStep,
  before: ContactRecord,
  figures: Parameters<typeof applyInput>[2],
  dueAt: string,
  now: Date,
): { statements: Statement[]; events: DomainEvent[]; outcome: object | null } {
  const at = now.toISOString();
  const contactChange = (after: ContactRecord, outcome: object) => {
    const events = changeEvents(ctx, before, after);
    if (events.length === 0) return { statements: [], events: [], outcome: { ...outcome, changed: false } };
    return {
      statements: [
        ...replaceContact(ctx, before, after),
        ...tagStatements(ctx, [{ contactId: before.id, before: before.tags, after: after.tags }], at),
        bumpCounters(ctx, 0),
        ...facetMoves(ctx, before, after),
      ],
      events,
      outcome: { ...outcome, changed: true },
    };
  };
  switch (step.type) {
    case "add_tag":
    case "remove_tag": {
      const tags = step.type === "add_tag" ? uniqueTags([...before.tags, step.tag]) : before.tags.filter((t) => t !== step.tag);
      return contactChange({ ...before, tags, updatedAt: at, version: before.version + 1 }, { tag: step.tag });
    }
    case "set_status": {
      const after = {
        ...applyInput(before, { status: step.status } as never, figures, now, regionOf(ctx)),
        updatedAt: at,
        version: before.version + 1,
      };
      return contactChange(after, { status: step.status });
    }
    case "create_task": {
      // The task is the agent's: the contact's assignee, else who enrolled the contact.
      const { task, statements } = createTaskRow(
        ctx,
        {
          title: step.task.title,
          type: step.task.type as TaskType,
          dueAt,
          assignedTo: before.assignedTo ?? row.enrolledBy,
          contactId: before.id,
        },
        at,
      );
      return { statements, events: [taskCreatedEvent(ctx, task)], outcome: { taskId: task.id } };
    }
    case "notify":
      return {
        statements: [],
        events: [
          newEvent(ctx, "action_plan.step_due", {
            object: toEnrollment(row),
            previousAttributes: null,
            changes: null,
            step: { index: row.nextStep, type: step.type, dueAt },
          }),
        ],
        outcome: {},
      };
    default:
      throw new Error(`step type ${step.type} is not a write step`);
  }
}

/** The `running` claim of an outside step: a first claim, or a stale one taken again (its attempts counted). */
async function claimRunning(
  ctx: ServiceContext,
  row: EnrollmentRow,
  step: StoredPlanStep,
  dueAt: string,
  at: string,
  existing: StepRunRow | undefined,
) {
  const guard = expectRow(ctx.db, planEnrollments, activeAt(row));
  if (!existing) {
    await commit(ctx, [
      guard,
      expectNoRow(ctx.db, planStepRuns, runOf(row.id, row.nextStep)),
      ctx.db.insert(planStepRuns).values(runRow(row, step, dueAt, at, "running", null)),
    ]);
    return;
  }
  const mine = and(runOf(row.id, row.nextStep), eq(planStepRuns.state, "running"), eq(planStepRuns.attempts, existing.attempts));
  await commit(ctx, [
    guard,
    expectRow(ctx.db, planStepRuns, mine),
    ctx.db
      .update(planStepRuns)
      .set({ startedAt: at, attempts: existing.attempts + 1 })
      .where(mine),
  ]);
}

/** A failed outside step: released for the next pass at once, or recorded failed (and the plan goes on) after MAX_SEND_ATTEMPTS. */
async function releaseOrFail(ctx: ServiceContext, row: EnrollmentRow, dueAt: string, now: Date, attempts: number, err: unknown) {
  ctx.log.warn("action plan step did not run; retried by the next pass", {
    enrollmentId: row.id,
    step: row.nextStep,
    attempts,
    error: loggableError(err),
  });
  const mine = and(runOf(row.id, row.nextStep), eq(planStepRuns.state, "running"), eq(planStepRuns.attempts, attempts));
  if (attempts < MAX_SEND_ATTEMPTS) {
    await ctx.db
      .update(planStepRuns)
      .set({ startedAt: new Date(0).toISOString(), outcome: { error: String(err).slice(0, 200) } })
      .where(mine);
    return;
  }
  await finish(ctx, row.id, row.nextStep, dueAt, now, { state: "failed", outcome: { error: String(err).slice(0, 200) }, attempts });
}

/** The e-mail step: rendered with the contact and agent as they are now, sent once (keyed by the step), logged in the batch that records it done. */
async function sendStepMail(
  ctx: ServiceContext,
  row: EnrollmentRow,
  step: Extract<StoredPlanStep, { type: "send_email" }>,
  dueAt: string,
  now: Date,
  attempts: number,
) {
  const contact = await readContactForWrite(ctx, row.contactId).catch(gone);
  if (!contact) {
    await finish(ctx, row.id, row.nextStep, dueAt, now, { state: "skipped", outcome: { reason: "contact_gone" }, attempts, stop: true });
    return;
  }
  const c = contact.before;
  const agentId = c.assignedTo ?? row.enrolledBy;
  const agent = agentId
    ? await ctx.db
        .select({ name: users.name, email: users.email })
        .from(users)
        .where(and(eq(users.organizationId, ctx.organizationId), eq(users.id, agentId)))
        .get()
    : undefined;
  const values = {
    "contact.firstName": c.firstName,
    "contact.lastName": c.lastName,
    "contact.email": c.email,
    // A user without a name signs with their address rather than with nothing.
    "agent.name": agent?.name ?? agent?.email ?? null,
    "agent.email": agent?.email ?? null,
  };
  const subject = renderMergeFields(step.email.subject, values);
  const body = renderMergeFields(step.email.body, values);
  try {
    await mailerFor(ctx.env, ctx.db).send({
      to: c.email,
      subject,
      text: body,
      organizationId: ctx.organizationId,
      idempotencyKey: `action-plan-step:${row.id}:${row.nextStep}`,
    });
  } catch (err) {
    await releaseOrFail(ctx, row, dueAt, now, attempts, err);
    return;
  }
  await finish(ctx, row.id, row.nextStep, dueAt, now, {
    state: "done",
    outcome: { to: c.email, subject },
    attempts,
    log: { subject, body, metadata: { actionPlanId: row.planId, enrollmentId: row.id, step: row.nextStep } },
  });
}

/** The set_stage step: the contact's latest open deal moves through the deals' own verb (a deal in that stage already: done). */
async function moveStepDeal(
  ctx: ServiceContext,
  row: EnrollmentRow,
  step: Extract<StoredPlanStep, { type: "set_stage" }>,
  dueAt: string,
  now: Date,
  attempts: number,
) {
  const deal = await ctx.db
    .select({ id: deals.id })
    .from(deals)
    .where(
      and(eq(deals.organizationId, ctx.organizationId), eq(deals.contactId, row.contactId), notInArray(deals.stage, ["CLOSED", "LOST"])),
    )
    .orderBy(desc(deals.createdAt), desc(deals.id))
    .get();
  if (!deal) {
    await finish(ctx, row.id, row.nextStep, dueAt, now, { state: "skipped", outcome: { reason: "no_open_deal" }, attempts });
    return;
  }
  try {
    await moveDeal(ctx, deal.id, { stage: step.stage as never, reason: "Action plan step" });
  } catch (err) {
    // Already in the stage: a retry of a move that landed, or nothing to do.
    if (!(err instanceof Conflict && err.code === "already_in_stage")) {
      await releaseOrFail(ctx, row, dueAt, now, attempts, err);
      return;
    }
  }
  await finish(ctx, row.id, row.nextStep, dueAt, now, { state: "done", outcome: { dealId: deal.id, stage: step.stage }, attempts });
}

interface Finish {
  state: "done" | "skipped" | "failed";
  outcome: object;
  attempts?: number;
  /** The e-mail to log as an outbound communication of the contact, in the same batch. */
  log?: { subject: string; body: string; metadata: Record<string, unknown> };
  /** Stop the enrollment (its contact is gone). */
  stop?: boolean;
}

/**
 * Records step `index` finished (when `how` is given; the claim must still be this pass's) and moves the enrollment on,
 * read afresh: a pause or stop that landed while the step ran is kept.
 */
async function finish(ctx: ServiceContext, enrollmentId: string, index: number, dueAt: string, now: Date, how: Finish | null) {
  const at = now.toISOString();
  await withRetries(async () => {
    const row = await ctx.db.select().from(planEnrollments).where(eq(planEnrollments.id, enrollmentId)).get();
    if (!row || row.nextStep !== index) return;
    const statements: Statement[] = [];
    const events: DomainEvent[] = [];
    if (how) {
      const mine = and(
        runOf(enrollmentId, index),
        eq(planStepRuns.state, "running"),
        how.attempts === undefined ? undefined : eq(planStepRuns.attempts, how.attempts),
      );
      statements.push(
        expectRow(ctx.db, planStepRuns, mine),
        ctx.db
          .update(planStepRuns)
          .set({ state: how.state, finishedAt: at, outcome: how.outcome as Record<string, unknown> })
          .where(mine),
      );
      if (how.log) {
        const contact = await readContactForWrite(ctx, row.contactId).catch(gone);
        if (contact) {
          const logged = communicationStatements(
            ctx,
            contact.before,
            contact.figures,
            { type: "email", direction: "outbound", subject: how.log.subject, body: how.log.body, metadata: how.log.metadata },
            now,
          );
          statements.push(...logged.statements);
          events.push(...logged.events);
        }
      }
    }
    if (how?.stop) {
      statements.push(
        expectRow(ctx.db, planEnrollments, and(eq(planEnrollments.id, row.id), eq(planEnrollments.version, row.version))),
        ctx.db
          .update(planEnrollments)
          .set({ status: "stopped", nextRunAt: null, endedAt: at, updatedAt: at, version: row.version + 1 })
          .where(eq(planEnrollments.id, row.id)),
      );
    } else {
      const advance = advanceStatements(ctx, row, index, dueAt, now);
      statements.push(...advance.statements);
      events.push(...advance.events);
    }
    await commit(ctx, statements, events);
  });
}

/** The enrollment after step `index` (due `dueAt`): the next step due its delay after, or completed after the last. */
function advanceStatements(ctx: ServiceContext, row: EnrollmentRow, index: number, dueAt: string, now: Date) {
  const at = now.toISOString();
  const next = row.steps[index + 1];
  const live = row.status === "active" || row.status === "paused";
  const after: EnrollmentRow = next
    ? {
        ...row,
        nextStep: index + 1,
        nextRunAt: row.status === "active" ? dueAfter(dueAt, next) : null,
        updatedAt: at,
        version: row.version + 1,
      }
    : {
        ...row,
        nextStep: index + 1,
        status: live ? "completed" : row.status,
        nextRunAt: null,
        endedAt: live ? at : row.endedAt,
        updatedAt: at,
        version: row.version + 1,
      };
  const atVersion = and(eq(planEnrollments.id, row.id), eq(planEnrollments.version, row.version));
  return {
    after,
    statements: [expectRow(ctx.db, planEnrollments, atVersion), ctx.db.update(planEnrollments).set(after).where(atVersion)],
    events:
      !next && live
        ? [newEvent(ctx, "action_plan.completed", { object: toEnrollment(after), previousAttributes: null, changes: null })]
        : [],
  };
}
