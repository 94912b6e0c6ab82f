import { z } from "@hono/zod-openapi";
import { TASK_PRIORITIES } from "../deals/schemas";
import { TASK_TYPES } from "../tasks/schemas";
import type { Permission } from "../platform/permissions";

/**
 * The daily brief: what a user has to act on today, from four domains, each section read only with the permission
 * that reads it where the API shows it (as the right-of-access export does: erasure/access.ts). A section the
 * credential may not read is neither read nor answered, and is named in `omitted`.
 */
export const BRIEF_SECTIONS = {
  newLeads: "contacts:read",
  tasksDue: "tasks:read",
  obligationsDueSoon: "documents:read",
  envelopesWaiting: "signatures:read",
  appointmentsToday: "appointments:read",
} as const satisfies Record<string, Permission>;
export type BriefSection = keyof typeof BRIEF_SECTIONS;
const SECTION_NAMES = Object.keys(BRIEF_SECTIONS) as [BriefSection, ...BriefSection[]];

/** Items a section answers by default, and at most: a brief is read whole, the totals say how much more there is. */
export const DEFAULT_BRIEF_ITEMS = 10;
export const MAX_BRIEF_ITEMS = 25;

const section = <T extends z.ZodType>(item: T, description: string) =>
  z
    .object({
      total: z.int().describe("How many there are in all"),
      items: z.array(item).describe(`At most the limit asked for (default ${DEFAULT_BRIEF_ITEMS})`),
    })
    .describe(description);

export const BriefLead = z.object({
  id: z.string(),
  firstName: z.string(),
  lastName: z.string(),
  email: z.string(),
  phone: z.string().nullable(),
  source: z.string().nullable(),
  leadScore: z.int().nullable(),
  assignedTo: z.string().nullable().describe("The user, or null: nobody's yet"),
  createdAt: z.string(),
});

export const BriefTask = z.object({
  id: z.string(),
  type: z.enum(TASK_TYPES),
  contactId: z.string().nullable().describe("The contact it is about, if any"),
  dealId: z.string().nullable().describe("The deal it is on, if any"),
  dealTitle: z.string().nullable(),
  title: z.string(),
  dueDate: z.string().describe("A date (YYYY-MM-DD) or a UTC timestamp"),
  priority: z.enum(TASK_PRIORITIES),
  assignedTo: z.string().nullable().describe("The user, or null: a task of the user's deal nobody was given"),
  overdue: z.boolean().describe("Due before today (a date) or before now (a timestamp)"),
});

export const BriefObligation = z.object({
  id: z.string(),
  documentId: z.string(),
  dealId: z.string().nullable(),
  type: z.string(),
  description: z.string().nullable(),
  dueDate: z.string().describe("The start (UTC) of the day it falls due"),
  amountCents: z.int().nullable(),
  urgency: z.enum(["pending", "due_soon", "overdue"]),
});

export const BriefEnvelope = z.object({
  id: z.string(),
  documentId: z.string(),
  documentTitle: z.string().nullable(),
  mode: z.enum(["parallel", "sequential"]),
  sentAt: z.string(),
  sentBy: z.string().nullable().describe("The user who sent it"),
  expiresAt: z.string().nullable(),
  signed: z.int().describe("Signers who have signed"),
  signers: z.int().describe("Signers in all"),
  waitingOn: z
    .array(z.object({ id: z.string(), name: z.string(), email: z.string(), role: z.string(), status: z.string() }))
    .describe("The signers whose turn it is and who have not signed yet"),
});

export const BriefAppointment = z.object({
  id: z.string(),
  type: z.string(),
  title: z.string().nullable(),
  startsAt: z.string(),
  endsAt: z.string(),
  timeZone: z.string(),
  location: z.string().nullable(),
  propertyId: z.string().nullable(),
});

export const DailyBrief = z.object({
  date: z.string().describe("Today, the UTC day (YYYY-MM-DD) the brief is of"),
  newLeads: section(
    BriefLead,
    "Active leads assigned to the user or to nobody, never contacted (no lastContactedAt), newest first",
  ).optional(),
  tasksDue: section(
    BriefTask,
    "Open tasks due today or before: the user's (on contacts, deals or nothing), and those nobody was given on the user's deals; soonest first",
  ).optional(),
  obligationsDueSoon: section(
    BriefObligation,
    "Obligations of the organization's documents overdue or due within 7 days, soonest first",
  ).optional(),
  envelopesWaiting: section(
    BriefEnvelope,
    "The organization's signature envelopes sent and not yet completed, declined, voided or expired; oldest first",
  ).optional(),
  appointmentsToday: section(
    BriefAppointment,
    "The user's appointments (they attend or made) starting today (the UTC day), not cancelled; in start order",
  ).optional(),
  omitted: z
    .array(z.object({ section: z.enum(SECTION_NAMES), permission: z.string() }))
    .describe("The sections left out, each with the permission that would read it"),
});
export type DailyBrief = z.infer<typeof DailyBrief>;
