import { and, asc, count, desc, eq, sql } from "drizzle-orm";
import { decodeNewestFirstCursor, olderThan, paginate } from "../crm/pagination";
import { dealActivities, tasks, users } from "../db/schema";
import { withRetries } from "../db/write";
import { commit } from "../events/commit";
import { tasksMoveContacts } from "../crm/list-totals";
import { newEvent } from "../events/outbox";
import { Conflict, NotFound, Validation } from "../lib/errors";
import { newId } from "../lib/ids";
import type { ServiceContext } from "../service-context";
import { type TaskRecord, toActivity, toDeal, toTask } from "./mapping";
import { type DealActivity, type DealTask, type DealTaskCreate, MAX_TASKS } from "./schemas";
import { dealTaskCompleted, findDeal, readDealForWrite } from "./service";
import { activityRow, touchDeal } from "./writes";

export { MAX_TASKS };

const tasksOf = (ctx: ServiceContext, dealId: string) => and(eq(tasks.organizationId, ctx.organizationId), eq(tasks.dealId, dealId));

/** GET /v1/deals/{id}/tasks: oldest first. */
export async function listTasks(ctx: ServiceContext, dealId: string): Promise<DealTask[]> {
  await findDeal(ctx, dealId);
  const rows = await ctx.db.select().from(tasks).where(tasksOf(ctx, dealId)).orderBy(asc(tasks.createdAt), asc(tasks.id)).all();
  return rows.map(toTask);
}

/**
 * POST /v1/deals/{id}/tasks. The task, its activity and the deal's lastActivityAt in one batch (writes.ts touchDeal):
 * concurrent tasks all land at once, none under a deal deleted meanwhile, never more than MAX_TASKS. Emits
 * deal.task_created.
 */
export async function createTask(ctx: ServiceContext, dealId: string, input: DealTaskCreate): Promise<DealTask> {
  if (input.assignedTo) {
    const user = await ctx.db
      .select({ id: users.id })
      .from(users)
      .where(and(eq(users.organizationId, ctx.organizationId), eq(users.id, input.assignedTo)))
      .get();
    if (!user)
      throw new Validation([
        { field: "assignedTo", path: ["assignedTo"], code: "invalid_reference", message: "No user with this id in your organization" },
      ]);
  }
  return withRetries(async () => {
    const before = await readDealForWrite(ctx, dealId);
    const [held] = await ctx.db.select({ n: count() }).from(tasks).where(tasksOf(ctx, dealId));
    if ((held?.n ?? 0) >= MAX_TASKS)
      throw new Validation([{ field: "", path: [], code: "too_many_tasks", message: `A deal holds at most ${MAX_TASKS} tasks` }]);
    const at = new Date().toISOString();
    const row: TaskRecord = {
      id: newId(),
      organizationId: ctx.organizationId,
      dealId,
      title: input.title,
      type: "other",
      notes: input.description ?? null,
      dueAt: input.dueDate ?? null,
      priority: input.priority ?? "MEDIUM",
      assignedTo: input.assignedTo ?? null,
      contactId: null,
      propertyId: null,
      completed: false,
      completedAt: null,
      completedBy: null,
      createdBy: ctx.actor.userId ?? null,
      createdAt: at,
      updatedAt: at,
      version: 1,
      dueAnnouncedAt: null,
    };
    const after = { ...before, lastActivityAt: at, version: before.version + 1 };
    const task = toTask(row);
    const room = sql`(SELECT COUNT(*) FROM ${tasks} WHERE ${tasksOf(ctx, dealId)}) < ${MAX_TASKS}`;
    await commit(
      ctx,
      [
        ...touchDeal(ctx, dealId, at, [room]),
        ctx.db.insert(tasks).values(row),
        ctx.db
          .insert(dealActivities)
          .values(activityRow(ctx, dealId, "TASK_CREATED", `Task created: ${row.title}`, { taskId: row.id }, at)),
      ],
      [newEvent(ctx, "deal.task_created", { object: toDeal(after), task, previousAttributes: null, changes: null })],
    );
    return task;
  });
}

/**
 * POST /v1/deals/{id}/tasks/{taskId}/complete: of concurrent completions one lands (the batch requires the task still
 * open); the others, and any later one, answer 409 task_already_completed. Emits deal.task_completed.
 */
export async function completeTask(ctx: ServiceContext, dealId: string, taskId: string): Promise<DealTask> {
  return withRetries(async () => {
    const before = await readDealForWrite(ctx, dealId);
    const row = await ctx.db
      .select()
      .from(tasks)
      .where(and(tasksOf(ctx, dealId), eq(tasks.id, taskId)))
      .get();
    if (!row) throw new NotFound("Task");
    if (row.completed) throw new Conflict("The task is already completed", "task_already_completed");
    const at = new Date().toISOString();
    const done = {
      ...row,
      completed: true,
      completedAt: at,
      completedBy: ctx.actor.userId ?? null,
      updatedAt: at,
      version: row.version + 1,
    };
    const task = toTask(done);
    const open = sql`EXISTS (SELECT 1 FROM ${tasks} WHERE ${and(tasksOf(ctx, dealId), eq(tasks.id, taskId), eq(tasks.completed, false))})`;
    const recorded = dealTaskCompleted(ctx, before, done, at, [open]);
    await commit(
      ctx,
      [
        ...recorded.statements,
        ctx.db
          .update(tasks)
          .set({ completed: true, completedAt: at, completedBy: done.completedBy, updatedAt: at, version: done.version })
          .where(and(tasksOf(ctx, dealId), eq(tasks.id, taskId))),
        ...(row.contactId ? [tasksMoveContacts(ctx.db, ctx.organizationId)] : []),
      ],
      recorded.events,
    );
    return task;
  });
}

/** GET /v1/deals/{id}/activities: newest first, keyset-paginated, the page and the total in one round trip. */
export async function listActivities(
  ctx: ServiceContext,
  dealId: string,
  q: { limit: number; cursor?: string },
): Promise<{ data: DealActivity[]; pagination: ReturnType<typeof paginate>["pagination"] }> {
  const after = decodeNewestFirstCursor(q.cursor);
  await findDeal(ctx, dealId);
  const scope = and(eq(dealActivities.organizationId, ctx.organizationId), eq(dealActivities.dealId, dealId));
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(dealActivities)
      .where(after ? and(scope, olderThan(dealActivities.createdAt, dealActivities.id, after)) : scope)
      .orderBy(desc(dealActivities.createdAt), desc(dealActivities.id))
      .limit(q.limit + 1),
    ctx.db.select({ n: count() }).from(dealActivities).where(scope),
  ]);
  const { page, pagination } = paginate(rows, q.limit, total?.n ?? 0, (r) => ({ at: r.createdAt, id: r.id }));
  return { data: page.map(toActivity), pagination };
}
