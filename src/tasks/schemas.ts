import { z } from "@hono/zod-openapi";
import { listQuery, timestampParam } from "../crm/list-query";
import { TASK_PRIORITIES } from "../deals/schemas";
import { freeText, oneLineText, utcInstant } from "../lib/validation";

export const TASK_TYPES = ["call", "email", "text", "showing", "follow_up", "other"] as const;
export const TASK_STATUSES = ["open", "completed"] as const;
export const DUE_WINDOWS = ["overdue", "today", "upcoming"] as const;
export type DueWindow = (typeof DUE_WINDOWS)[number];

const id = z.string().min(1).max(100);
const dueAt = utcInstant(1900).openapi({
  type: "string",
  format: "date-time",
  description: "When the task falls due; stored and answered in UTC",
});

/** A task (issue 46): on a contact, a deal and/or a property, or only on the agent's day. */
export const Task = z
  .object({
    id: z.string(),
    title: z.string(),
    type: z.enum(TASK_TYPES),
    dueAt: z.string().nullable().openapi({
      description: "UTC timestamp, or `YYYY-MM-DD` for a deal task made with a day-only `dueDate` (due that day); null: no due time",
    }),
    assignedTo: z.string().nullable(),
    contactId: z.string().nullable(),
    dealId: z.string().nullable(),
    propertyId: z.string().nullable(),
    priority: z.enum(TASK_PRIORITIES),
    notes: z.string().nullable(),
    status: z.enum(TASK_STATUSES),
    completedAt: z.string().nullable(),
    completedBy: z.string().nullable().openapi({ description: "The user who completed it (null: completed by an API key or the system)" }),
    createdBy: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    version: z.int(),
  })
  .openapi("Task");
export type Task = z.infer<typeof Task>;

const links = {
  assignedTo: id.nullable().optional().openapi({ description: "A user of your organization; omitted on create: the caller" }),
  contactId: id.nullable().optional().openapi({ description: "A contact of your organization" }),
  dealId: id.nullable().optional().openapi({ description: "A deal of your organization" }),
  propertyId: id.nullable().optional().openapi({ description: "A property of your organization" }),
};

export const TaskCreate = z
  .strictObject({
    title: oneLineText(200),
    type: z.enum(TASK_TYPES).optional().openapi({ description: "Default `other`" }),
    dueAt: dueAt.nullable().optional(),
    ...links,
    priority: z.enum(TASK_PRIORITIES).optional().openapi({ description: "Default MEDIUM" }),
    notes: freeText(10_000).nullable().optional(),
  })
  .openapi("TaskCreate");
export type TaskCreate = z.infer<typeof TaskCreate>;

export const TaskUpdate = z
  .strictObject({
    title: oneLineText(200).optional(),
    type: z.enum(TASK_TYPES).optional(),
    dueAt: dueAt.nullable().optional().openapi({ description: "A new due time is announced (task.due) again when it comes" }),
    ...links,
    priority: z.enum(TASK_PRIORITIES).optional(),
    notes: freeText(10_000).nullable().optional(),
  })
  .openapi("TaskUpdate");
export type TaskUpdate = z.infer<typeof TaskUpdate>;

export const TaskListQuery = listQuery({
  assignedTo: id.optional().openapi({ description: "A user id, `me` (the calling user) or `none` (assigned to nobody)" }),
  due: z.enum(DUE_WINDOWS).optional().openapi({
    description:
      "`overdue`: due before now; `today`: due within today's date in the organization's time zone; `upcoming`: due after the end of today",
  }),
  status: z.enum(TASK_STATUSES).default("open").openapi({ description: "Default `open`" }),
  contactId: id.optional(),
  dealId: id.optional(),
  /** For tests and tools that ask "as of": not documented as a public parameter. */
  at: timestampParam.optional().openapi({ description: "Evaluate `due` as of this instant instead of now (default: now)" }),
});
export type TaskListQuery = z.infer<typeof TaskListQuery>;

export const IdParam = z.object({
  id: id.openapi({ param: { name: "id", in: "path" } }),
});
