import { z } from "@hono/zod-openapi";
import { Deal } from "../deals/schemas";
import { sortParam } from "../crm/keyset";
import { CUSTOM_SORT, CustomFieldsInput, CustomFieldValues, type CustomSortField, withCustomFieldParams } from "../crm/custom-fields";
import { exportQuery } from "../crm/export";
import { csv, intParam, pageParams } from "../crm/list-query";
import { dateBoundParam, isRelativeBound } from "../crm/date-bounds";
import { searchParam } from "../crm/search";
import { boundedJsonObject } from "../lib/json-bounds";
import { oneLineText, pattern } from "../lib/validation";
import { Communication, INCLUDED_COMMUNICATIONS } from "../communications/schemas";

// Enumerations of the spec (Contact, Property types).
export const CONTACT_TYPES = ["LEAD", "CLIENT", "PAST_CLIENT", "REFERRAL", "VENDOR"] as const;
export const CONTACT_STATUSES = ["ACTIVE", "INACTIVE", "CONVERTED", "DISQUALIFIED", "DO_NOT_CONTACT"] as const;
export const PROPERTY_TYPES = [
  "SINGLE_FAMILY",
  "CONDO",
  "TOWNHOUSE",
  "MULTI_FAMILY",
  "LAND",
  "COMMERCIAL",
  "INDUSTRIAL",
  "MIXED_USE",
] as const;
// The spec leaves these value lists open ("not shown"); these are ours, documented in /docs.
export const COMMUNICATION_METHODS = ["EMAIL", "PHONE", "SMS", "ANY"] as const;
export const ACTIVITY_TYPES = [
  "EMAIL_SENT",
  "EMAIL_RECEIVED",
  "PHONE_CALL",
  "SMS_SENT",
  "SMS_RECEIVED",
  "MEETING",
  "SHOWING",
  "NOTE",
  "TASK",
  "OTHER",
] as const;
/** Read-only Contact fields: accepted and ignored on create and update, so a fetched contact can be sent back. */
export const READ_ONLY_FIELDS = ["id", "organizationId", "createdAt", "updatedAt", "lastContactedAt"] as const;

const text = oneLineText;
const phone = pattern(/^\+?(?=[ ().-]*[0-9])[0-9 ().-]{3,30}( ?(x|ext\.?) ?\d{1,6})?$/i, "invalid_phone", "Invalid phone number");
const code = pattern(/^[A-Z][A-Z0-9_]{0,39}$/, "invalid_code", "Must be an UPPER_SNAKE_CASE code");
/** A tag: one line, and no comma, since the list filter takes tags comma-separated. */
const tag = oneLineText(50).refine((t) => !t.includes(","), {
  message: "A tag cannot contain a comma",
  params: { code: "invalid_character" },
});
/** Tags a contact carries at most. */
export const MAX_TAGS = 50;

export const Address = z
  .strictObject({
    street: text(200).optional(),
    city: text(100).optional(),
    state: text(100).optional(),
    zipCode: text(20).optional(),
    country: text(100).optional(),
  })
  .openapi("ContactAddress");

export const Preferences = z
  .strictObject({
    communicationMethod: z.enum(COMMUNICATION_METHODS).optional(),
    propertyTypes: z.array(z.enum(PROPERTY_TYPES)).max(PROPERTY_TYPES.length).optional(),
    priceRange: z
      .strictObject({ min: z.number().nonnegative().optional(), max: z.number().nonnegative().optional() })
      .refine((r) => r.min === undefined || r.max === undefined || r.min <= r.max, {
        message: "priceRange.min must not exceed priceRange.max",
        path: ["min"],
        params: { code: "invalid_price_range" },
      })
      .optional(),
    locations: z.array(text(100)).max(50).optional(),
  })
  .openapi("ContactPreferences");

/** Fields a client may write; `calculateLeadScore` asks for the computed score instead of a given one. */
const writable = {
  firstName: text(100),
  lastName: text(100),
  email: z.email().max(254),
  phone: phone.nullable().optional(),
  secondaryPhone: phone.nullable().optional(),
  address: Address.nullable().optional(),
  type: z.enum(CONTACT_TYPES).optional(),
  status: z.enum(CONTACT_STATUSES).optional(),
  source: code.nullable().optional().openapi({
    example: "WEBSITE",
    description: "e.g. WEBSITE, REFERRAL, OPEN_HOUSE, SOCIAL_MEDIA, PORTAL, COLD_CALL, EMAIL_CAMPAIGN, SIGN_CALL, PAST_CLIENT, OTHER",
  }),
  leadScore: z.int().min(0).max(100).nullable().optional(),
  tags: z.array(tag).max(MAX_TAGS).optional(),
  notes: z.string().max(10_000).nullable().optional(),
  preferences: Preferences.nullable().optional(),
  assignedTo: z.string().min(1).max(100).nullable().optional().openapi({ description: "Id of a user (agent) of your organization" }),
  calculateLeadScore: z.boolean().optional(),
  customFields: CustomFieldsInput.optional(),
};
const readOnly = Object.fromEntries(READ_ONLY_FIELDS.map((f) => [f, z.unknown().optional()])) as Record<
  (typeof READ_ONLY_FIELDS)[number],
  z.ZodOptional<z.ZodUnknown>
