import { z } from "@hono/zod-openapi";
import { sortParam } from "../crm/keyset";
import { CUSTOM_SORT, CustomFieldsInput, CustomFieldValues, type CustomSortField, withCustomFieldParams } from "../crm/custom-fields";
import { exportQuery } from "../crm/export";
import { csv, decimalParam, intParam, listQuery, timestampParam } from "../crm/list-query";
import { searchParam } from "../crm/search";
import { oneLineText, pattern } from "../lib/validation";

export const DEAL_TYPES = ["SALE", "PURCHASE", "LEASE", "RENTAL"] as const;
export const DEAL_STAGES = [
  "LEAD",
  "QUALIFIED",
  "APPOINTMENT",
  "NEGOTIATION",
  "CONTRACT",
  "INSPECTION",
  "APPRAISAL",
  "FINANCING",
  "CLOSING",
  "CLOSED",
  "LOST",
] as const;
export const DEAL_STATUSES = ["ACTIVE", "ON_HOLD", "CANCELLED", "CLOSED"] as const;
export const TASK_PRIORITIES = ["LOW", "MEDIUM", "HIGH", "URGENT"] as const;
export type DealStage = (typeof DEAL_STAGES)[number];
export type DealStatus = (typeof DEAL_STATUSES)[number];

/** The stages a deal ends in; the others are open. */
export const FINAL_STAGES: readonly DealStage[] = ["CLOSED", "LOST"];

/** The probability a deal takes on entering a stage when none is given (ours: the spec names none). */
export const STAGE_PROBABILITY: Record<DealStage, number> = {
  LEAD: 10,
  QUALIFIED: 20,
  APPOINTMENT: 30,
  NEGOTIATION: 50,
  CONTRACT: 70,
  INSPECTION: 75,
  APPRAISAL: 80,
  FINANCING: 85,
  CLOSING: 90,
  CLOSED: 100,
  LOST: 0,
};

export const STAGE_RULES = `Stage and status rules (ours: the spec leaves them open). Any stage may follow any other. A new deal is ACTIVE
and starts in LEAD or the open stage given (not CLOSED or LOST: create it, then move it). Entering CLOSED sets status
CLOSED (emits deal.won and deal.closed); entering LOST sets status CANCELLED (emits deal.lost); leaving either for an
open stage sets status ACTIVE again. Status CLOSED goes with stage CLOSED only; an open deal may be ACTIVE, ON_HOLD or
CANCELLED. A stage change without a probability takes the stage's default (LEAD 10, QUALIFIED 20, APPOINTMENT 30,
NEGOTIATION 50, CONTRACT 70, INSPECTION 75, APPRAISAL 80, FINANCING 85, CLOSING 90, CLOSED 100, LOST 0). Every stage
change is a STAGE_CHANGED activity with metadata {previousStage, newStage, reason} and a deal.stage_changed event.`;

const text = oneLineText;
const code = pattern(/^[A-Z][A-Z0-9_]{0,39}$/, "invalid_code", "Must be an UPPER_SNAKE_CASE code");
const tag = oneLineText(50).refine((t) => !t.includes(","), {
  message: "A tag cannot contain a comma",
  params: { code: "invalid_character" },
});
const fraction = z.number().min(0).max(1);
const userId = z.string().min(1).max(100);
/** A real day of the calendar from 1900 on (2026-13-01 and 2026-02-30 are not; `new Date` would throw or roll over). */
const isCalendarDate = (d: string): boolean => {
  const at = new Date(`${d}T00:00:00Z`);
  return !Number.isNaN(at.getTime()) && d >= "1900-01-01" && at.toISOString().startsWith(d);
};

const utcDay = (timestamp: string): string => new Date(timestamp).toISOString().slice(0, 10);

