import { and, asc, count, eq, gt, gte, lt, or, sql } from "drizzle-orm";
import type { z } from "@hono/zod-openapi";
import type { Pagination } from "../crm/body";
import type { Db } from "../db/client";
import { deals, tasks } from "../db/schema";
import { decodeCursor, encodeCursor } from "../lib/cursor";
import { Validation } from "../lib/errors";
import type { ServiceContext } from "../service-context";
import { toTask } from "./mapping";
import type { DueTask, DueTaskQuery } from "./schemas";

const SORT = "dueDate:asc";
const DAY_MS = 86_400_000;

/**
 * The first UTC day after `withinDays` days from `now`'s, as YYYY-MM-DD. Due dates are a day (YYYY-MM-DD) or a UTC
 * timestamp (…T…Z): both sort as text before that day exactly when they fall on or before the last day asked for.
 */
export const dueBefore = (withinDays: number, now: Date): string =>
  new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) + (withinDays + 1) * DAY_MS).toISOString().slice(0, 10);

function afterCursor(cursor: string) {
  const { values, id } = decodeCursor(cursor, SORT, 1);
  const at = values[0];
  if (typeof at !== "string")
    throw new Validation([{ field: "cursor", path: ["cursor"], code: "invalid_cursor", message: "Cursor is not one this API issued" }]);
  // due_date >= ? bounds the index range; the OR then skips the cursor's own day up to its id.
  return and(gte(tasks.dueAt, at), or(gt(tasks.dueAt, at), gt(tasks.id, id)));
}

/**
 * The page's query and its total's, as statements (the plan test reads them): the assignee's open tasks due before
 * `before`, in (dueDate, id) order, each with its deal's title. Both walk deal_tasks_assignee_due_idx over that range
 * only; the join reads each task's deal by its key. A deal in the trash took its tasks with it, so none is left over.
 */
export function dueTaskStatements(db: Db, organizationId: string, assignedTo: string, q: DueTaskQuery, before: string) {
  const open = and(
    eq(tasks.organizationId, organizationId),
    eq(tasks.assignedTo, assignedTo),
    eq(tasks.completed, false),
    lt(tasks.dueAt, before),
  );
  return [
    db
      // Aliased: D1's batch answers rows as objects, where a second `title` column would overwrite the task's.
      .select({ task: tasks, dealTitle: sql<string>`${deals.title}`.as("deal_title") })
      .from(tasks)
      .innerJoin(deals, and(eq(deals.id, tasks.dealId), eq(deals.organizationId, organizationId)))
      .where(q.cursor ? and(open, afterCursor(q.cursor)) : open)
      .orderBy(asc(tasks.dueAt), asc(tasks.id))
      .limit(q.limit + 1),
    db.select({ n: count() }).from(tasks).where(open),
  ] as const;
}

/**
 * The open deal tasks assigned to `assignedTo` that fall due by the end of the `withinDays`-th day from today (UTC),
 * overdue ones included, soonest first; keyset-paginated on (dueDate, id), the page and the total in one round trip.
 * Tasks without a due date are never due, so never listed.
 */
export async function listDueTasks(
  ctx: ServiceContext,
  assignedTo: string,
  q: DueTaskQuery,
  now = new Date(),
): Promise<{ data: DueTask[]; pagination: z.infer<typeof Pagination> }> {
  const [rows, [total]] = await ctx.db.batch(dueTaskStatements(ctx.db, ctx.organizationId, assignedTo, q, dueBefore(q.withinDays, now)));
  const data = rows.slice(0, q.limit).map(({ task, dealTitle }) => ({ ...toTask(task), dealId: task.dealId!, dealTitle }));
  const hasMore = rows.length > q.limit;
  const last = data.at(-1);
  return {
    data,
    pagination: {
      hasMore,
      nextCursor: hasMore && last ? encodeCursor({ sort: SORT, values: [last.dueDate!], id: last.id }) : null,
      total: total?.n ?? 0,
      limit: q.limit,
    },
  };
}
