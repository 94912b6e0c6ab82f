import { and, asc, eq, gt, isNotNull, lte, or } from "drizzle-orm";
import type { Db } from "../db/client";
import { planEnrollments, planStepRuns, type StoredPlanStep } from "../db/plans";
import { expectNoRow, expectRow, StaleWrite } from "../db/write";
import { commit } from "../events/commit";
import type { Env } from "../env";
import { type Defer, withDeferred } from "../lib/deferred";
import { OrganizationMoving } from "../lib/errors";
import { loggableError } from "../lib/log";
import type { ServiceContext } from "../service-context";
import { systemContext } from "../shards/tenants";
import { inJsonList } from "../lib/sql";
import { readContactForWrite } from "../contacts/service";
import { GROUPED_STEPS, runGrouped } from "./grouped";
import type { EnrollmentRow, StepRunRow } from "./service";
import {
  activeAt,
  advanceStatements,
  contactSideEffects,
  finish,
  gone,
  moveStepDeal,
  runOf,
  runRow,
  STEP_LEASE_MS,
  sendStepMail,
  writeStep,
} from "./steps";

/** Enrollments read per round of a pass; those that run one at a time run this many side by side. */
const ROUND = 400;
const SIDE_BY_SIDE = 25;

/**
 * Cron: every active enrollment whose next step is due at `now` (index plan_enrollments_due_idx) runs that step once.
 * A step is claimed by inserting its planStepRuns row (the primary key makes a racing pass lose) in a batch that
 * checks the enrollment is still active at that step. Steps that only write (a task, a tag, a status, a `notify`
 * event) write in that batch and advance the enrollment there. A step that reaches outside (the e-mail, a deal's move
 * through the deals' verb) claims `running`, acts, then records `done` and advances in one batch; the e-mail goes with
 * an idempotency key of the step, so a claim that died after the send (taken again after STEP_LEASE_MS) sends no
 * second mail. The next step is due its delay after this one's due time, not after when it ran: a plan stays on time.
 * A round's first runs of write and e-mail steps share their reads and batches (grouped.ts); the rest run one
 * enrollment at a time. Answers the steps run.
 */
export function runDuePlanSteps(env: Env, db: Db, now: Date, { maxRounds = 100 } = {}): Promise<number> {
  return withDeferred(async (defer) => {
    let ran = 0;
    let after: { at: string; id: string } | null = null;
    let previous: Promise<number> | null = null;
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
      const byOrganization = Map.groupBy(due, (r) => r.organizationId);
      const work = Promise.all(
        [...byOrganization].map(([organizationId, rows]) => runRound(env, db, defer, organizationId, rows, claims, now)),
      ).then((counts) => counts.reduce((a, b) => a + b, 0));
      // Two rounds in flight: the next one is read and started while this one's batches are out.
      if (previous) ran += await previous;
      previous = work;
      const last = due.at(-1);
      if (!last || due.length < ROUND) break;
      after = { at: last.nextRunAt!, id: last.id };
    }
    if (previous) ran += await previous;
    return ran;
  });
}

/**
 * One organization's due enrollments of a round: the first run of a write or e-mail step grouped (one enrollment per
 * contact, so that no two in a batch guard the same contact), then the others one at a time, side by side.
 */
async function runRound(
  env: Env,
  db: Db,
  defer: Defer,
  organizationId: string,
  rows: EnrollmentRow[],
  claims: Map<string, StepRunRow>,
  now: Date,
): Promise<number> {
  const singly = (row: EnrollmentRow, known: StepRunRow | null | undefined) => runOne(env, db, defer, row, now, known);
  const grouped: EnrollmentRow[] = [];
  const alone: EnrollmentRow[] = [];
  const contacts = new Set<string>();
  for (const row of rows) {
    const step = row.steps[row.nextStep];
    if (step && GROUPED_STEPS.has(step.type) && !claims.has(`${row.id}:${row.nextStep}`) && !contacts.has(row.contactId)) {
      contacts.add(row.contactId);
      grouped.push(row);
    } else alone.push(row);
  }
  let ran = 0;
  const ctx = systemContext(env, db, organizationId, `cron:action-plans:${organizationId}`, defer);
  try {
    ran += await runGrouped(ctx, grouped, now, singly);
  } catch (err) {
    // Nothing claimed, or claims the next pass takes again after their lease.
    if (!OrganizationMoving.raisedBy(err))
      ctx.log.error("action plan steps failed; the next pass retries them", { error: loggableError(err) });
  }
  for (let i = 0; i < alone.length; i += SIDE_BY_SIDE) {
    const results = await Promise.all(
      alone.slice(i, i + SIDE_BY_SIDE).map((row) => singly(row, claims.get(`${row.id}:${row.nextStep}`) ?? null)),
    );
    ran += results.reduce((a, b) => a + b, 0);
  }
  return ran;
}

/** One enrollment's due steps, in order: a step due at once after the one before (PT0S) runs in the same pass. */
async function runOne(
  env: Env,
  db: Db,
  defer: Defer,
  first: EnrollmentRow,
  now: Date,
  claim: StepRunRow | null | undefined,
): Promise<number> {
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
      ...contactSideEffects(ctx, effect.change ? [effect.change] : [], at),
      ...advance.statements,
    ],
    [...effect.events, ...advance.events],
  );
  return advance.after;
}

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
