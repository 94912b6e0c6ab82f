import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Generated documents (spec: Document; DESIGN.md contract 4). `canonical` is the reviewed canonical draft, `sha256`
 * the hash of its canonical JSON (keys sorted), which the certificate of completion names.
 * Status: GENERATED (can be sent for signature), OUT_FOR_SIGNATURE (an envelope is open), SIGNED (an envelope
 * completed); a declined, voided or expired envelope puts the document back to GENERATED.
 */
export interface UploadPage {
  width: number;
  height: number;
  rotation: 0 | 90 | 180 | 270;
  crop: [number, number, number, number];
}
export interface UploadFormField {
  name: string;
  type: "text" | "checkbox" | "radio" | "dropdown" | "signature";
  page: number;
  x: number;
  y: number;
  width: number;
  height: number;
}

type FieldType = "signature" | "initials" | "name" | "email" | "date" | "text" | "number" | "checkbox" | "radio" | "dropdown";
/**
 * A field a PDF's text tag placed (issue 45: `{{signature;role=buyer}}`), or a template's field: where it sits (percent
 * of the page as displayed, as EnvelopeField) and which role fills it.
 */
export interface RoleField {
  type: FieldType;
  role: string;
  page: number;
  x: number;
  y: number;
  width: number;
  height: number;
  name: string | null;
  required: boolean;
  readOnly: boolean;
  value: string | number | boolean | null;
  options: string[] | null;
  validation: { maxLength?: number; min?: number; max?: number; pattern?: string } | null;
}

export const documents = sqliteTable(
  "documents",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    formKey: text().notNull(),
    status: text().$type<"GENERATED" | "OUT_FOR_SIGNATURE" | "SIGNED">().notNull(),
    canonical: text({ mode: "json" }).$type<Record<string, unknown>>().notNull(),
    sha256: text().notNull(),
    /** The deal of the caller's organization this document belongs to, when linked (its obligations carry it). */
    dealId: text(),
    /** `form`: generated from a typed standard form (canonical); `upload`: a brokerage's own PDF (issue 44). */
    source: text().$type<"form" | "upload">().notNull().default("form"),
    /** An upload's title (a form's comes from its form). */
    title: text(),
    /** An upload's stored PDF in R2: the bytes received, or the unencrypted re-import of an owner-password PDF. */
    fileKey: text(),
    pageCount: integer(),
    /** An upload's pages as displayed, and the CropBox and /Rotate that place a box on them (files/pdf-geometry.ts). */
    pages: text({ mode: "json" }).$type<UploadPage[]>(),
    /** The upload's own AcroForm fields (name, type, page, box as displayed). */
    formFields: text({ mode: "json" }).$type<UploadFormField[]>(),
    /** The upload had an owner password (edit restrictions, no password to open) that was removed on import. */
    restrictionsRemoved: integer({ mode: "boolean" }).notNull().default(false),
    /** Search indexing of an upload's text by the queue consumer: pending, done, failed (null: a form's document). */
    textStatus: text().$type<"pending" | "done" | "failed">(),
    /** Fields found from the upload's text tags (`?tags=true`), each for a role key; null when not asked for. */
    fields: text({ mode: "json" }).$type<RoleField[]>(),
    /** The text-tag search of an upload over 20 pages runs in a queue consumer: pending, done, failed (null: none asked). */
    tagsStatus: text().$type<"pending" | "done" | "failed">(),
    /** The template this document was made from (POST /api/templates/{id}/use), and its version then. */
    templateId: text(),
    templateVersion: integer(),
    createdBy: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    version: integer().notNull().default(1),
  },
  (t) => [index("documents_org_created_idx").on(t.organizationId, t.createdAt, t.id)],
);

/** Documents generated per organization and calendar month (UTC): the usage meter, moved in each generation's batch. */
export const documentUsage = sqliteTable(
  "document_usage",
  {
    organizationId: text().notNull(),
    /** YYYY-MM */
    period: text().notNull(),
    used: integer().notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.period] })],
);

/**
 * The overage ledger (spec rule 3: going over the allotment bills, never refuses): one row per document generated
 * past the month's allotment, with its position in the month and the allotment in force, for billing to read.
 */
export const documentOverages = sqliteTable(
  "document_overages",
  {
    documentId: text().primaryKey(),
    organizationId: text().notNull(),
    period: text().notNull(),
    position: integer().notNull(),
    included: integer().notNull(),
    createdAt: text().notNull(),
  },
  (t) => [index("document_overages_org_period_idx").on(t.organizationId, t.period)],
);

/** Messages of the `log` mail provider (development, tests): bodies encrypted, since they carry capability links. */
export const mailOutbox = sqliteTable(
  "mail_outbox",
  {
    id: text().primaryKey(),
    organizationId: text(),
    to: text().notNull(),
    subject: text().notNull(),
    /** AES-GCM encrypted text (lib/secret-box.ts), or the text with links withheld when no MAIL_LOG_KEY is set. */
    body: text().notNull(),
    /** Whether `body` is encrypted (the column keeps its first name, `sealed`). */
    sealed: integer({ mode: "boolean" }).notNull(),
    createdAt: text().notNull(),
  },
  (t) => [index("mail_outbox_to_idx").on(t.to, t.createdAt)],
);
