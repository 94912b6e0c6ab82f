import { z } from "@hono/zod-openapi";
import { pageParams } from "../crm/list-query";
import { FormField, PageSize } from "../documents/schemas";
import { oneLineText } from "../lib/validation";
import { FieldInput, MAX_FIELDS, MAX_SIGNERS, RECIPIENT_KINDS, RecipientInput, SignatureRequest, SignerField } from "../signatures/schemas";

const roleKey = (description: string) => oneLineText(64).openapi({ description, example: "buyer" });

export const TemplateRoleInput = z
  .strictObject({
    key: roleKey("Your label for the role, unique in the template; fields and a use's recipients name it"),
    label: oneLineText(200).openapi({ description: "What the role is, as people read it", example: "Buyer" }),
    role: z.enum(RECIPIENT_KINDS).openapi({ description: "What the role's recipient does (as a recipient's role at send)" }),
    order: z.int().min(1).max(MAX_SIGNERS).default(1).openapi({ description: "The role's turn: one order acts in parallel" }),
  })
  .openapi("TemplateRoleInput");

export const TemplateFieldInput = FieldInput.omit({ recipient: true })
  .extend({
    role: roleKey("The key of the role that fills the field"),
    name: oneLineText(100).openapi({ description: "Unique in the template: a use's `values` fill fields by it" }),
  })
  .openapi("TemplateFieldInput");

const roles = z.array(TemplateRoleInput).min(1).max(MAX_SIGNERS);
const fields = z.array(TemplateFieldInput).max(MAX_FIELDS);

export const TemplateCreate = z
  .strictObject({
    documentId: z.string().min(1).max(100).openapi({ description: "An uploaded document (POST /api/documents/uploads)" }),
    name: oneLineText(200),
    roles,
    fields: fields.optional().openapi({
      description:
        "Where each role fills what; left out: the document's fields found from its text tags (`?tags=true` at upload), each named by its tag's name or its type and place",
    }),
  })
  .openapi("TemplateCreate");
export type TemplateCreate = z.infer<typeof TemplateCreate>;

export const TemplatePatch = z
  .strictObject({ name: oneLineText(200).optional(), roles: roles.optional(), fields: fields.optional() })
  .refine((p) => p.name !== undefined || p.roles !== undefined || p.fields !== undefined, {
    message: "Give name, roles or fields",
    path: ["name"],
  })
  .openapi("TemplatePatch");
export type TemplatePatch = z.infer<typeof TemplatePatch>;

export const TemplateRole = z
  .object({ key: z.string(), label: z.string(), role: z.enum(RECIPIENT_KINDS), order: z.int() })
  .openapi("TemplateRole");

export const TemplateField = SignerField.extend({
  role: z.string().openapi({ description: "The key of the role that fills it" }),
  name: z.string(),
}).openapi("TemplateField");

export const PublicLinkState = z
  .object({
    role: z.string().openapi({ description: "The role the link's visitor fills" }),
    enabled: z.boolean(),
    createdAt: z.string(),
    disabledAt: z.string().nullable(),
  })
  .openapi("TemplatePublicLinkState", { description: "The template's latest public link (its URL is shown once, when issued)" });

export const Template = z
  .object({
    id: z.string(),
    name: z.string(),
    version: z.int().openapi({ description: "Moves with every change; an envelope keeps the fields of the version it was made from" }),
    documentId: z.string().openapi({ description: "The uploaded document the template was made from (the template keeps its own copy)" }),
    title: z.string(),
    pageCount: z.int(),
    pages: z.array(PageSize),
    formFields: z.array(FormField).openapi({ description: "The PDF's own form fields (a use fills them with formValues)" }),
    roles: z.array(TemplateRole),
    fields: z.array(TemplateField),
    publicLink: PublicLinkState.nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Template");
export type Template = z.infer<typeof Template>;

export const TemplateAnswer = z.object({ template: Template }).openapi("TemplateAnswer");

export const TemplateList = z
  .object({
    templates: z.array(Template),
    pagination: z.object({ hasMore: z.boolean(), nextCursor: z.string().nullable(), total: z.int(), limit: z.int() }),
  })
  .openapi("TemplateList");

export const TemplateListQuery = z.strictObject(pageParams);

export const TemplateIdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "id", in: "path" } }),
});

/** A role's recipient at a use: a recipient as at send, without the key, role and order the template gives. */
export const RoleRecipient = RecipientInput.omit({ key: true, role: true, order: true }).openapi("TemplateRoleRecipient");
export type RoleRecipient = z.infer<typeof RoleRecipient>;

const fieldValue = z.union([oneLineText(1000), z.number().finite(), z.boolean()]);
const MAX_MESSAGE = 2000;

export const TemplateUse = z
  .strictObject({
    recipients: z
      .record(oneLineText(64), RoleRecipient)
      .refine((r) => Object.keys(r).length <= MAX_SIGNERS, `At most ${MAX_SIGNERS} recipients`)
      .openapi({ description: "Each role's recipient, by role key: every role needs one" }),
    values: z
      .record(oneLineText(100), z.union([fieldValue, z.strictObject({ value: fieldValue, lock: z.boolean().default(false) })]))
      .refine((v) => Object.keys(v).length <= MAX_FIELDS, `At most ${MAX_FIELDS} values`)
      .optional()
      .openapi({
        description:
          "Prefilled values by field name; `{value, lock: true}` shows the value read-only (the recipient cannot change it). Typed as the field: text, a number, a date YYYY-MM-DD, true/false, an option",
      }),
    formValues: SignatureRequest.shape.formValues,
    mode: z
      .enum(["parallel", "sequential"])
      .optional()
      .openapi({ description: "Recorded on the envelope; the roles' orders set the turns" }),
    message: z
      .string()
      .trim()
      .min(1)
      .max(MAX_MESSAGE)
      .optional()
      .openapi({ description: "Your note to the recipients, in their signing mail and on the signing page" }),
    expiresInDays: SignatureRequest.shape.expiresInDays,
    signerVerification: SignatureRequest.shape.signerVerification,
    reminders: SignatureRequest.shape.reminders,
    dealId: z.string().min(1).max(100).optional().openapi({ description: "Link the new document to a deal of yours" }),
  })
  .openapi("TemplateUse");
export type TemplateUse = z.infer<typeof TemplateUse>;

export const PublicLinkRequest = z
  .strictObject({
    role: oneLineText(64).openapi({ description: "The key of the role the visitor fills (a signer)" }),
    enabled: z.boolean().default(true).openapi({ description: "false: the current link stops working (404 gone)" }),
    recipients: z
      .record(oneLineText(64), RoleRecipient)
      .refine((r) => Object.keys(r).length <= MAX_SIGNERS, `At most ${MAX_SIGNERS} recipients`)
      .default({})
      .openapi({ description: "The other roles' recipients, by role key: every role but the visitor's needs one" }),
  })
  .openapi("TemplatePublicLinkRequest");
export type PublicLinkRequest = z.infer<typeof PublicLinkRequest>;

export const PublicLinkIssued = z
  .object({
    url: z.string().nullable().openapi({ description: "`{app_url}/t/<slug>`, shown only here; null when the link was disabled" }),
    publicLink: PublicLinkState.nullable().openapi({ description: "null: the template never had a link" }),
  })
  .openapi("TemplatePublicLinkIssued");
