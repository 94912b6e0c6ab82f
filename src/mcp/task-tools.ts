import { z } from "zod";
import { Pagination } from "../crm/body";
import { Task, TaskListQuery } from "../tasks/schemas";
import { completeTask, listTasks } from "../tasks/service";
import { defineTool, definedOnly, pageInputs, parseWith } from "./tool";

const taskId = z.string().min(1).max(100).describe("The task's id");

export const listMyTasks = defineTool({
  name: "list_my_tasks",
  route: "GET /v1/tasks",
  title: "My tasks for today",
  description:
    "The signed-in user's open tasks (calls, e-mails, texts, showings, follow-ups; on contacts, deals and properties), soonest due first: by default those overdue or due by the end of today in the organization's time zone; `due` narrows to overdue, today or upcoming. Each with its contactId, dealId and propertyId. One keyset page at a time with a total; complete one with complete_task.",
  permission: "tasks:read",
  effect: "read",
  input: z.strictObject({
    due: z
      .enum(["overdue", "today", "upcoming"])
      .optional()
      .describe("overdue: due before now; today: due today (the organization's date); upcoming: after today. Default: overdue or today"),
    ...pageInputs,
  }),
  output: z.object({ tasks: z.array(Task), pagination: Pagination }),
  async run({ due, limit, cursor }, { ctx }) {
    // Through the route's own query schema: the same bounds and cursor checks as GET /v1/tasks?assignedTo=me.
    const query = parseWith(TaskListQuery, definedOnly({ assignedTo: "me", due, limit: String(limit), cursor }));
    const page = await listTasks(ctx, { ...query, due: due ?? "through_today" });
    return { tasks: page.data, pagination: page.pagination };
  },
});

export const completeTaskTool = defineTool({
  name: "complete_task",
  route: "POST /v1/tasks/{id}/complete",
  title: "Complete a task",
  description:
    "Marks a task done: completedBy the signed-in user, completedAt now; logs a TASK activity on its contact when it has one and emits task.completed. A task already completed is refused (task_already_completed); another organization's task answers not_found. Find tasks with list_my_tasks.",
  permission: "tasks:write",
  input: z.strictObject({ taskId }),
  output: z.object({ task: Task }),
  // A change of state, nothing deleted or sent: the task and its history stay.
  effect: "write",
  // Once done, done: a repeat is refused and changes nothing.
  idempotent: true,
  async run({ taskId }, { ctx }) {
    return { task: await completeTask({ ...ctx, ifMatch: undefined }, taskId) };
  },
});

export const taskTools = [listMyTasks, completeTaskTool];
