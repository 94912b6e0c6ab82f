import { and, eq, sql } from "drizzle-orm";
import { contactActivities, contacts, deals, properties, tasks, users } from "../db/schema";
import { expectRow, expectVersion, expectVersionMatch, guard, type Statement, versioned, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { tasksMoveContacts } from "../crm/list-totals";
import type { DomainEvent } from "../events/event";
import { resourceEvent } from "../events/resource-event";
import { Conflict, type FieldIssue, NotFound, Validation } from "../lib/errors";
import { newId } from "../lib/ids";
import { nowIso } from "../lib/time";
import { readContactForWrite, touchContact } from "../contacts/service";
import { MAX_TASKS } from "../deals/schemas";
import { dealTaskCompleted, readDealForWrite } from "../deals/service";
import type { ServiceContext } from "../service-context";
import type { Task, TaskCreate, TaskUpdate } from "./schemas";
import { TASKS, type TaskRecord, toTask } from "./mapping";

export { type TaskRecord, toTask } from "./mapping";

export { listTasks } from "./list";
export { announceDueTasks } from "./due";
export { tasksErasable } from "./erasure";

const shown = (r: TaskRecord): Task => versioned(toTask(r), r.version);

/** What a new task is made of: a create body, already checked (its references exist in the organization). */
export type NewTask = Omit<TaskCreate, "dueAt"> & { dueAt?: string | null };

/**
 * For the domains that create tasks inside a batch of their own (action plans' create_task step, imports): the row of
 * a new task and its insert statement. The caller checks the references (`checkTaskReferences`) and stages
 * `taskCreatedEvent(ctx, task)` in the same batch. `assignedTo` omitted: the acting user.
 */
export function createTaskRow(ctx: ServiceContext, input: NewTask, at: string): { task: Task; row: TaskRecord; statements: Statement[] } {
  const row: TaskRecord = {
    id: newId(),
    organizationId: ctx.organizationId,
    title: input.title,
    type: input.type ?? "other",
    notes: input.notes ?? null,
    dueAt: input.dueAt ?? null,
    priority: input.priority ?? "MEDIUM",
    assignedTo: input.assignedTo === undefined ? (ctx.actor.userId ?? null) : input.assignedTo,
    contactId: input.contactId ?? null,
    dealId: input.dealId ?? null,
    propertyId: input.propertyId ?? null,
    completed: false,
    completedAt: null,
    completedBy: null,
    createdBy: ctx.actor.userId ?? null,
    createdAt: at,
    updatedAt: at,
    version: 1,
    dueAnnouncedAt: null,
  };
  const insert = ctx.db.insert(tasks).values(row);
  return { task: toTask(row), row, statements: row.contactId ? [insert, tasksMoveContacts(ctx.db, ctx.organizationId)] : [insert] };
}

/** task.created, for the batch that inserts the task. */
export const taskCreatedEvent = (ctx: ServiceContext, task: Task): DomainEvent => resourceEvent(ctx, "task.created", task);

type Links = Pick<TaskCreate, "assignedTo" | "contactId" | "dealId" | "propertyId">;

const REFERENCES = [
  { field: "assignedTo", table: users, what: "user" },
  { field: "contactId", table: contacts, what: "contact" },
  { field: "dealId", table: deals, what: "deal" },
  { field: "propertyId", table: properties, what: "property" },
] as const;

const inOrg = (ctx: ServiceContext, table: (typeof REFERENCES)[number]["table"], id: string) =>
  and(eq(table.id, id), eq(table.organizationId, ctx.organizationId));

/**
 * The user, contact, deal and property a body names must exist in the organization: one round trip, and a 422
 * `invalid_reference` listing each that does not. Answers the guards that keep them existing until the write.
 */
export async function checkTaskReferences(ctx: ServiceContext, links: Links): Promise<Statement[]> {
  const named = REFERENCES.flatMap((r) => {
    const id = links[r.field];
    return typeof id === "string" ? [{ ...r, id }] : [];
  });
  if (named.length === 0) return [];
  const reads = named.map((r) =>
    ctx.db
      .select({ id: r.table.id })
      .from(r.table)
      .where(inOrg(ctx, r.table, r.id))
      .limit(1),
  );
  const found = (await ctx.db.batch(reads as unknown as [Statement, ...Statement[]])) as unknown as { id: string }[][];
  const issues: FieldIssue[] = named
    .filter((_, i) => found[i]!.length === 0)
    .map((r) => ({
      field: r.field,
      path: [r.field],
      code: "invalid_reference",
      message: `No ${r.what} with this id in your organization`,
    }));
  if (issues.length) throw new Validation(issues);
  return named.filter((r) => r.field !== "assignedTo").map((r) => expectRow(ctx.db, r.table, inOrg(ctx, r.table, r.id)));
}

/** A deal holds at most MAX_TASKS tasks (its task list is answered whole): the guard of a task joining one. */
const dealRoom = (ctx: ServiceContext, dealId: string): Statement =>
  guard(
    ctx.db,
    sql`(SELECT COUNT(*) FROM ${tasks} WHERE ${and(eq(tasks.organizationId, ctx.organizationId), eq(tasks.dealId, dealId))}) < ${MAX_TASKS}`,
  );

/** POST /v1/tasks. Emits task.created. */
export async function createTask(ctx: ServiceContext, input: TaskCreate): Promise<Task> {
  // A reference deleted (or a deal filled) between the checks and the batch fails its guard: checked again, then a 422.
  return withRetries(async () => {
    const guards = await checkTaskReferences(ctx, input);
    if (input.dealId) await assertDealRoom(ctx, input.dealId);
    const { task, row, statements } = createTaskRow(ctx, input, nowIso());
    const room = input.dealId ? [dealRoom(ctx, input.dealId)] : [];
    await commit(ctx, [...guards, ...room, ...statements], [taskCreatedEvent(ctx, task)], { answer: shown(row) });
    return shown(row);
  });
}

async function assertDealRoom(ctx: ServiceContext, dealId: string): Promise<void> {
  const held = await ctx.db
    .select({ id: tasks.id })
    .from(tasks)
    .where(and(eq(tasks.organizationId, ctx.organizationId), eq(tasks.dealId, dealId)))
    .limit(1)
    .offset(MAX_TASKS - 1);
  if (held.length)
    throw new Validation([
      { field: "dealId", path: ["dealId"], code: "too_many_tasks", message: `A deal holds at most ${MAX_TASKS} tasks` },
    ]);
}

/** The task of the caller's organization (404 as for an id that exists nowhere); 412 when If-Match names another version. */
async function findTask(ctx: ServiceContext, id: string): Promise<TaskRecord> {
  const row = await ctx.db
    .select()
    .from(tasks)
    .where(and(eq(tasks.id, id), eq(tasks.organizationId, ctx.organizationId)))
    .get();
  if (!row) throw new NotFound("Task");
  return row;
}

export const getTask = async (ctx: ServiceContext, id: string): Promise<Task> => shown(await findTask(ctx, id));

/**
 * PATCH /v1/tasks/{id}: only the fields sent change; on a lost race the change is applied again to the task as it now
 * is. A new due time is announced again (task.due) when it comes. Emits task.updated when something changed.
 */
export async function updateTask(ctx: ServiceContext, id: string, input: TaskUpdate): Promise<Task> {
  return withRetries(async () => {
    const guards = await checkTaskReferences(ctx, input);
    const before = await findTask(ctx, id);
    expectVersionMatch(ctx, before.version);
    const joins = input.dealId && input.dealId !== before.dealId ? input.dealId : null;
    if (joins) await assertDealRoom(ctx, joins);
    const after: TaskRecord = { ...before };
    for (const [key, value] of Object.entries(input)) if (value !== undefined) (after as Record<string, unknown>)[key] = value;
    if (input.dueAt !== undefined && input.dueAt !== before.dueAt) after.dueAnnouncedAt = null;
    const event = resourceEvent(
      ctx,
      "task.updated",
      toTask({ ...after, updatedAt: before.updatedAt, version: before.version }),
      toTask(before),
    );
    if (!(event.data.changes as string[]).length) return shown(before);
    Object.assign(after, { updatedAt: nowIso(), version: before.version + 1 });
    const answer = shown(after);
    const object = toTask(after);
    await commit(
      ctx,
      [
        ...guards,
        ...(joins ? [dealRoom(ctx, joins)] : []),
        expectVersion(ctx.db, TASKS, ctx.organizationId, before),
        ctx.db.update(tasks).set(after).where(eq(tasks.id, id)),
        ...(before.contactId !== after.contactId ? [tasksMoveContacts(ctx.db, ctx.organizationId)] : []),
      ],
      [{ ...event, data: { ...event.data, object } }],
      { answer },
    );
    return answer;
  });
}

/** DELETE /v1/tasks/{id}: gone for good (a task is no record to restore). Emits task.deleted with the task as it was. */
export async function deleteTask(ctx: ServiceContext, id: string): Promise<void> {
  await withRetries(async () => {
    const before = await findTask(ctx, id);
    expectVersionMatch(ctx, before.version);
    await commit(
      ctx,
      [
        expectVersion(ctx.db, TASKS, ctx.organizationId, before),
        ctx.db.delete(tasks).where(eq(tasks.id, id)),
        ...(before.contactId && !before.completed ? [tasksMoveContacts(ctx.db, ctx.organizationId)] : []),
      ],
      [resourceEvent(ctx, "task.deleted", toTask(before))],
    );
  });
}

/** The contact a completed task is logged on, when it has one that is not in the trash. */
async function contactOf(ctx: ServiceContext, contactId: string | null) {
  if (!contactId) return null;
  try {
    // The If-Match of the request names the task's version, not the contact's.
    return await readContactForWrite({ ...ctx, ifMatch: undefined }, contactId);
  } catch (err) {
    if (err instanceof NotFound) return null;
    throw err;
  }
}

/**
 * POST /v1/tasks/{id}/complete: completedBy and completedAt recorded, a TASK activity on its contact (which moves the
 * contact's version, as every activity does). Guarded on the task's version: of concurrent completions one lands, the
 * others (and any later one) answer 409 task_already_completed. Emits task.completed; a deal's task is recorded on its
 * deal too, as the deal's own route records it (an activity, deal.task_completed).
 */
export async function completeTask(ctx: ServiceContext, id: string): Promise<Task> {
  return withRetries(async () => {
    const before = await findTask(ctx, id);
    expectVersionMatch(ctx, before.version);
    if (before.completed) throw new Conflict("The task is already completed", "task_already_completed");
    const [contact, deal] = await Promise.all([
      contactOf(ctx, before.contactId),
      before.dealId ? readDealForWrite({ ...ctx, ifMatch: undefined }, before.dealId) : null,
    ]);
    const now = new Date();
    const at = now.toISOString();
    const userId = ctx.actor.userId ?? null;
    const after: TaskRecord = {
      ...before,
      completed: true,
      completedAt: at,
      completedBy: userId,
      updatedAt: at,
      version: before.version + 1,
    };
    const statements: Statement[] = [
      expectVersion(ctx.db, TASKS, ctx.organizationId, before),
      ctx.db.update(tasks).set(after).where(eq(tasks.id, id)),
      ...(before.contactId ? [tasksMoveContacts(ctx.db, ctx.organizationId)] : []),
    ];
    const events = [resourceEvent(ctx, "task.completed", toTask(after), toTask(before))];
    if (deal) {
      const recorded = dealTaskCompleted(ctx, deal, after, at);
      statements.push(...recorded.statements);
      events.push(...recorded.events);
    }
    if (contact) {
      const figures = { ...contact.figures, count: contact.figures.count + 1, lastActivityAt: at };
      const touched = touchContact(ctx, contact.before, figures, null, now);
      statements.push(
        ...touched.statements,
        ctx.db.insert(contactActivities).values({
          id: newId(),
          organizationId: ctx.organizationId,
          contactId: contact.before.id,
          type: "TASK",
          description: `Task completed: ${before.title}`,
          scheduledAt: null,
          metadata: { taskId: id, taskType: before.type },
          createdBy: userId,
          createdAt: at,
        }),
      );
      events.push(...touched.events);
    }
    const answer = shown(after);
    await commit(ctx, statements, events, { answer });
    return answer;
  });
}