>;

/** Unknown fields are rejected (422 unknown_field); read-only fields are ignored. */
export const ContactCreate = z.strictObject({ ...writable, ...readOnly }).openapi("ContactCreate");
export type ContactCreate = z.infer<typeof ContactCreate>;

export const ContactUpdate = z
  .strictObject({
    ...writable,
    firstName: writable.firstName.optional(),
    lastName: writable.lastName.optional(),
    email: writable.email.optional(),
    ...readOnly,
  })
  .openapi("ContactUpdate");
export type ContactUpdate = z.infer<typeof ContactUpdate>;

export const Activity = z
  .object({
    id: z.string(),
    type: z.string(),
    description: z.string().nullable(),
    createdAt: z.string(),
    scheduledAt: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()).nullable(),
  })
  .openapi("ContactActivity");

/** Activity metadata is free-form JSON, bounded so that an activity always fits in a page and in an event. */
export const MAX_METADATA_CHARS = 8 * 1024;
export type Activity = z.infer<typeof Activity>;

export const ActivityCreate = z
  .strictObject({
    type: z.enum(ACTIVITY_TYPES),
    description: z.string().max(5000).optional(),
    scheduledAt: z.iso.datetime({ offset: true }).optional(),
    metadata: boundedJsonObject({ maxChars: MAX_METADATA_CHARS }).optional(),
  })
  .openapi("ContactActivityCreate");
export type ActivityCreate = z.infer<typeof ActivityCreate>;

/** Activities embedded per contact by include=activities; the activities route pages through the rest. */
export const INCLUDED_ACTIVITIES = 5;

export const Contact = z
  .object({
    id: z.string(),
    organizationId: z.string(),
    firstName: z.string(),
    lastName: z.string(),
    email: z.string(),
    phone: z.string().nullable(),
    secondaryPhone: z.string().nullable(),
    address: Address.nullable(),
    type: z.enum(CONTACT_TYPES),
    status: z.enum(CONTACT_STATUSES),
    source: z.string().nullable(),
    leadScore: z.int().nullable(),
    tags: z.array(z.string()),
    notes: z.string().nullable(),
    preferences: Preferences.nullable(),
    assignedTo: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    lastContactedAt: z.string().nullable(),
    customFields: CustomFieldValues,
    activities: z
      .array(Activity)
      .optional()
      .openapi({
        description: `With include=activities: the ${INCLUDED_ACTIVITIES} most recent (GET …/activities pages through all of them)`,
      }),
    deals: z.array(Deal).optional().openapi({ description: "With include=deals: the newest 20 deals of the contact" }),
    communications: z
      .array(Communication)
      .optional()
      .openapi({
        description: `With include=communications: the ${INCLUDED_COMMUNICATIONS} most recent by occurredAt (GET …/communications pages through all of them)`,
      }),
  })
  .openapi("Contact");
export type Contact = z.infer<typeof Contact>;

export const CONTACT_FIELDS = Object.keys(Contact.shape).filter(
  (k) => !["activities", "deals", "communications"].includes(k),
) as (keyof Contact)[];
export const INCLUDES = ["activities", "deals", "communications"] as const;
export type Include = (typeof INCLUDES)[number];

export const ContactTag = z
  .object({ name: z.string(), color: z.string().openapi({ example: "#2563eb" }), count: z.int() })
  .openapi("ContactTag");
export const TagsAdd = z.strictObject({ tags: z.array(tag).min(1).max(MAX_TAGS) }).openapi("ContactTagsAdd");

export const BulkUpdate = z
  .strictObject({
    contactIds: z.array(z.string().min(1).max(100)).min(1).max(100),
    updates: ContactUpdate.omit({ email: true }).openapi({
      description: "Contact fields to set on every listed contact (not email, which is unique per contact)",
    }),
  })
  .openapi("ContactBulkUpdate");
export type BulkUpdate = z.infer<typeof BulkUpdate>;

export const BulkResult = z.object({
  updated: z.int(),
  failed: z.int(),
  results: z.array(z.object({ id: z.string(), success: z.boolean() })),
});

export const IdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "id", in: "path" } }),
});

export const SORT_FIELDS = ["createdAt", "updatedAt", "lastName", "leadScore"] as const;
export type SortField = (typeof SORT_FIELDS)[number];

