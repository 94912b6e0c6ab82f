import type { z } from "@hono/zod-openapi";
import { and, asc, count, eq, gt, gte, isNotNull, isNull, lt, lte, or, type SQL, sql } from "drizzle-orm";
import type { Pagination } from "../crm/body";
import type { Db } from "../db/client";
import { organizations, tasks } from "../db/schema";
import { decodeCursor, encodeCursor } from "../lib/cursor";
import { Validation } from "../lib/errors";
import { type ZonedDay, zonedDay } from "../lib/zoned-day";
import type { ServiceContext } from "../service-context";
import type { DueWindow, Task, TaskListQuery } from "./schemas";
import { toTask } from "./mapping";

const SORT = "dueAt:asc";

/** The windows of GET /v1/tasks, and the agent's day for the MCP tool: overdue or due by the end of today. */
export type ListWindow = DueWindow | "through_today";

/** What a list of tasks is narrowed to, once `me` is resolved and the window placed in the organization's day. */
export interface TaskFilter {
  organizationId: string;
  completed: boolean;
  /** null: assigned to nobody. */
  assignedTo?: string | null;
  contactId?: string;
  dealId?: string;
  due?: { window: ListWindow; now: string; day: ZonedDay };
  cursor?: string;
}

const minText = (a: string, b: string) => (a < b ? a : b);
const timed = sql`length(${tasks.dueAt}) > 10`;
const dayOnly = sql`length(${tasks.dueAt}) = 10`;

/**
 * A due window as one range of due_at (so the list walks its index in order) and the row test within it. due_at holds
 * UTC timestamps and, for deal tasks due on a day, `YYYY-MM-DD`: a day counts on its own date in the organization's zone.
 */
function dueWindow({ window, now, day }: NonNullable<TaskFilter["due"]>): SQL | undefined {
  const next = new Date(Date.parse(`${day.date}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  switch (window) {
    case "overdue":
      return and(lt(tasks.dueAt, now), or(timed, lt(tasks.dueAt, day.date)));
    case "today":
      return and(
        gte(tasks.dueAt, minText(day.startIso, day.date)),
        lt(tasks.dueAt, day.endIso),
        or(and(timed, gte(tasks.dueAt, day.startIso)), eq(tasks.dueAt, day.date)),
      );
    case "through_today":
      return and(lt(tasks.dueAt, day.endIso), or(timed, lte(tasks.dueAt, day.date)));
    case "upcoming":
      return and(
        gte(tasks.dueAt, minText(day.endIso, next)),
        or(and(timed, gte(tasks.dueAt, day.endIso)), and(dayOnly, gt(tasks.dueAt, day.date))),
      );
  }
}

/** Rows after the cursor's in (dueAt, id) order; tasks without a due time come first (SQLite sorts NULL lowest). */
function afterCursor(cursor: string): SQL | undefined {
  const { values, id } = decodeCursor(cursor, SORT, 1);
  const at = values[0];
  if (typeof at !== "string")
    throw new Validation([{ field: "cursor", path: ["cursor"], code: "invalid_cursor", message: "Cursor is not one this API issued" }]);
  if (at === "") return or(and(isNull(tasks.dueAt), gt(tasks.id, id)), isNotNull(tasks.dueAt));
  // due_at >= ? bounds the index range; the OR then skips the cursor's own time up to its id.
  return and(gte(tasks.dueAt, at), or(gt(tasks.dueAt, at), gt(tasks.id, id)));
}

/**
 * The page's query and its total's, as statements (test/tasks/tasks-plans.test.ts reads their plans): in (dueAt, id)
 * order, each on the index whose columns lead with the filters (tasks_assignee_due_idx for an assignee,
 * tasks_org_contact_idx for a contact, tasks_org_due_idx for neither) over the due window's range only.
 */
export function taskListStatements(db: Db, f: TaskFilter, limit: number) {
  const scope = and(
    eq(tasks.organizationId, f.organizationId),
    f.assignedTo === null ? isNull(tasks.assignedTo) : f.assignedTo !== undefined ? eq(tasks.assignedTo, f.assignedTo) : undefined,
    f.contactId !== undefined ? eq(tasks.contactId, f.contactId) : undefined,
    f.dealId !== undefined ? eq(tasks.dealId, f.dealId) : undefined,
    // A deal holds at most 200 tasks: its own index, sorted in memory, rather than the organization's open tasks in
    // due order (which the planner, knowing no sizes, would pick to spare the sort): `+` keeps completed off indexes.
    f.dealId !== undefined ? sql`+${tasks.completed} = ${f.completed ? 1 : 0}` : eq(tasks.completed, f.completed),
    f.due ? dueWindow(f.due) : undefined,
  );
  return [
    db
      .select()
      .from(tasks)
      .where(f.cursor ? and(scope, afterCursor(f.cursor)) : scope)
      .orderBy(asc(tasks.dueAt), asc(tasks.id))
      .limit(limit + 1),
    db.select({ n: count() }).from(tasks).where(scope),
  ] as const;
}

async function timeZoneOf(ctx: ServiceContext): Promise<string> {
  const row = await ctx.db
    .select({ timeZone: organizations.timeZone })
    .from(organizations)
    .where(eq(organizations.id, ctx.organizationId))
    .get();
  return row?.timeZone ?? "UTC";
}

/**
 * GET /v1/tasks: keyset-paginated on (dueAt, id), the page and its exact total in one round trip (plus one read of the
 * organization's time zone for a due window). `due` is evaluated at `q.at` or now.
 */
export async function listTasks(
  ctx: ServiceContext,
  q: Omit<TaskListQuery, "due"> & { due?: ListWindow },
): Promise<{ data: Task[]; pagination: z.infer<typeof Pagination> }> {
  const issues = [];
  // `none`: nobody's (ids are generated, so no user is called that), as the contacts list reads it.
  let assignedTo: string | null | undefined = q.assignedTo === "none" ? null : q.assignedTo;
  if (assignedTo === "me") {
    assignedTo = ctx.actor.userId ?? undefined;
    if (!assignedTo)
      issues.push({
        field: "assignedTo",
        path: ["assignedTo"],
        code: "no_user",
        message: "`me` needs a caller who is a user (not an API key)",
      });
  }
  if (q.due === "overdue" && q.status === "completed")
    issues.push({
      field: "due",
      path: ["due"],
      code: "conflicting_filters",
      message: "Overdue tasks are open ones; leave out status=completed",
    });
  if (issues.length) throw new Validation(issues);
  const now = q.at ? new Date(q.at) : new Date();
  const filter: TaskFilter = {
    organizationId: ctx.organizationId,
    completed: q.status === "completed",
    assignedTo,
    contactId: q.contactId,
    dealId: q.dealId,
    due: q.due ? { window: q.due, now: now.toISOString(), day: zonedDay(now, await timeZoneOf(ctx)) } : undefined,
    cursor: q.cursor,
  };
  const [rows, [total]] = await ctx.db.batch(taskListStatements(ctx.db, filter, q.limit));
  const data = rows.slice(0, q.limit).map(toTask);
  const hasMore = rows.length > q.limit;
  const last = data.at(-1);
  return {
    data,
    pagination: {
      hasMore,
      nextCursor: hasMore && last ? encodeCursor({ sort: SORT, values: [last.dueAt ?? ""], id: last.id }) : null,
      total: total?.n ?? 0,
      limit: q.limit,
    },
  };
}
