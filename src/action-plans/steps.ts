import { and, desc, eq, notInArray } from "drizzle-orm";
import { deals, users } from "../db/schema";
import { planEnrollments, planStepRuns, type StoredPlanStep } from "../db/plans";
import { expectRow, type Statement, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { newEvent } from "../events/outbox";
import type { DomainEvent } from "../events/event";
import { Conflict, NotFound } from "../lib/errors";
import { idsOf } from "../lib/sql";
import { loggableError } from "../lib/log";
import { regionOf } from "../lib/phone";
import { type MailMessage, MailRateLimited, mailerFor } from "../mail/mailer";
import type { ServiceContext } from "../service-context";
import { communicationStatements } from "../communications/service";
import {
  applyInput,
  bumpCounters,
  type ContactRecord,
  changeEvents,
  facetMoves,
  facetMovesOfMany,
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

// What one step does, for the pass's two ways of running steps (runner.ts one enrollment at a time, grouped.ts a
// round's enrollments in shared batches): the same statements, guards and events either way.

/** How long a step's claim holds while its e-mail is out: a claim older than this died mid-way and is taken again. */
export const STEP_LEASE_MS = 10 * 60_000;
/** Sends of one step's e-mail before the step is recorded failed and the plan goes on. */
export const MAX_SEND_ATTEMPTS = 8;

export const runOf = (enrollmentId: string, step: number) => and(eq(planStepRuns.enrollmentId, enrollmentId), eq(planStepRuns.step, step));
export const activeAt = (row: EnrollmentRow) =>
  and(eq(planEnrollments.id, row.id), eq(planEnrollments.status, "active"), eq(planEnrollments.nextStep, row.nextStep));

export const gone = (err: unknown) => {
  if (err instanceof NotFound) return null;
  throw err;
};

export const runRow = (
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

/** A contact a step changed, read at `before` (its batch guards that version). */
export interface ContactChange {
  before: ContactRecord;
  after: ContactRecord;
}

/**
 * The tag links and counts, the list counters and the facet totals of the contacts that steps changed, for their
 * batch: one set of statements however many contacts (contacts/writes.ts `tagStatements`, facets.ts).
 */
export function contactSideEffects(ctx: ServiceContext, changes: ContactChange[], at: string): Statement[] {
  if (changes.length === 0) return [];
  const tagChanges = changes.map(({ before, after }) => ({ contactId: before.id, before: before.tags, after: after.tags }));
  return [
    ...tagStatements(ctx, tagChanges, at),
    bumpCounters(ctx, 0),
    ...(changes.length === 1 ? facetMoves(ctx, changes[0]!.before, changes[0]!.after) : facetMovesOfMany(ctx, changes)),
  ];
}

/**
 * The write of a tag, status, task or notify step, for the claim's batch. `change`: the contact it changes, whose
 * tag, counter and facet statements (`contactSideEffects`) the caller adds, once for all the steps of its batch.
 */
export function writeStep(
  ctx: ServiceContext,
  row: EnrollmentRow,
  step: StoredPlanStep,
  before: ContactRecord,
  figures: Parameters<typeof applyInput>[2],
  dueAt: string,
  now: Date,
): { statements: Statement[]; events: DomainEvent[]; outcome: object | null; change?: ContactChange } {
  const at = now.toISOString();
  const contactChange = (after: ContactRecord, outcome: object) => {
    const events = changeEvents(ctx, before, after);
    if (events.length === 0) return { statements: [], events: [], outcome: { ...outcome, changed: false } };
    return { statements: replaceContact(ctx, before, after), events, outcome: { ...outcome, changed: true }, change: { before, after } };
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

/** A failed outside step: released for the next pass at once, or recorded failed (and the plan goes on) after MAX_SEND_ATTEMPTS. */
export async function releaseOrFail(ctx: ServiceContext, row: EnrollmentRow, dueAt: string, now: Date, attempts: number, err: unknown) {
  ctx.log.warn("action plan step did not run; retried by the next pass", {
    enrollmentId: row.id,
    step: row.nextStep,
    attempts,
    error: loggableError(err),
  });
  const mine = and(runOf(row.id, row.nextStep), eq(planStepRuns.state, "running"), eq(planStepRuns.attempts, attempts));
  // A provider's "not now" (rate limited) sent nothing: released without spending one of the step's attempts.
  const deferred = err instanceof MailRateLimited;
  if (deferred || attempts < MAX_SEND_ATTEMPTS) {
    await ctx.db
      .update(planStepRuns)
      .set({
        startedAt: new Date(0).toISOString(),
        outcome: { error: String(err).slice(0, 200) },
        ...(deferred ? { attempts: attempts - 1 } : {}),
      })
      .where(mine);
    return;
  }
  await finish(ctx, row.id, row.nextStep, dueAt, now, { state: "failed", outcome: { error: String(err).slice(0, 200) }, attempts });
}

/** The agents whose names e-mails sign with, by id, in one read. */
export async function readAgents(ctx: ServiceContext, ids: (string | null)[]): Promise<Map<string, Agent>> {
  const wanted = [...new Set(ids.filter((id): id is string => id !== null))];
  if (wanted.length === 0) return new Map();
  const rows = await ctx.db
    .select({ id: users.id, name: users.name, email: users.email })
    .from(users)
    .where(and(idsOf(users, ctx.organizationId, wanted)));
  return new Map(rows.map(({ id, ...agent }) => [id, agent]));
}

export interface Agent {
  name: string | null;
  email: string;
}

/** The agent an e-mail step signs as: the contact's assignee, else who enrolled the contact. */
export const agentOf = (row: EnrollmentRow, contact: ContactRecord) => contact.assignedTo ?? row.enrolledBy;

/**
 * The e-mail of a step, rendered with the contact and agent as they are now, and how the step is recorded once it is
 * sent. The idempotency key is the step's, so a retry of a claim that died after the send mails nothing more.
 */
export function stepMail(
  ctx: ServiceContext,
  row: EnrollmentRow,
  step: Extract<StoredPlanStep, { type: "send_email" }>,
  c: ContactRecord,
  agent: Agent | undefined,
): { message: MailMessage; done: Finish } {
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
  return {
    message: {
      to: c.email,
      subject,
      text: body,
      organizationId: ctx.organizationId,
      idempotencyKey: `action-plan-step:${row.id}:${row.nextStep}`,
    },
    done: {
      state: "done",
      outcome: { to: c.email, subject },
      log: { subject, body, metadata: { actionPlanId: row.planId, enrollmentId: row.id, step: row.nextStep } },
    },
  };
}

/** The e-mail step: rendered with the contact and agent as they are now, sent once (keyed by the step), logged in the batch that records it done. */
export async function sendStepMail(
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
  const agentId = agentOf(row, contact.before);
  const agent = (await readAgents(ctx, [agentId])).get(agentId ?? "");
  const { message, done } = stepMail(ctx, row, step, contact.before, agent);
  try {
    await mailerFor(ctx.env, ctx.db).send(message);
  } catch (err) {
    await releaseOrFail(ctx, row, dueAt, now, attempts, err);
    return;
  }
  await finish(ctx, row.id, row.nextStep, dueAt, now, { ...done, attempts });
}

/** The set_stage step: the contact's latest open deal moves through the deals' own verb (a deal in that stage already: done). */
export async function moveStepDeal(
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

export interface Finish {
  state: "done" | "skipped" | "failed";
  outcome: object;
  attempts?: number;
  /** The e-mail to log as an outbound communication of the contact, in the same batch. */
  log?: { subject: string; body: string; metadata: Record<string, unknown> };
  /** Stop the enrollment (its contact is gone). */
  stop?: boolean;
}

/** The claim of step `index` as this pass holds it (`running`, at `attempts` when known). */
export const heldClaim = (enrollmentId: string, index: number, attempts: number | undefined) =>
  and(
    runOf(enrollmentId, index),
    eq(planStepRuns.state, "running"),
    attempts === undefined ? undefined : eq(planStepRuns.attempts, attempts),
  );

/**
 * The statements that record a held claim finished (its e-mail logged with `contact`, read at the version the batch
 * guards) and move the enrollment on from `row`, with their events.
 */
export function finishStatements(
  ctx: ServiceContext,
  row: EnrollmentRow,
  index: number,
  dueAt: string,
  now: Date,
  how: Finish | null,
  contact: Awaited<ReturnType<typeof readContactForWrite>> | null,
): { statements: Statement[]; events: DomainEvent[]; after: EnrollmentRow | null } {
  const at = now.toISOString();
  const statements: Statement[] = [];
  const events: DomainEvent[] = [];
  if (how) {
    const mine = heldClaim(row.id, index, how.attempts);
    statements.push(
      expectRow(ctx.db, planStepRuns, mine),
      ctx.db
        .update(planStepRuns)
        .set({ state: how.state, finishedAt: at, outcome: how.outcome as Record<string, unknown> })
        .where(mine),
    );
    if (how.log && contact) {
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
  if (how?.stop) {
    statements.push(
      expectRow(ctx.db, planEnrollments, and(eq(planEnrollments.id, row.id), eq(planEnrollments.version, row.version))),
      ctx.db
        .update(planEnrollments)
        .set({ status: "stopped", nextRunAt: null, endedAt: at, updatedAt: at, version: row.version + 1 })
        .where(eq(planEnrollments.id, row.id)),
    );
    return { statements, events, after: null };
  }
  const advance = advanceStatements(ctx, row, index, dueAt, now);
  return { statements: [...statements, ...advance.statements], events: [...events, ...advance.events], after: advance.after };
}

/**
 * Records step `index` finished (when `how` is given; the claim must still be this pass's) and moves the enrollment on,
 * read afresh: a pause or stop that landed while the step ran is kept.
 */
export async function finish(ctx: ServiceContext, enrollmentId: string, index: number, dueAt: string, now: Date, how: Finish | null) {
  await withRetries(async () => {
    const row = await ctx.db.select().from(planEnrollments).where(eq(planEnrollments.id, enrollmentId)).get();
    if (!row || row.nextStep !== index) return;
    const contact = how?.log ? await readContactForWrite(ctx, row.contactId).catch(gone) : null;
    const { statements, events } = finishStatements(ctx, row, index, dueAt, now, how, contact);
    await commit(ctx, statements, events);
  });
}

/** The enrollment after step `index` (due `dueAt`): the next step due its delay after, or completed after the last. */
export function advanceStatements(ctx: ServiceContext, row: EnrollmentRow, index: number, dueAt: string, now: Date) {
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
  // Only the columns that move: the others' indexes (and the stored steps) are left as they are.
  const { nextStep, nextRunAt, status, endedAt, updatedAt, version } = after;
  return {
    after,
    statements: [
      expectRow(ctx.db, planEnrollments, atVersion),
      ctx.db.update(planEnrollments).set({ nextStep, nextRunAt, status, endedAt, updatedAt, version }).where(atVersion),
    ],
    events:
      !next && live
        ? [newEvent(ctx, "action_plan.completed", { object: toEnrollment(after), previousAttributes: null, changes: null })]
        : [],
  };
}
