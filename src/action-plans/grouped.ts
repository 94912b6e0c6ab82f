import { and, eq, sql } from "drizzle-orm";
import { planEnrollments, planStepRuns, type StoredPlanStep } from "../db/plans";
import { expectNoRow, expectRow, StaleWrite, type Statement } from "../db/write";
import { commit } from "../events/commit";
import type { DomainEvent } from "../events/event";
import { OrganizationMoving } from "../lib/errors";
import { loggableError } from "../lib/log";
import { type MailMessage, sendMails } from "../mail/mailer";
import { type ActivityFigures, type ContactRecord, NO_ACTIVITY, readForWrite } from "../contacts/service";
import type { ServiceContext } from "../service-context";
import type { EnrollmentRow, StepRunRow } from "./service";
import {
  activeAt,
  advanceStatements,
  agentOf,
  type ContactChange,
  contactSideEffects,
  type Finish,
  finish,
  finishStatements,
  readAgents,
  releaseOrFail,
  runOf,
  runRow,
  stepMail,
  writeStep,
} from "./steps";

/**
 * Enrollments whose steps commit in one batch, and e-mails out at once. A batch of many enrollments is all or
 * nothing, so a guard that fails for one (a racing pass, a pause, a contact changed meanwhile) sends each enrollment
 * of the batch down the one-at-a-time path, where only that one loses.
 */
const GROUP = 100;

/** The steps this file runs grouped: those that only write, and the e-mail. Others (a deal's move) go one at a time. */
export const GROUPED_STEPS = new Set<StoredPlanStep["type"]>([
  "add_tag",
  "remove_tag",
  "set_status",
  "create_task",
  "notify",
  "send_email",
]);

/** Runs an enrollment from `row` one step at a time (runner.ts); `known` is its step's claim when read (undefined: not read). */
export type RunSingly = (row: EnrollmentRow, known: StepRunRow | null | undefined) => Promise<number>;

interface Read {
  before: ContactRecord;
  figures: ActivityFigures;
}

const chunks = <T>(items: T[], size: number) =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
const stillDue = (row: EnrollmentRow | null, now: Date): row is EnrollmentRow =>
  row !== null && row.status === "active" && row.nextRunAt !== null && row.nextRunAt <= now.toISOString();

/**
 * One round's due enrollments of the context's organization, each at a first run of a step of GROUPED_STEPS (no
 * claim yet) and each of another contact, so that no two in a batch guard the same contact: their contacts (and the
 * e-mails' agents) read in one query each, the write steps committed GROUP to a batch, the e-mails claimed in one
 * statement, sent side by side and recorded GROUP to a batch. Steps due right after (PT0S) run one at a time through
 * `singly`. Answers the steps run.
 */
export async function runGrouped(ctx: ServiceContext, rows: EnrollmentRow[], now: Date, singly: RunSingly): Promise<number> {
  if (rows.length === 0) return 0;
  const mails = rows.filter((r) => r.steps[r.nextStep]!.type === "send_email");
  const writes = rows.filter((r) => r.steps[r.nextStep]!.type !== "send_email");
  const [claimed, read] = await Promise.all([
    mails.length ? claimMails(ctx, mails, now.toISOString()) : new Set<string>(),
    readForWrite(
      ctx,
      rows.map((r) => r.contactId),
    ),
  ]);
  const contacts = new Map<string, Read>(read.rows.map((c) => [c.id, { before: c, figures: read.figures.get(c.id) ?? NO_ACTIVITY }]));
  const counts = await Promise.all([
    ...chunks(writes, GROUP).map((group) => runWrites(ctx, group, contacts, now, singly)),
    runMails(
      ctx,
      mails.filter((r) => claimed.has(r.id)),
      contacts,
      now,
      singly,
    ),
  ]);
  return counts.reduce((a, b) => a + b, 0);
}

/** Write steps, GROUP at a time: claimed `done`, written and advanced in one batch. */
async function runWrites(ctx: ServiceContext, group: EnrollmentRow[], contacts: Map<string, Read>, now: Date, singly: RunSingly) {
  const at = now.toISOString();
  const statements: Statement[] = [];
  const events: DomainEvent[] = [];
  const changes: ContactChange[] = [];
  const after: EnrollmentRow[] = [];
  const alone: EnrollmentRow[] = [];
  for (const row of group) {
    const contact = contacts.get(row.contactId);
    // A contact gone: the one-at-a-time path skips the step and stops the enrollment.
    if (!contact) {
      alone.push(row);
      continue;
    }
    const step = row.steps[row.nextStep]!;
    const dueAt = row.nextRunAt!;
    const effect = writeStep(ctx, row, step, contact.before, contact.figures, dueAt, now);
    const advance = advanceStatements(ctx, row, row.nextStep, dueAt, now);
    statements.push(
      expectRow(ctx.db, planEnrollments, and(activeAt(row), eq(planEnrollments.version, row.version))),
      expectNoRow(ctx.db, planStepRuns, runOf(row.id, row.nextStep)),
      ctx.db.insert(planStepRuns).values(runRow(row, step, dueAt, at, "done", effect.outcome)),
      ...effect.statements,
      ...advance.statements,
    );
    events.push(...effect.events, ...advance.events);
    if (effect.change) changes.push(effect.change);
    after.push(advance.after);
  }
  let ran = 0;
  let committed = false;
  if (after.length) {
    try {
      await commit(ctx, [...statements, ...contactSideEffects(ctx, changes, at)], events);
      committed = true;
    } catch (err) {
      logFallback(ctx, after.length, err);
      alone.push(...group.filter((r) => contacts.has(r.contactId)));
    }
  }
  if (committed) {
    ran += after.length;
    for (const row of after) if (stillDue(row, now)) ran += await singly(row, null);
  }
  for (const row of alone) ran += await singly(row, undefined);
  return ran;
}