/** A date (YYYY-MM-DD) or an ISO 8601 timestamp, kept as a date or as a UTC timestamp. */
export const isoDateOrTime = z
  .string()
  .max(40)
  .refine(
    (v) =>
      /^\d{4}-\d{2}-\d{2}$/.test(v)
        ? isCalendarDate(v)
        : // The day in UTC too: 9999-12-31T23:00-14:00 is in the year 10000, which toISOString writes "+010000-…".
          z.iso.datetime({ offset: true }).safeParse(v).success && isCalendarDate(v.slice(0, 10)) && isCalendarDate(utcDay(v)),
    {
      message: "Must be a date (YYYY-MM-DD, from 1900 on) or an ISO 8601 timestamp",
      params: { code: "invalid_date" },
    },
  )
  .transform((v) => (v.length === 10 ? v : new Date(v).toISOString()))
  .openapi({ type: "string", example: "2026-12-15" });

export const MAX_TAGS = 50;
export const MAX_TEAM = 20;

export const Commission = z
  .strictObject({
    rate: fraction
      .nullable()
      .optional()
      .openapi({ description: "A fraction of the amount (0.03 is 3%); the commission amount is then computed" }),
    amount: z.number().nonnegative().max(1e11).nullable().optional(),
    split: fraction.nullable().optional().openapi({ description: "The share of the commission kept (a fraction)" }),
  })
  .openapi("DealCommission");

export const TeamMember = z
  .strictObject({
    userId: userId.openapi({ description: "A user of your organization" }),
    role: code.openapi({ example: "LISTING_AGENT", description: "e.g. LISTING_AGENT, BUYER_AGENT, CO_AGENT, TRANSACTION_COORDINATOR" }),
    commissionSplit: fraction.openapi({ description: "A fraction; the members' splits add up to 1" }),
  })
  .openapi("DealTeamMember");

export const Timeline = z
  .strictObject({
    listingDate: isoDateOrTime.nullable().optional(),
    contractDate: isoDateOrTime.nullable().optional(),
    inspectionDate: isoDateOrTime.nullable().optional(),
    appraisalDate: isoDateOrTime.nullable().optional(),
    closingDate: isoDateOrTime.nullable().optional(),
  })
  .openapi("DealTimeline");

/** Fields a client may send back from a read but never writes: ignored. */
export const READ_ONLY_FIELDS = [
  "id",
  "organizationId",
  "createdAt",
  "updatedAt",
  "lastActivityAt",
  "contact",
  "property",
  "documents",
  "tasks",
  "activities",
] as const;
const readOnly = Object.fromEntries(READ_ONLY_FIELDS.map((f) => [f, z.unknown().optional()])) as Record<
  (typeof READ_ONLY_FIELDS)[number],
  z.ZodOptional<z.ZodUnknown>
>;

const writable = {
  title: text(200),
  description: z.string().max(10_000).nullable().optional(),
  type: z.enum(DEAL_TYPES),
  stage: z.enum(DEAL_STAGES).optional(),
  status: z.enum(DEAL_STATUSES).optional(),
  amount: z.number().nonnegative().max(1e11),
  commission: Commission.nullable().optional(),
  contactId: z.string().min(1).max(100).openapi({ description: "A contact of your organization" }),
  propertyId: z.string().min(1).max(100).nullable().optional().openapi({ description: "A property of your organization" }),
  assignedTo: userId.nullable().optional().openapi({ description: "A user (agent) of your organization" }),
  teamMembers: z.array(TeamMember).max(MAX_TEAM).optional(),
  timeline: Timeline.nullable().optional(),
  probability: z.int().min(0).max(100).optional(),
  source: code.nullable().optional().openapi({ example: "REFERRAL" }),
  notes: z.string().max(10_000).nullable().optional(),
  tags: z.array(tag).max(MAX_TAGS).optional(),
  customFields: CustomFieldsInput.optional(),
};

export const DealCreate = z.strictObject({ ...writable, ...readOnly }).openapi("DealCreate");
export type DealCreate = z.infer<typeof DealCreate>;

