import { z } from "@hono/zod-openapi";
import { pageParams } from "../crm/list-query";
import { TAG_TYPES } from "../files/pdf-tags";
import { oneLineText } from "../lib/validation";
import { CANONICALS, FORM_KEYS } from "./forms";

export const DocumentCreate = z
  .strictObject({
    formKey: z.enum(FORM_KEYS).openapi({ example: "on/standard-lease", description: "The form, `<region>/<form-name>`" }),
    canonical: z
      .discriminatedUnion("formKey", CANONICALS)
      .openapi({ description: "The canonical draft, reviewed by a person; its formKey names the same form" }),
    dealId: z.string().min(1).max(100).nullable().optional().openapi({
      description:
        "A deal of your organization this document belongs to; its obligations link to it (an unknown or foreign id is a 400; null: none)",
    }),
  })
  .refine((d) => d.canonical.formKey === d.formKey, {
    message: "canonical.formKey must be the formKey of the request",
    path: ["canonical", "formKey"],
    params: { code: "form_mismatch" },
  })
  .openapi("DocumentCreate");
export type DocumentCreate = z.infer<typeof DocumentCreate>;

export const DOCUMENT_STATUSES = ["GENERATED", "OUT_FOR_SIGNATURE", "SIGNED"] as const;

/** A page as displayed: points after /Rotate, from the CropBox. */
export const PageSize = z
  .object({ width: z.number(), height: z.number(), rotation: z.union([z.literal(0), z.literal(90), z.literal(180), z.literal(270)]) })
  .openapi("PageSize");

export const FormField = z
  .object({
    name: z.string().openapi({ description: "Its fully qualified name (the key of formValues)" }),
    type: z.enum(["text", "checkbox", "radio", "dropdown", "signature"]),
    page: z.int(),
    x: z.number(),
    y: z.number(),
    width: z.number(),
    height: z.number(),
  })
  .openapi("FormField", { description: "A form field of the PDF, its box in percent of its page as displayed (origin top-left)" });

/** POST /api/documents/uploads: the body is the PDF itself. */
export const MAX_UPLOAD_BYTES = 15 * 1024 * 1024;
export const MAX_UPLOAD_PAGES = 500;
export const UploadQuery = z.strictObject({
  title: oneLineText(200)
    .optional()
    .openapi({ description: "The document's title; default: the PDF's own title (its visible text), else Untitled PDF" }),
  dealId: z.string().min(1).max(100).optional().openapi({ description: "A deal of your organization this document belongs to" }),
  tags: z
    .enum(["true", "false"])
    .transform((v) => v === "true")
    .optional()
    .openapi({
      type: "string",
      enum: ["true", "false"],
      description:
        "true: the PDF's text tags `{{type;role=<key>;name=<name>;required=true|false;options=a|b}}` become the document's `fields` and are taken out of the stored PDF",
    }),
});

/** The formKey of an uploaded document: no typed form derives its parties or obligations. */
export const UPLOAD_FORM_KEY = "upload";

/** Where a field sits (percent of its page as displayed) and what it takes: a role's field here, a recipient's (SignerField) alike. */
export const placedField = {
  page: z.int(),
  x: z.number(),
  y: z.number(),
  width: z.number(),
  height: z.number(),
  name: z.string().nullable(),
  required: z.boolean(),
  readOnly: z.boolean(),
  value: z.union([z.string(), z.number(), z.boolean()]).nullable(),
  options: z.array(z.string()).nullable(),
  validation: z
    .object({ maxLength: z.int().optional(), min: z.number().optional(), max: z.number().optional(), pattern: z.string().optional() })
    .nullable(),
};

/** A field for a role (a recipient's key at send), placed by a text tag: as FieldInput, with `role` for `recipient`. */
export const RoleField = z
  .object({
    type: z.enum(TAG_TYPES),
    role: z.string().openapi({ description: "The role key: a send's recipient with this `key` fills the field" }),
    ...placedField,
  })
  .openapi("RoleField", { description: "A field for a role, its box in percent of its page as displayed (origin top-left)" });

export const Document = z
  .object({
    id: z.string(),
    status: z
      .enum(DOCUMENT_STATUSES)
      .openapi({ description: "GENERATED (can be sent for signature), OUT_FOR_SIGNATURE (an envelope is open), SIGNED" }),
    formKey: z.string(),
    canonical: z.record(z.string(), z.unknown()),
    sha256: z
      .string()
      .openapi({ description: "SHA-256 of the canonical draft's JSON with sorted keys; the certificate of completion names it" }),
    dealId: z.string().nullable().openapi({ description: "The linked deal, or null" }),
    source: z.enum(["form", "upload"]).openapi({
      description: "form: generated from a typed standard form; upload: your own PDF (POST /api/documents/uploads; formKey `upload`)",
    }),
    title: z.string().openapi({ description: "The form's title, or the upload's" }),
    pageCount: z.int().optional().openapi({ description: "An uploaded document's pages" }),
    pages: z
      .array(PageSize)
      .optional()
      .openapi({ description: "An uploaded document's pages as displayed: points after /Rotate, from the CropBox" }),
    formFields: z
      .array(FormField)
      .optional()
      .openapi({ description: "An uploaded PDF's own form fields (fill them with formValues at send)" }),
    restrictionsRemoved: z.boolean().optional().openapi({
      description: "The upload had an owner password (edit restrictions, no password to open); its pages were re-imported without it",
    }),
    textStatus: z.enum(["pending", "done", "failed"]).optional().openapi({
      description: "An uploaded document's text extraction for search (/api/documents/search finds it once done)",
    }),
    fields: z.array(RoleField).nullable().optional().openapi({
      description:
        "An upload's fields from its text tags (`?tags=true`), each for a role; a send that gives no `fields` takes these, each for the recipient whose `key` is its role. null: tags not asked for, or not found (yet)",
    }),
    tagsStatus: z.enum(["pending", "done", "failed"]).nullable().optional().openapi({
      description:
        "An upload's text-tag search: done, or pending while a queue consumer searches a PDF of more than 20 pages (then done, or failed when a tag could not be read: no fields); null without `?tags=true`",
    }),
    templateId: z.string().optional().openapi({ description: "The template this document was made from (POST /api/templates/{id}/use)" }),
    templateVersion: z.int().optional().openapi({ description: "The template's version it was made from" }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Document");
export type Document = z.infer<typeof Document>;

export const UploadedDocument = z.object({ document: Document }).openapi("UploadedDocument");

export const DocumentList = z.object({
  documents: z.array(Document),
  pagination: z.object({ hasMore: z.boolean(), nextCursor: z.string().nullable(), total: z.int(), limit: z.int() }),
});

export const DocumentListQuery = z.strictObject(pageParams);

export const Usage = z
  .object({
    used: z.int().openapi({ description: "Documents generated this calendar month (UTC)" }),
    included: z.int().nullable().openapi({
      description: "The plan's allotment (DOCUMENTS_INCLUDED_PER_MONTH); null when unset. Going over is billed as overage, never refused.",
    }),
    periodLabel: z.string().openapi({ example: "November 2026" }),
  })
  .openapi("Usage");

export const DocumentIdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "id", in: "path" } }),
});
