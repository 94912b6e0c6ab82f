import { shownCustomFields } from "../crm/custom-fields";
import type { dealActivities, dealDocuments, deals, tasks } from "../db/schema";
import type { Deal, DealActivity, DealDocument, DealStage, DealTask } from "./schemas";

export type DealRecord = typeof deals.$inferSelect;
export type TaskRecord = typeof tasks.$inferSelect;
export type ActivityRecord = typeof dealActivities.$inferSelect;

const JSON_COLUMNS = ["commission", "teamMembers", "timeline", "tags", "customFields"] as const;

/** A deal row read with raw SQL (snake_case columns, JSON as text) as drizzle would have read it. */
export function fromRow(row: Record<string, unknown>): DealRecord {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) out[k.replace(/_([a-z])/g, (_, ch: string) => ch.toUpperCase())] = v;
  for (const k of JSON_COLUMNS) out[k] = typeof out[k] === "string" ? JSON.parse(out[k] as string) : (out[k] ?? null);
  return out as DealRecord;
}

/** The deal as the API shows it, without includes (contact, property, documents, tasks, activities). */
export function toDeal(r: DealRecord): Deal {
  return {
    id: r.id,
    organizationId: r.organizationId,
    title: r.title,
    description: r.description,
    type: r.type as Deal["type"],
    stage: r.stage as Deal["stage"],
    status: r.status as Deal["status"],
    amount: r.amount,
    commission: r.commission
      ? { rate: r.commission.rate ?? null, amount: r.commission.amount ?? null, split: r.commission.split ?? null }
      : null,
    contactId: r.contactId,
    propertyId: r.propertyId,
    assignedTo: r.assignedTo,
    teamMembers: r.teamMembers,
    timeline: r.timeline && Object.keys(r.timeline).length ? r.timeline : null,
    probability: r.probability,
    source: r.source,
    notes: r.notes,
    tags: r.tags,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    lastActivityAt: r.lastActivityAt,
    customFields: shownCustomFields(r.customFields),
  };
}

export const toTask = (t: TaskRecord): DealTask => ({
  id: t.id,
  title: t.title,
  description: t.notes,
  dueDate: t.dueAt,
  completed: t.completed,
  completedAt: t.completedAt,
  assignedTo: t.assignedTo,
  priority: t.priority as DealTask["priority"],
  createdAt: t.createdAt,
});

export const toActivity = (a: ActivityRecord): DealActivity => ({
  id: a.id,
  type: a.type,
  description: a.description,
  createdAt: a.createdAt,
  userId: a.userId,
  metadata: a.metadata,
});

export async function toDocument(r: DocumentRecord, sign: (key: string) => Promise<{ url: string }>): Promise<DealDocument> {
  return {
    id: r.id,
    name: r.name,
    type: r.type,
    stage: r.stage as DealStage | null,
    size: r.size,
    mimeType: r.mimeType,
    url: (await sign(r.key)).url,
    signedAt: r.signedAt,
    uploadedAt: r.uploadedAt,
  };
}

export type DocumentRecord = typeof dealDocuments.$inferSelect;
