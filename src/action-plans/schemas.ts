import { z } from "@hono/zod-openapi";
import { listQuery } from "../crm/list-query";
import type { EnrollmentStatus, StoredPlanStep, StoredPlanTrigger } from "../db/plans";
import { freeText, oneLineText } from "../lib/validation";
import { CONTACT_STATUSES } from "../contacts/schemas";
import { DEAL_STAGES } from "../deals/schemas";

/* ------------------------------------------------------------------ delays */

/** The longest wait between two steps (issue 46: `PT0S`…`P365D`). */
export const MAX_DELAY_SECONDS = 365 * 86_400;
const DURATION = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/;

/**
 * An ISO 8601 duration in seconds: weeks, days, hours, minutes and seconds (`P2D`, `PT30M`, `P1DT12H`). Years and
 * months are refused: their length depends on the date, and a plan's wait should read the same every time.
 */
export function delaySeconds(iso: string): number | null {
  const m = DURATION.exec(iso);
  if (!m || iso === "P" || iso.endsWith("T")) return null;
  const [w, d, h, min, s] = m.slice(1).map((v) => Number(v ?? 0)) as [number, number, number, number, number];
  return (((w * 7 + d) * 24 + h) * 60 + min) * 60 + s;
}

const delay = z
  .string()
  .max(40)
  .superRefine((v, ctx) => {
    const seconds = delaySeconds(v);
    if (seconds === null)
      ctx.addIssue({
        code: "custom",
        message: "Must be an ISO 8601 duration of weeks, days, hours, minutes and seconds, such as PT0S, PT2H or P3D",
        params: { code: "invalid_duration" },
      });
    else if (seconds > MAX_DELAY_SECONDS) ctx.addIssue({ code: "custom", message: "Must be at most P365D", params: { code: "too_big" } });
  })
  .openapi({ example: "P2D", description: "ISO 8601 duration after the previous step (after enrollment for the first): PT0S to P365D" });

/* ------------------------------------------------------------------ merge fields */

/** The merge fields an e-mail step may use; `agent` is the contact's assigned agent (else who enrolled it). */
export const MERGE_FIELDS = ["contact.firstName", "contact.lastName", "contact.email", "agent.name", "agent.email"] as const;
export type MergeField = (typeof MERGE_FIELDS)[number];
const MERGE = /\{\{\s*([^{}]*?)\s*\}\}/g;

/** The `{{…}}` names of `text` that are no merge field. */
export const unknownMergeFields = (text: string): string[] =>
  [...text.matchAll(MERGE)].map((m) => m[1]!).filter((name) => !(MERGE_FIELDS as readonly string[]).includes(name));

/** `text` with each merge field replaced by its value (an empty string when the value is missing). */
export const renderMergeFields = (text: string, values: Record<MergeField, string | null>): string =>
  text.replace(MERGE, (whole, name: string) =>
    (MERGE_FIELDS as readonly string[]).includes(name) ? (values[name as MergeField] ?? "") : whole,
  );

const merged = <T extends z.ZodType<string>>(schema: T) =>
  schema.superRefine((v, ctx) => {
    for (const name of unknownMergeFields(v))
      ctx.addIssue({
        code: "custom",
        message: `Unknown merge field {{${name}}}; known: ${MERGE_FIELDS.map((f) => `{{${f}}}`).join(", ")}`,
        params: { code: "unknown_merge_field" },
      });
  });

/* ------------------------------------------------------------------ steps and triggers */

export const TASK_TYPES = ["call", "email", "text", "showing", "follow_up", "other"] as const;
const tag = oneLineText(50).refine((t) => !t.includes(","), {
  message: "A tag cannot contain a comma",
  params: { code: "invalid_character" },
});

const Step = z
  .discriminatedUnion("type", [
    z.strictObject({
      type: z.literal("send_email"),
      delay,
      email: z.strictObject({ subject: merged(oneLineText(200)), body: merged(freeText(20_000).min(1)) }),
    }),
    z.strictObject({ type: z.literal("create_task"), delay, task: z.strictObject({ title: oneLineText(200), type: z.enum(TASK_TYPES) }) }),
    z.strictObject({ type: z.literal("add_tag"), delay, tag }),
    z.strictObject({ type: z.literal("remove_tag"), delay, tag }),
    z.strictObject({ type: z.literal("set_status"), delay, status: z.enum(CONTACT_STATUSES) }),
    z.strictObject({ type: z.literal("set_stage"), delay, stage: z.enum(DEAL_STAGES) }),
    z.strictObject({ type: z.literal("notify"), delay }),
  ])
  .openapi("ActionPlanStep", {
    description:
      "`send_email` mails the contact (merge fields `{{contact.firstName}}`, `{{contact.lastName}}`, `{{contact.email}}`, `{{agent.name}}`, `{{agent.email}}`) and logs it as an outbound e-mail communication; `create_task` a task on the contact for its agent; `add_tag`/`remove_tag`/`set_status` change the contact; `set_stage` moves the contact's latest open deal (skipped when it has none); `notify` emits the webhook event `action_plan.step_due`",
  });

