import type { VersionedTable } from "../db/write";
import { tasks } from "../db/schema";
import type { Task } from "./schemas";

export type TaskRecord = typeof tasks.$inferSelect;

export const TASKS: VersionedTable = { table: tasks, id: tasks.id, organizationId: tasks.organizationId, version: tasks.version };

/** The task as the API and its events show it. */
export const toTask = (r: TaskRecord): Task => ({
  id: r.id,
  title: r.title,
  type: r.type,
  dueAt: r.dueAt,
  assignedTo: r.assignedTo,
  contactId: r.contactId,
  dealId: r.dealId,
  propertyId: r.propertyId,
  priority: r.priority as Task["priority"],
  notes: r.notes,
  status: r.completed ? "completed" : "open",
  completedAt: r.completedAt,
  completedBy: r.completedBy,
  createdBy: r.createdBy,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
  version: r.version,
});
