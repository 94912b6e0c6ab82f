import { z } from "@hono/zod-openapi";
import { pageParams } from "../crm/list-query";
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
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Document");
export type Document = z.infer<typeof Document>;

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