const Trigger = z
  .discriminatedUnion("event", [
    z.strictObject({ event: z.literal("contact.tagged"), tag }),
    z.strictObject({ event: z.literal("deal.stage_changed"), stage: z.enum(DEAL_STAGES) }),
    z.strictObject({
      event: z.literal("contact.created"),
      source: oneLineText(100).optional().openapi({ description: "Only contacts with this source (any when absent)" }),
    }),
  ])
  .openapi("ActionPlanTrigger", {
    description:
      "Enrolls a contact automatically: when it is given the tag, when its deal enters the stage, or when it is created (by the API, an import or lead intake) with the source, or with any source when none is named",
  });

const planFields = { name: oneLineText(200), steps: z.array(Step).min(1).max(50), triggers: z.array(Trigger).max(20) };
export const ActionPlanInput = z.strictObject({ ...planFields, triggers: planFields.triggers.default([]) }).openapi("ActionPlanInput");
export type ActionPlanInput = z.infer<typeof ActionPlanInput>;
/** PATCH: the fields given replace the plan's (no defaults: an absent field stays as it is). */
export const ActionPlanUpdate = z.strictObject(planFields).partial().openapi("ActionPlanUpdate");
export type ActionPlanUpdate = z.infer<typeof ActionPlanUpdate>;

export const ActionPlan = z
  .object({
    id: z.string(),
    name: z.string(),
    steps: z.array(Step),
    triggers: z.array(Trigger),
    createdBy: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    version: z.int(),
  })
  .openapi("ActionPlan");
export type ActionPlan = z.infer<typeof ActionPlan>;

export const PlanIdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "id", in: "path" } }),
});
export const EnrollmentParams = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "id", in: "path" } }),
  enrollmentId: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "enrollmentId", in: "path" } }),
});

export const PlanListQuery = listQuery({});
export const ENROLLMENT_STATUSES = ["active", "paused", "completed", "stopped"] as const satisfies readonly EnrollmentStatus[];
export const EnrollmentListQuery = listQuery({
  status: z.enum(ENROLLMENT_STATUSES).optional().openapi({ description: "Only enrollments in this status" }),
  contactId: z.string().min(1).max(100).optional().openapi({ description: "Only this contact's enrollments" }),
});
export type EnrollmentListQuery = z.infer<typeof EnrollmentListQuery>;

export const EnrollmentCreate = z.strictObject({ contactId: z.string().min(1).max(100) }).openapi("ActionPlanEnrollmentCreate");

const StepRun = z
  .object({
    step: z.int().openapi({ description: "The step's index in the plan's steps, from 0" }),
    type: z.string(),
    state: z.enum(["running", "done", "skipped", "failed"]),
    dueAt: z.string(),
    startedAt: z.string(),
    finishedAt: z.string().nullable(),
    attempts: z.int(),
    outcome: z.record(z.string(), z.unknown()).nullable(),
  })
  .openapi("ActionPlanStepRun");

export const Enrollment = z
  .object({
    id: z.string(),
    planId: z.string(),
    contactId: z.string(),
    status: z.enum(ENROLLMENT_STATUSES),
    enrolledVia: z.enum(["manual", "trigger", "intake"]),
    enrolledBy: z.string().nullable(),
    enrolledAt: z.string(),
    nextStep: z
      .object({ index: z.int(), type: z.string(), dueAt: z.string().nullable() })
      .nullable()
      .openapi({ description: "The step to run next and when (dueAt null while paused); null once completed or stopped" }),
    pausedAt: z.string().nullable(),
    pauseReason: z.string().nullable(),
    endedAt: z.string().nullable(),
    history: z.array(StepRun).openapi({ description: "The steps run so far, in order" }),
    updatedAt: z.string(),
    version: z.int(),
  })
  .openapi("ActionPlanEnrollment");
export type Enrollment = z.infer<typeof Enrollment>;

export type { StoredPlanStep, StoredPlanTrigger };
