import { z } from "@hono/zod-openapi";
import type { contactCommunications } from "../db/schema";
import { listQuery } from "../crm/list-query";
import { boundedJsonObject } from "../lib/json-bounds";
import { freeText, oneLineText } from "../lib/validation";

// Communications logged on a contact. The spec names only their events (Events, Communication); the
// fields and rules are ours.
export const COMMUNICATION_TYPES = ["email", "sms", "call", "voicemail"] as const;
const DIRECTIONS = ["inbound", "outbound"] as const;
type CommunicationType = (typeof COMMUNICATION_TYPES)[number];

/** Which types take which content: a subject is an e-mail's, a body is written or transcribed, a duration is spoken. */
const TAKES: Record<"subject" | "body" | "durationSeconds", readonly CommunicationType[]> = {
  subject: ["email"],
  body: ["email", "sms", "voicemail"],
  durationSeconds: ["call", "voicemail"],
};

const MAX_SUBJECT_CHARS = 500;
const MAX_BODY_CHARS = 10_000;
const MAX_COMMUNICATION_METADATA_CHARS = 4 * 1024;
/** A day; no call lasts longer. */
const MAX_DURATION_SECONDS = 86_400;
/** How far ahead of the server's clock an occurredAt may be (a client's clock runs a little fast); beyond, it is refused. */
export const MAX_CLOCK_SKEW_MS = 5 * 60_000;
const EARLIEST = "1970-01-01T00:00:00.000Z";
/** Communications embedded per contact by include=communications; the communications route pages through the rest. */
export const INCLUDED_COMMUNICATIONS = 20;

export const Communication = z
  .object({
    id: z.string(),
    contactId: z.string(),
    type: z.enum(COMMUNICATION_TYPES),
    direction: z.enum(DIRECTIONS),
    subject: z.string().nullable(),
    body: z.string().nullable(),
    durationSeconds: z.int().nullable(),
    occurredAt: z.string(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
    createdAt: z.string(),
  })
  .openapi("ContactCommunication");
export type Communication = z.infer<typeof Communication>;

const occurredAt = z.iso
  .datetime({ offset: true, message: "Must be an ISO 8601 timestamp" })
  .transform((v) => new Date(v).toISOString())
  .refine((v) => v >= EARLIEST, { message: "Must not be before 1970", params: { code: "too_early" } })
  .refine((v) => Date.parse(v) <= Date.now() + MAX_CLOCK_SKEW_MS, {
    message: "A communication is logged once it has happened: occurredAt must not be in the future",
    params: { code: "in_future" },
  });

const fields = {
  type: z.enum(COMMUNICATION_TYPES),
  direction: z.enum(DIRECTIONS).openapi({ description: "A voicemail is always inbound" }),
  subject: oneLineText(MAX_SUBJECT_CHARS).optional().openapi({ description: "E-mail only" }),
  body: freeText(MAX_BODY_CHARS).optional().openapi({ description: "E-mail, SMS, or a voicemail's transcript" }),
  durationSeconds: z
    .int()
    .min(0)
    .max(MAX_DURATION_SECONDS)
    .optional()
    .openapi({ description: "Call or voicemail. A call logged with it has ended (emits call_started and call_ended)" }),
  occurredAt: occurredAt.optional().openapi({ description: "When it happened (ISO 8601; default now); not in the future" }),
  metadata: boundedJsonObject({ maxChars: MAX_COMMUNICATION_METADATA_CHARS }).optional(),
};

const MISPLACED: Record<keyof typeof TAKES, string> = {
  subject: "Only an e-mail has a subject",
  body: "A call has no body (an e-mail, an SMS or a voicemail's transcript has)",
  durationSeconds: "Only a call or a voicemail has a duration",
};

type Raw = Record<string, unknown>;
/** Run the rules on whatever object was sent, valid or not (a body that is no object has its own single issue). */
const sent = {
  when: (payload: { value: unknown }) => typeof payload.value === "object" && payload.value !== null && !Array.isArray(payload.value),
};

/**
 * POST /v1/contacts/{id}/communications. The rules between fields read the body as sent (`when`): zod skips an
 * object's refinements once a field has failed, and a 422 lists every problem at once.
 */
export const CommunicationCreate = Object.entries(TAKES)
  .reduce(
    (schema, [field, types]) =>
      schema.refine(
        (v: Raw) =>
          v[field] === undefined ||
          !(COMMUNICATION_TYPES as readonly unknown[]).includes(v.type) ||
          types.includes(v.type as CommunicationType),
        {
          path: [field],
          message: MISPLACED[field as keyof typeof TAKES],
          params: { code: "not_allowed" },
          ...sent,
        },
      ),
    z.strictObject(fields),
  )
  .refine((v: Raw) => !(v.type === "voicemail" && v.direction === "outbound"), {
    path: ["direction"],
    message: "A voicemail is left by the contact: it is always inbound",
    params: { code: "not_allowed" },
    ...sent,
  })
  .openapi("ContactCommunicationCreate");
export type CommunicationCreate = z.infer<typeof CommunicationCreate>;

export const CommunicationListQuery = listQuery({
  type: z.enum(COMMUNICATION_TYPES).optional().openapi({ description: "Only communications of this type" }),
});
export type CommunicationListQuery = z.infer<typeof CommunicationListQuery>;

export type CommunicationRecord = typeof contactCommunications.$inferSelect;

/** A communication as the API shows it (who logged it stays in the row): here, beside its shape, for the contact's include and the right of access too. */
export const toCommunication = (r: Omit<CommunicationRecord, "organizationId" | "createdBy">): Communication => ({
  id: r.id,
  contactId: r.contactId,
  type: r.type as Communication["type"],
  direction: r.direction as Communication["direction"],
  subject: r.subject,
  body: r.body,
  durationSeconds: r.durationSeconds,
  occurredAt: r.occurredAt,
  metadata: r.metadata,
  createdAt: r.createdAt,
});