export const DealUpdate = z
  .strictObject({
    ...writable,
    title: writable.title.optional(),
    type: writable.type.optional(),
    amount: writable.amount.optional(),
    contactId: writable.contactId.optional(),
    reason: z
      .string()
      .max(1000)
      .optional()
      .openapi({ description: "Why the stage changed, with a stage change (the STAGE_CHANGED activity keeps it)" }),
    ...readOnly,
  })
  .openapi("DealUpdate");
export type DealUpdate = z.infer<typeof DealUpdate>;

export const DealMove = z
  .strictObject({
    stage: z.enum(DEAL_STAGES),
    reason: z.string().max(1000).optional(),
    probability: z.int().min(0).max(100).optional(),
  })
  .openapi("DealMove");
export type DealMove = z.infer<typeof DealMove>;

/** A reference whose target was deleted (in the trash, purged or erased): what is left of it (db/references.ts). */
export const DeletedReference = z
  .object({
    id: z.string(),
    deleted: z.literal(true),
    deletedAt: z.string().nullable().openapi({ description: "When it was deleted (null: before deletes were kept)" }),
  })
  .openapi("DeletedReference");

export const DealContact = z
  .object({ id: z.string(), firstName: z.string(), lastName: z.string(), email: z.string() })
  .openapi("DealContact");
export const DealProperty = z
  .object({
    id: z.string(),
    address: z.record(z.string(), z.unknown()),
    type: z.string(),
    bedrooms: z.int().nullable(),
    bathrooms: z.number().nullable(),
    squareFootage: z.int().nullable(),
  })
  .openapi("DealProperty");

export const DealTask = z
  .object({
    id: z.string(),
    title: z.string(),
    description: z.string().nullable(),
    dueDate: z.string().nullable(),
    completed: z.boolean(),
    completedAt: z.string().nullable(),
    assignedTo: z.string().nullable(),
    priority: z.enum(TASK_PRIORITIES),
    createdAt: z.string(),
  })
  .openapi("DealTask");
export type DealTask = z.infer<typeof DealTask>;

/** Tasks a deal holds at most (its list is answered whole); /v1/tasks holds a task joining a deal to it too. */
export const MAX_TASKS = 200;

export const DealTaskCreate = z
  .strictObject({
    title: text(200),
    description: z.string().max(10_000).nullable().optional(),
    dueDate: isoDateOrTime.nullable().optional(),
    priority: z.enum(TASK_PRIORITIES).optional(),
    assignedTo: userId.nullable().optional().openapi({ description: "A user of your organization" }),
  })
  .openapi("DealTaskCreate");
export type DealTaskCreate = z.infer<typeof DealTaskCreate>;

/** A task of the caller's that falls due (deals/due-tasks.ts): the task with the deal it belongs to. */
export const DueTask = DealTask.extend({
  dealId: z.string(),
  dealTitle: z.string(),
}).openapi("DueDealTask");
export type DueTask = z.infer<typeof DueTask>;

/** Days ahead of today (UTC) a due task may fall due, at most. */
export const MAX_DUE_WITHIN_DAYS = 365;

/** The page of open tasks of one assignee due by the end of `withinDays` days from today (UTC), overdue ones first. */
export const DueTaskQuery = listQuery({
  withinDays: intParam(0, MAX_DUE_WITHIN_DAYS)
    .default(0)
    .openapi({ type: "integer", description: "0: due today or overdue; 7: also due in the next seven days (UTC days)" }),
});
export type DueTaskQuery = z.infer<typeof DueTaskQuery>;

export const DealDocument = z
  .object({
    id: z.string(),
    name: z.string(),
    type: z.string(),
    stage: z.enum(DEAL_STAGES).nullable(),
    size: z.int(),
    mimeType: z.string(),
    url: z.string().openapi({ description: "A signed link, valid 10 to 15 minutes" }),
    signedAt: z.string().nullable(),
    uploadedAt: z.string(),
  })
  .openapi("DealDocument");
