import { sql } from "drizzle-orm";
import { index, integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

export interface StoredCommission {
  rate?: number;
  amount?: number;
  split?: number;
}
export interface StoredTeamMember {
  userId: string;
  role: string;
  commissionSplit: number;
}

/**
 * Deals (spec: Deal). Lists filter and sort on plain columns, each behind an index led by organization_id and ending
 * in id; `closing_date` is `timeline.closingDate` copied in the same write. `closed_at` is when the deal last entered
 * CLOSED (null outside it), for the time to close; `decided_at` the same for CLOSED or LOST.
 */
export const deals = sqliteTable(
  "deals",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    title: text().notNull(),
    description: text(),
    type: text().notNull(),
    stage: text().notNull(),
    status: text().notNull(),
    amount: real().notNull(),
    commission: text({ mode: "json" }).$type<StoredCommission>(),
    contactId: text().notNull(),
    propertyId: text(),
    assignedTo: text(),
    teamMembers: text({ mode: "json" }).$type<StoredTeamMember[]>().notNull(),
    timeline: text({ mode: "json" }).$type<Record<string, string>>(),
    /** timeline.closingDate as YYYY-MM-DD, "" without one (so the sort index never holds NULLs). */
    closingDate: text().notNull().default(""),
    probability: integer().notNull(),
    source: text(),
    notes: text(),
    tags: text({ mode: "json" }).$type<string[]>().notNull(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    lastActivityAt: text().notNull(),
    closedAt: text(),
    /** When the deal last entered CLOSED or LOST (null while open): the analytics period filter of decided deals. */
    decidedAt: text(),
    /** Values of the organization's custom fields by key (crm/custom-fields.ts); null when none was ever set. */
    customFields: text({ mode: "json" }).$type<Record<string, string | number | boolean>>(),
    version: integer().notNull().default(1),
  },
  (t) => [
    // Also covering for analytics over deals created in a period (amount, type, assigned_to).
    index("deals_org_created_idx").on(t.organizationId, t.createdAt, t.id, t.amount, t.type, t.assignedTo),
    // Deals decided (CLOSED or LOST) in a period, with every figure analytics reads, from the index alone.
    index("deals_org_decided_idx")
      .on(t.organizationId, t.decidedAt, t.stage, t.amount, t.assignedTo, t.createdAt, t.type)
      .where(sql`${t.decidedAt} IS NOT NULL`),
    index("deals_org_updated_idx").on(t.organizationId, t.updatedAt, t.id),
    index("deals_org_amount_idx").on(t.organizationId, t.amount, t.id),
    index("deals_org_closing_idx").on(t.organizationId, t.closingDate, t.id),
    index("deals_org_probability_idx").on(t.organizationId, t.probability, t.id),
    index("deals_org_stage_idx").on(t.organizationId, t.stage, t.createdAt, t.id),
    index("deals_org_status_idx").on(t.organizationId, t.status, t.createdAt, t.id),
    index("deals_org_type_idx").on(t.organizationId, t.type, t.createdAt, t.id),
    index("deals_org_assigned_idx").on(t.organizationId, t.assignedTo, t.createdAt, t.id),
    index("deals_org_contact_idx").on(t.organizationId, t.contactId, t.createdAt, t.id),
  ],
);

/**
 * The pipeline per stage, moved in the batch of every deal write that changes a deal's stage, amount or probability
 * (or creates or deletes one): the overview reads these few rows, whatever the number of deals.
 */
export const dealStageStats = sqliteTable(
  "deal_stage_stats",
  {
    organizationId: text().notNull(),
    stage: text().notNull(),
    count: integer().notNull().default(0),
    value: real().notNull().default(0),
    probabilitySum: integer().notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.stage] })],
);

/**
 * Deals created per span of days (deals/rollups.ts): `level` L and `bucket` b cover the days [b·2^L, (b+1)·2^L) since
 * 1970-01-01 UTC, so any period is a handful of spans. Each deal counts under its type and under "*" (any type), under
 * its agent ("" for none) and under "*" (any agent): a report narrowed to a type, an agent or both reads one row per span.
 */
export const dealCreatedRollups = sqliteTable(
  "deal_created_rollups",
  {
    organizationId: text().notNull(),
    type: text().notNull(),
    assignedTo: text().notNull(),
    level: integer().notNull(),
    bucket: integer().notNull(),
    n: integer().notNull().default(0),
    value: real().notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.type, t.assignedTo, t.level, t.bucket] })],
);

/**
 * Deals decided (CLOSED or LOST, and still there) per span of days of their last decision, per stage and agent ("" for
 * none), under their type and "*": count, value and the days from creation to decision, for analytics.
 */
export const dealDecidedRollups = sqliteTable(
  "deal_decided_rollups",
  {
    organizationId: text().notNull(),
    type: text().notNull(),
    level: integer().notNull(),
    bucket: integer().notNull(),
    stage: text().notNull(),
    assignedTo: text().notNull(),
    n: integer().notNull().default(0),
    value: real().notNull().default(0),
    days: real().notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.type, t.level, t.bucket, t.stage, t.assignedTo] })],
);

/** Every stage move of a deal: from, to, when (the history; deals.decided_at keeps the last decision for analytics). */
export const dealStageChanges = sqliteTable(
  "deal_stage_changes",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    dealId: text().notNull(),
    fromStage: text(),
    toStage: text().notNull(),
    at: text().notNull(),
  },
  (t) => [
    index("deal_stage_changes_org_to_idx").on(t.organizationId, t.toStage, t.at),
    index("deal_stage_changes_deal_idx").on(t.dealId, t.at),
  ],
);

/** A document of a deal: the file lives in R2 under `key`, handed out through signed, expiring links. */
export const dealDocuments = sqliteTable(
  "deal_documents",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    dealId: text().notNull(),
    name: text().notNull(),
    type: text().notNull(),
    stage: text(),
    key: text().notNull(),
    size: integer().notNull(),
    mimeType: text().notNull(),
    sha256: text().notNull(),
    signedAt: text(),
    uploadedAt: text().notNull(),
  },
  (t) => [index("deal_documents_deal_idx").on(t.organizationId, t.dealId, t.uploadedAt, t.id)],
);

export const dealActivities = sqliteTable(
  "deal_activities",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    dealId: text().notNull(),
    type: text().notNull(),
    description: text(),
    userId: text(),
    metadata: text({ mode: "json" }).$type<Record<string, unknown>>(),
    createdAt: text().notNull(),
  },
  (t) => [index("deal_activities_deal_idx").on(t.organizationId, t.dealId, t.createdAt, t.id)],
);
