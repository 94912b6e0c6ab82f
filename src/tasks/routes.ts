import { OpenAPIHono } from "@hono/zod-openapi";
import { CRM, CRM_PRECONDITION_ERROR, crmDeleted, crmError, crmSuccess, keptAnswer, Page } from "../crm/body";
import { NoQuery } from "../crm/list-query";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { ETAG_HEADER, withEtag } from "../platform/etag";
import { validationHook } from "../platform/openapi";
import { defineRoute, jsonBody } from "../platform/route";
import { IdParam, Task, TaskCreate, TaskListQuery, TaskUpdate } from "./schemas";
import { completeTask, createTask, deleteTask, getTask, listTasks, updateTask } from "./service";

const tags = ["Tasks"];
const security = [{ bearerAuth: [] }];
const NOT_FOUND = { 404: crmError("No task with this id in your organization (not_found)") };
const CONTENDED = { 409: crmError("Changed by too many requests at once (concurrent_modification); retry") };
const CONDITIONAL = "Send the task's ETag in `If-Match` to make the write conditional: 412 when the task has changed since.";
const REFERENCES =
  "`assignedTo`, `contactId`, `dealId` and `propertyId` must name a user, contact, deal and property of your organization (422 `invalid_reference`, one error per field); a deal holds at most 200 tasks.";

const list = defineRoute(CRM, {
  operationId: "listTasks",
  method: "get",
  path: "/v1/tasks",
  tags,
  security,
  summary: "List tasks, soonest due first",
  description: `Open tasks unless \`status=completed\`, in (dueAt, id) order (tasks without a due time first), keyset-paginated with the
exact total: pass \`pagination.nextCursor\` back as \`cursor\`. \`assignedTo=me\` names the caller. \`due\` is evaluated now, in the
organization's time zone (\`GET /v1/organization\` \`timeZone\`): \`overdue\` (due before now), \`today\` (due within today's
date there), \`upcoming\` (due after the end of today). A deal task due on a day (\`YYYY-MM-DD\`) is due on that date.`,
  request: { query: TaskListQuery },
  responses: { 200: { description: "A page of tasks", content: { "application/json": { schema: Page(Task) } } } },
});

const create = defineRoute(CRM, {
  operationId: "createTask",
  method: "post",
  path: "/v1/tasks",
  tags,
  security,
  summary: "Create a task",
  description: `Type \`other\`, priority MEDIUM and the caller as assignee unless given (\`assignedTo: null\`: nobody). ${REFERENCES} Emits task.created; task.due follows once, when its due time comes.`,
  request: jsonBody(TaskCreate),
  responses: { 201: crmSuccess("The task", Task, ETAG_HEADER), ...CONTENDED },
});

const read = defineRoute(CRM, {
  operationId: "getTask",
  method: "get",
  path: "/v1/tasks/{id}",
  tags,
  security,
  summary: "Read a task",
  request: { params: IdParam, query: NoQuery },
  responses: { 200: crmSuccess("The task", Task, ETAG_HEADER), ...NOT_FOUND },
});

const update = defineRoute(CRM, {
  operationId: "updateTask",
  method: "patch",
  path: "/v1/tasks/{id}",
  tags,
  security,
  summary: "Change a task",
  description: `Only the fields sent change (null clears an optional one), so concurrent changes of different fields all land. ${REFERENCES} A new \`dueAt\` is announced (task.due) again when it comes. Emits task.updated when something changed. ${CONDITIONAL}`,
  request: { params: IdParam, ...jsonBody(TaskUpdate) },
  responses: { 200: crmSuccess("The task", Task, ETAG_HEADER), ...NOT_FOUND, ...CONTENDED, ...CRM_PRECONDITION_ERROR },
});

const remove = defineRoute(CRM, {
  operationId: "deleteTask",
  method: "delete",
  path: "/v1/tasks/{id}",
  tags,
  security,
  summary: "Delete a task",
  description: `For good (tasks do not go to the trash on their own; a deleted deal takes its tasks there). Emits task.deleted with the task as it was. ${CONDITIONAL}`,
  request: { params: IdParam, query: NoQuery },
  responses: { 200: crmDeleted, ...NOT_FOUND, ...CONTENDED, ...CRM_PRECONDITION_ERROR },
});

const complete = defineRoute(CRM, {
  operationId: "completeTask",
  method: "post",
  path: "/v1/tasks/{id}/complete",
  tags,
  security,
  summary: "Complete a task",
  description: `Records \`completedBy\` (the calling user) and \`completedAt\`, and a TASK activity on the task's contact when it has one. Of
concurrent completions one lands; the others, and any later one, answer 409 \`task_already_completed\`. Emits task.completed. ${CONDITIONAL}`,
  request: { params: IdParam, query: NoQuery },
  responses: {
    200: crmSuccess("The completed task", Task, ETAG_HEADER),
    ...NOT_FOUND,
    409: crmError(
      "The task is already completed (task_already_completed), or too many concurrent changes (concurrent_modification; retry)",
    ),
    ...CRM_PRECONDITION_ERROR,
  },
});

/** Issue 46: /v1/tasks (tasks:read, tasks:write). */
export const taskRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(list, async (c) => c.json({ success: true as const, ...(await listTasks(serviceContext(c), c.req.valid("query"))) }, 200))
  .openapi(create, async (c) => {
    const { ctx, answer } = keptAnswer<Task>(c, 201);
    return c.json(answer(withEtag(c, await createTask(ctx, c.req.valid("json")))), 201);
  })
  .openapi(read, async (c) =>
    c.json({ success: true as const, data: withEtag(c, await getTask(serviceContext(c), c.req.valid("param").id)) }, 200),
  )
  .openapi(update, async (c) => {
    const { ctx, answer } = keptAnswer<Task>(c, 200);
    return c.json(answer(withEtag(c, await updateTask(ctx, c.req.valid("param").id, c.req.valid("json")))), 200);
  })
  .openapi(remove, async (c) => {
    const { id } = c.req.valid("param");
    await deleteTask(serviceContext(c), id);
    return c.json({ success: true as const, message: "Task deleted", data: { id, deleted: true as const } }, 200);
  })
  .openapi(complete, async (c) => {
    const { ctx, answer } = keptAnswer<Task>(c, 200);
    return c.json(answer(withEtag(c, await completeTask(ctx, c.req.valid("param").id))), 200);
  });