export type DealDocument = z.infer<typeof DealDocument>;

/** A document's name (given, or the uploaded file's name). */
export const DocumentName = text(200);

/** The multipart body of a document upload, as Hono's form parser hands it over. */
export const DocumentUploadForm = z
  .strictObject({
    file: z
      .instanceof(File, { message: "Must be a file" })
      .openapi({ type: "string", format: "binary", description: "The document: PDF, an image or an Office file" }),
    name: DocumentName.optional().openapi({ description: "Default: the file's name" }),
    type: code.optional().openapi({
      example: "CONTRACT",
      description: "e.g. CONTRACT, DISCLOSURE, INSPECTION_REPORT, APPRAISAL, ADDENDUM, CLOSING_STATEMENT; default OTHER",
    }),
    stage: z.enum(DEAL_STAGES).optional().openapi({ description: "The deal stage the document belongs to" }),
    signedAt: isoDateOrTime.optional().openapi({ description: "When it was signed" }),
  })
  .openapi("DealDocumentUpload");
export type DocumentUploadForm = z.infer<typeof DocumentUploadForm>;

export const DealActivity = z
  .object({
    id: z.string(),
    type: z.string().openapi({
      example: "STAGE_CHANGED",
      description:
        "DEAL_CREATED, STAGE_CHANGED, TASK_CREATED, TASK_COMPLETED, DOCUMENT_UPLOADED, OBLIGATION_OVERDUE (a linked document's obligation fell due)",
    }),
    description: z.string().nullable(),
    createdAt: z.string(),
    userId: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
  })
  .openapi("DealActivity");
export type DealActivity = z.infer<typeof DealActivity>;

export const Deal = z
  .object({
    id: z.string(),
    organizationId: z.string(),
    title: z.string(),
    description: z.string().nullable(),
    type: z.enum(DEAL_TYPES),
    stage: z.enum(DEAL_STAGES),
    status: z.enum(DEAL_STATUSES),
    amount: z.number(),
    commission: z.object({ rate: z.number().nullable(), amount: z.number().nullable(), split: z.number().nullable() }).nullable(),
    contactId: z.string(),
    propertyId: z.string().nullable(),
    contact: z
      .union([DealContact, DeletedReference])
      .optional()
      .openapi({ description: "With include=contact; `{id, deleted: true, deletedAt}` when the contact has since been deleted" }),
    property: z.union([DealProperty, DeletedReference]).nullable().optional().openapi({
      description: "With include=property (null without a property; `{id, deleted: true, deletedAt}` when it has since been deleted)",
    }),
    assignedTo: z.string().nullable(),
    teamMembers: z.array(z.object({ userId: z.string(), role: z.string(), commissionSplit: z.number() })),
    timeline: z.record(z.string(), z.string()).nullable(),
    probability: z.int(),
    source: z.string().nullable(),
    notes: z.string().nullable(),
    tags: z.array(z.string()),
    documents: z.array(DealDocument).optional().openapi({ description: "With include=documents" }),
    tasks: z.array(DealTask).optional().openapi({ description: "With include=tasks" }),
    activities: z.array(DealActivity).optional().openapi({ description: "With include=activities (the latest 20)" }),
    createdAt: z.string(),
    updatedAt: z.string(),
    lastActivityAt: z.string(),
    customFields: CustomFieldValues,
  })
  .openapi("Deal");
export type Deal = z.infer<typeof Deal>;

export const IdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "id", in: "path" } }),
});
export const TaskParam = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "id", in: "path" } }),
  taskId: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "taskId", in: "path" } }),
});

export const SORT_FIELDS = ["createdAt", "updatedAt", "amount", "closingDate", "probability"] as const;
export type SortField = (typeof SORT_FIELDS)[number];
export const LIST_INCLUDES = ["contact", "property", "documents"] as const;
export const READ_INCLUDES = ["contact", "property", "documents", "tasks", "activities"] as const;
export type Include = (typeof READ_INCLUDES)[number];

