import { z } from "@hono/zod-openapi";
import { Address } from "../contacts/schemas";
import { listQuery } from "../crm/list-query";
import { oneLineText } from "../lib/validation";

export const LEAD_TYPES = ["inquiry", "showing_request", "offer", "general"] as const;

/** A name a form may leave empty: "" is as good as absent (it never blanks what a contact has). */
const name = z.union([z.literal(""), oneLineText(100)]).optional();

/** A lead's source, as contacts store it: "Zillow", "open-house" and "OPEN_HOUSE" are all OPEN_HOUSE-style codes. */
/** What a lead's source may be (routing rules match on it: organization/service.ts). */
export const LEAD_SOURCE = /^[A-Za-z][A-Za-z0-9_ -]{0,39}$/;

const source = z
  .string()
  .trim()
  .regex(LEAD_SOURCE, { message: "1–40 letters, digits, spaces, dashes or underscores, starting with a letter" })
  .overwrite((v) => v.toUpperCase().replace(/[ -]+/g, "_"))
  .openapi({
    example: "ZILLOW",
    description: "Where the lead came from; stored in capitals with underscores (`open-house` is `OPEN_HOUSE`) as a new contact's `source`",
  });

const LeadPerson = z
  .strictObject({
    firstName: name,
    lastName: name,
    emails: z.array(z.email().max(254)).max(10).default([]).openapi({ description: "The first is a new contact's `email`" }),
    phones: z.array(z.string().trim().min(1).max(40)).max(10).default([]).openapi({
      description:
        "As written: `(415) 555-0100`, `+1 415-555-0100`; without a country code, in the organization's `settings.defaultPhoneRegion`",
    }),
    address: Address.optional().openapi({ description: "Where the person lives; its zipCode routes a lead that names no property" }),
  })
  .openapi("LeadPerson");

const LeadProperty = z
  .strictObject({
    address: z.strictObject({
      street: oneLineText(200),
      zipCode: oneLineText(20),
      city: oneLineText(100).optional(),
      state: oneLineText(100).optional(),
    }),
  })
  .openapi("LeadProperty");

export const LeadCreate = z
  .strictObject({
    source,
    sourceEventId: z.string().min(1).max(200).optional().openapi({
      description:
        "The source's id of this lead: the same source and sourceEventId again answers the first answer (and writes nothing). Without it every post is a new intake.",
    }),
    type: z.enum(LEAD_TYPES).default("general"),
    person: LeadPerson,
    message: z.string().max(5000).optional(),
    tags: z
      .array(
        oneLineText(50).refine((t) => !t.includes(","), { message: "A tag cannot contain a comma", params: { code: "invalid_character" } }),
      )
      .max(20)
      .optional()
      .openapi({ description: "Tags a new contact gets; `settings.leadRouting` rules may route by them (`match.tag`)" }),
    propertyId: z.string().min(1).max(100).optional().openapi({ description: "A property of your organization the lead asks about" }),
    property: LeadProperty.optional().openapi({
      description: "Or the property by its address: a listing of yours at exactly this street and zip code is named",
    }),
  })
  .superRefine((lead, ctx) => {
    if (lead.person.emails.length === 0 && lead.person.phones.length === 0) {
      ctx.addIssue({
        code: "custom",
        path: ["person"],
        message: "A lead needs an e-mail or a phone number",
        params: { code: "contact_point_required" },
      });
    }
    if (lead.propertyId !== undefined && lead.property !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["property"],
        message: "Name the property by propertyId or by property.address, not both",
        params: { code: "ambiguous_property" },
      });
    }
  })
  .openapi("LeadCreate");
export type LeadCreate = z.infer<typeof LeadCreate>;

export const LeadIntake = z
  .object({
    contactId: z.string(),
    created: z.boolean().openapi({ description: "true: a new contact (status 201); false: an existing one matched (200)" }),
    matchedBy: z.enum(["email", "phone"]).nullable(),
    assignedTo: z
      .string()
      .nullable()
      .openapi({ description: "The contact's assignee: on a new contact, whom lead routing chose (null: no user accepts leads)" }),
    conflicts: z
      .array(z.string())
      .openapi({ description: "Other contacts the lead's phone numbers matched when its e-mail matched this one" }),
  })
  .openapi("LeadIntake");
export type LeadIntake = z.infer<typeof LeadIntake>;

/**
 * What a credential that may not read contacts is answered, whatever the lead was: the same 202 and body for
 * a match, a new contact and a lead kept for review, so a web form's key learns nothing about who is a client.
 */
export const LeadReceived = z
  .object({
    received: z.literal(true),
    reviewId: z.string().optional().openapi({
      description:
        "To a credential that may read contacts only: the lead was kept for review (phone numbers only, matching nobody), as `GET /v1/leads/reviews` lists it",
    }),
  })
  .openapi("LeadReceived");
export type LeadReceived = z.infer<typeof LeadReceived>;

export const LeadReview = z
  .object({
    id: z.string(),
    source: z.string(),
    sourceEventId: z.string().nullable(),
    type: z.enum(LEAD_TYPES),
    person: z.object({
      firstName: z.string().nullable(),
      lastName: z.string().nullable(),
      phones: z.array(z.string()),
      address: Address.nullable(),
    }),
    message: z.string().nullable(),
    propertyId: z.string().nullable().openapi({ description: "The property of yours the lead asked about" }),
    createdAt: z.string(),
  })
  .openapi("LeadReview");
export type LeadReview = z.infer<typeof LeadReview>;

export const LeadReviewListQuery = listQuery({});
export type LeadReviewListQuery = z.infer<typeof LeadReviewListQuery>;

export const LeadReviewAccept = z
  .strictObject({
    email: z.email().max(254).openapi({ description: "The person's e-mail: the new contact's `email`, or the contact it matches" }),
  })
  .openapi("LeadReviewAccept");
export type LeadReviewAccept = z.infer<typeof LeadReviewAccept>;