/**
 * The e-mail steps this pass claimed: rendered, sent GROUP at a time (each with its step's idempotency key), then
 * recorded done with their communications in one batch per group. A failed send is released for the next pass (or
 * recorded failed) on its own.
 */
async function runMails(ctx: ServiceContext, claimed: EnrollmentRow[], contacts: Map<string, Read>, now: Date, singly: RunSingly) {
  if (claimed.length === 0) return 0;
  const agents = await readAgents(
    ctx,
    claimed.map((r) => {
      const c = contacts.get(r.contactId);
      return c ? agentOf(r, c.before) : null;
    }),
  );
  const out: Mail[] = [];
  for (const row of claimed) {
    const contact = contacts.get(row.contactId);
    if (!contact) {
      await settle(ctx, row, () =>
        finish(ctx, row.id, row.nextStep, row.nextRunAt!, now, {
          state: "skipped",
          outcome: { reason: "contact_gone" },
          attempts: 1,
          stop: true,
        }),
      );
      continue;
    }
    const step = row.steps[row.nextStep] as Extract<StoredPlanStep, { type: "send_email" }>;
    const agentId = agentOf(row, contact.before);
    const { message, done } = stepMail(ctx, row, step, contact.before, agentId ? agents.get(agentId) : undefined);
    out.push({ row, done: { ...done, attempts: 1 }, contact, message });
  }
  const continued = await Promise.all(chunks(out, GROUP).map((group) => mailGroup(ctx, group, now, singly)));
  return claimed.length + continued.reduce((a, b) => a + b, 0);
}

interface Mail {
  row: EnrollmentRow;
  done: Finish;
  contact: Read;
  message: MailMessage;
}

/** One group of e-mails: sent, then recorded in one batch. Answers the steps run after them (PT0S). */
async function mailGroup(ctx: ServiceContext, group: Mail[], now: Date, singly: RunSingly) {
  const failures = await sendMails(
    ctx.env,
    ctx.db,
    group.map((m) => m.message),
  );
  const statements: Statement[] = [];
  const events: DomainEvent[] = [];
  const after: EnrollmentRow[] = [];
  const sent: Mail[] = [];
  for (const [i, mail] of group.entries()) {
    const { row, done, contact } = mail;
    const failure = failures[i];
    if (failure) {
      await settle(ctx, row, () => releaseOrFail(ctx, row, row.nextRunAt!, now, 1, failure));
      continue;
    }
    sent.push(mail);
    const f = finishStatements(ctx, row, row.nextStep, row.nextRunAt!, now, done, contact);
    statements.push(...f.statements);
    events.push(...f.events);
    if (f.after) after.push(f.after);
  }
  if (sent.length === 0) return 0;
  try {
    await commit(ctx, statements, events);
  } catch (err) {
    logFallback(ctx, sent.length, err);
    let ran = 0;
    for (const { row, done } of sent) {
      await settle(ctx, row, () => finish(ctx, row.id, row.nextStep, row.nextRunAt!, now, done));
      const moved = await ctx.db.select().from(planEnrollments).where(eq(planEnrollments.id, row.id)).get();
      if (moved && moved.nextStep !== row.nextStep && stillDue(moved, now)) ran += await singly(moved, null);
    }
    return ran;
  }
  let ran = 0;
  for (const row of after) if (stillDue(row, now)) ran += await singly(row, null);
  return ran;
}

/** One enrollment's step on its own: a failure leaves its claim, taken again after the lease (the idempotency key keeps the mail from going twice). */
async function settle(ctx: ServiceContext, row: EnrollmentRow, work: () => Promise<unknown>) {
  try {
    await work();
  } catch (err) {
    if (!(err instanceof StaleWrite || OrganizationMoving.raisedBy(err)))
      ctx.log.error("action plan step failed; the next pass retries it", { enrollmentId: row.id, error: loggableError(err) });
  }
}

const logFallback = (ctx: ServiceContext, enrollments: number, err: unknown) =>
  ctx.log.info("action plan steps batch did not commit; its enrollments run one at a time", { enrollments, error: loggableError(err) });

/**
 * Claims `running` the first run of each e-mail step, in one statement: a step whose enrollment is no longer active at
 * it, or that has a claim already (a racing pass), is left out. Answers the enrollments claimed.
 */
async function claimMails(ctx: ServiceContext, rows: EnrollmentRow[], at: string): Promise<Set<string>> {
  const list = JSON.stringify(rows.map((r) => [r.id, r.nextStep, r.steps[r.nextStep]!.type, r.nextRunAt]));
  const v = (i: number) => sql.raw(`json_extract(j.value, '$[${i}]')`);
  // Columns in table order: enrollment_id, step, organization_id, type, state, due_at, started_at, finished_at, attempts, outcome.
  // The list drives (CROSS JOIN keeps it outside) and each enrollment is found by its id: on organization_id SQLite
  // would walk every enrollment of the organization once per listed one.
  const won = await ctx.db
    .insert(planStepRuns)
    .select(
      sql`SELECT ${v(0)}, ${v(1)}, ${ctx.organizationId}, ${v(2)}, 'running', ${v(3)}, ${at}, NULL, 1, NULL
          FROM json_each(${list}) j CROSS JOIN ${planEnrollments} e ON e.id = ${v(0)}
          WHERE +e.organization_id = ${ctx.organizationId} AND e.status = 'active' AND e.next_step = ${v(1)}`,
    )
    .onConflictDoNothing()
    .returning({ enrollmentId: planStepRuns.enrollmentId });
  return new Set(won.map((w) => w.enrollmentId));
}