const dealFilters = {
  q: searchParam(false, "the title"),
  type: z.enum(DEAL_TYPES).optional(),
  stage: z.enum(DEAL_STAGES).optional(),
  status: z.enum(DEAL_STATUSES).optional(),
  assignedTo: userId.optional(),
  "amount[gte]": decimalParam(0, 1e11).optional(),
  "amount[lte]": decimalParam(0, 1e11).optional(),
  "probability[gte]": intParam(0, 100).optional().openapi({ type: "integer", minimum: 0, maximum: 100 }),
  "createdAt[gte]": timestampParam.optional().openapi({ type: "string", format: "date-time" }),
  "closingDate[gte]": isoDateOrTime.optional(),
  sort: sortParam<SortField, CustomSortField>(SORT_FIELDS, "createdAt:desc", CUSTOM_SORT),
};
const amountRange = (q: { "amount[gte]"?: number; "amount[lte]"?: number }, ctx: z.RefinementCtx) => {
  const lo = q["amount[gte]"];
  const hi = q["amount[lte]"];
  if (lo !== undefined && hi !== undefined && lo > hi)
    ctx.addIssue({ code: "custom", path: ["amount[gte]"], message: "amount[gte] exceeds amount[lte]", params: { code: "invalid_range" } });
};
export const DealListQuery = withCustomFieldParams(
  listQuery({ ...dealFilters, include: csv(z.enum(LIST_INCLUDES)).optional().openapi({ type: "string", example: "contact,property" }) }),
).superRefine(amountRange);
export type DealListQuery = z.infer<typeof DealListQuery>;
/** GET /v1/deals/export: the list's filters, `q` and sort, and the format. */
export const DealExportQuery = withCustomFieldParams(exportQuery(dealFilters)).superRefine(amountRange);

export const DealReadQuery = z.strictObject({
  include: csv(z.enum(READ_INCLUDES)).optional().openapi({ type: "string", example: "contact,tasks" }),
});

export const SubListQuery = listQuery({});

export const Pipeline = z
  .object({
    totalValue: z.number(),
    totalDeals: z.int(),
    averageDealSize: z.number(),
    conversionRate: z.number().openapi({ description: "Percent of decided deals won: CLOSED / (CLOSED + LOST) × 100" }),
    stages: z.array(z.object({ stage: z.enum(DEAL_STAGES), count: z.int(), value: z.number(), averageProbability: z.number() })),
  })
  .openapi("PipelineOverview");
export type Pipeline = z.infer<typeof Pipeline>;

export const PERIODS = ["7d", "30d", "90d", "1y"] as const;
export const AnalyticsQuery = z.strictObject({
  period: z.enum(PERIODS).default("30d").openapi({ description: "Default 30d" }),
  assignedTo: userId.optional(),
  type: z.enum(DEAL_TYPES).optional(),
});

export const DealAnalytics = z
  .object({
    period: z.enum(PERIODS),
    totalDeals: z.int().openapi({ description: "Deals created in the period" }),
    closedDeals: z.int().openapi({ description: "Deals that entered CLOSED in the period and are still closed" }),
    totalValue: z.number().openapi({ description: "Amount of the deals created in the period" }),
    closedValue: z.number().openapi({ description: "Amount of the deals closed in the period" }),
    averageTimeToClose: z
      .number()
      .nullable()
      .openapi({ description: "Days from creation to CLOSED, over the deals closed in the period; null without any" }),
    conversionRate: z
      .number()
      .openapi({ description: "Percent of the deals decided in the period that were won: closed / (closed + lost) × 100" }),
    topPerformers: z.array(z.object({ agentId: z.string(), name: z.string().nullable(), deals: z.int(), closedValue: z.number() })),
  })
  .openapi("DealAnalytics");
export type DealAnalytics = z.infer<typeof DealAnalytics>;