const contactFilters = {
  q: searchParam(true, "first and last names, e-mail, phones by their digits written any way, notes and tags"),
  type: z.enum(CONTACT_TYPES).optional(),
  status: z.enum(CONTACT_STATUSES).optional(),
  source: z.string().min(1).max(40).optional(),
  assignedTo: z.string().min(1).max(100).optional().openapi({ description: "A user's id, or `none`: the contacts assigned to nobody" }),
  email: z.email().max(254).optional().openapi({
    description: "Ours: the contact with exactly this e-mail address, in any case (at most one: addresses are unique per organization)",
  }),
  tags: csv(tag)
    .optional()
    .openapi({ type: "string", description: "Comma-separated, at most 20; a contact matches when it has all of them" }),
  "leadScore[gte]": intParam(0, 100).optional(),
  "leadScore[lte]": intParam(0, 100).optional(),
  "createdAt[gte]": dateBoundParam.optional(),
  "createdAt[lte]": dateBoundParam.optional(),
  lastContactedAt: z.enum(["never"]).optional().openapi({ description: "`never`: the contacts nobody has been in touch with yet" }),
  "lastContactedAt[gte]": dateBoundParam.optional(),
  "lastContactedAt[lte]": dateBoundParam.optional(),
  hasOpenTask: z
    .enum(["true", "false"])
    .optional()
    .openapi({ description: "true: the contacts with at least one open task; false: those without any" }),
  sort: sortParam<SortField, CustomSortField>(SORT_FIELDS, "leadScore:desc,createdAt:desc", CUSTOM_SORT),
  fields: csv(z.enum(CONTACT_FIELDS as [string, ...string[]]), CONTACT_FIELDS.length)
    .optional()
    .openapi({ type: "string", example: "id,firstName,lastName,email", description: "Projection; id is always returned" }),
};
/** The date bounds of the contact lists: resolved at the request's time (crm/date-bounds.ts) before the SQL is built. */
export const CONTACT_DATE_BOUNDS = ["createdAt[gte]", "createdAt[lte]", "lastContactedAt[gte]", "lastContactedAt[lte]"] as const;

const contactRanges = (
  q: {
    "leadScore[gte]"?: number;
    "leadScore[lte]"?: number;
    "createdAt[gte]"?: string;
    "createdAt[lte]"?: string;
    lastContactedAt?: string;
    "lastContactedAt[gte]"?: string;
    "lastContactedAt[lte]"?: string;
  },
  ctx: z.RefinementCtx,
) => {
  const lo = q["leadScore[gte]"];
  const hi = q["leadScore[lte]"];
  if (lo !== undefined && hi !== undefined && lo > hi)
    ctx.addIssue({
      code: "custom",
      path: ["leadScore[gte]"],
      message: "leadScore[gte] exceeds leadScore[lte]",
      params: { code: "invalid_range" },
    });
  for (const field of ["createdAt", "lastContactedAt"] as const) {
    const from = q[`${field}[gte]`];
    const to = q[`${field}[lte]`];
    // Two absolute bounds are compared now; a relative one moves with time, so either way round may be meant.
    if (from && to && !isRelativeBound(from) && !isRelativeBound(to) && from > to)
      ctx.addIssue({
        code: "custom",
        path: [`${field}[gte]`],
        message: `${field}[gte] is after ${field}[lte]`,
        params: { code: "invalid_range" },
      });
  }
  if (q.lastContactedAt === "never")
    for (const bound of ["lastContactedAt[gte]", "lastContactedAt[lte]"] as const)
      if (q[bound])
        ctx.addIssue({
          code: "custom",
          path: [bound],
          message: `${bound} cannot be combined with lastContactedAt=never`,
          params: { code: "invalid_combination" },
        });
};
export const ContactListQuery = withCustomFieldParams(
  z.strictObject({
    ...pageParams,
    ...contactFilters,
    include: csv(z.enum(INCLUDES)).optional().openapi({ type: "string", example: "activities" }),
  }),
).superRefine(contactRanges);
export type ContactListQuery = z.infer<typeof ContactListQuery>;
/** The page and shape parameters of a contact list whose filters are given elsewhere (a smart list's contacts). */
export const ContactPageQuery = z.strictObject({
  ...pageParams,
  fields: contactFilters.fields,
  include: csv(z.enum(INCLUDES)).optional().openapi({ type: "string", example: "activities" }),
});
/** GET /v1/contacts/export: the list's filters, `q`, sort and `fields`, and the format. */
export const ContactExportQuery = withCustomFieldParams(exportQuery(contactFilters)).superRefine(contactRanges);

export const ContactReadQuery = z.strictObject({
  include: csv(z.enum(INCLUDES)).optional().openapi({ type: "string", example: "activities" }),
});

export const ContactDeleteQuery = z.strictObject({
  erase: z
    .enum(["true", "false"])
    .optional()
    .openapi({ description: "true: erase the person now instead of moving the contact to the trash (needs contacts:erase)" }),
});
