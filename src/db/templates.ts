import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { RoleField, UploadFormField, UploadPage } from "./documents";
import type { RecipientKind } from "./signatures";

/** A template's role: who fills its fields when it is used (issue 45). */
export interface TemplateRole {
  key: string;
  label: string;
  role: RecipientKind;
  order: number;
}
/** A template's field: a RoleField with its own id and a name unique in the template (values are given by name). */
export type TemplateField = RoleField & { id: string; name: string };

/**
 * Reusable documents (issue 45): a copy of an uploaded PDF (its own R2 object, so the document it came from may go)
 * with roles and fields. `version` moves with each change of name, roles or fields; an envelope made from it copies
 * its fields, so a later version changes nothing already sent. A deleted template goes to the trash (crm/trash.ts).
 */
export const templates = sqliteTable(
  "templates",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    name: text().notNull(),
    /** The uploaded document it was made from (it may since have gone). */
    documentId: text().notNull(),
    title: text().notNull(),
    fileKey: text().notNull(),
    sha256: text().notNull(),
    pageCount: integer().notNull(),
    pages: text({ mode: "json" }).$type<UploadPage[]>().notNull(),
    formFields: text({ mode: "json" }).$type<UploadFormField[]>().notNull(),
    restrictionsRemoved: integer({ mode: "boolean" }).notNull().default(false),
    roles: text({ mode: "json" }).$type<TemplateRole[]>().notNull(),
    fields: text({ mode: "json" }).$type<TemplateField[]>().notNull(),
    createdBy: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    version: integer().notNull().default(1),
  },
  (t) => [index("templates_org_created_idx").on(t.organizationId, t.createdAt, t.id)],
);

/**
 * A template's public link (`{app_url}/t/<slug>`): the slug is a capability, kept only as its SHA-256 (the directory
 * finds the organization by the same hash). Issuing a link again disables the one before, which then answers gone.
 */
export const templateLinks = sqliteTable(
  "template_links",
  {
    slugHash: text().primaryKey(),
    organizationId: text().notNull(),
    templateId: text().notNull(),
    /** The role key the visitor fills. */
    role: text().notNull(),
    /** The other roles' recipients, by role key. */
    recipients: text({ mode: "json" }).$type<Record<string, { name: string; email: string }>>().notNull(),
    enabled: integer({ mode: "boolean" }).notNull(),
    createdBy: text(),
    createdAt: text().notNull(),
    disabledAt: text(),
  },
  (t) => [index("template_links_template_idx").on(t.organizationId, t.templateId)],
);

/**
 * A public link's visitor proving their e-mail: the code (hashed) mailed to the address (hashed: nothing personal is
 * kept for a visitor who never signs). Attempts are counted; a used or expired code opens nothing.
 */
export const templateLinkCodes = sqliteTable(
  "template_link_codes",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    slugHash: text().notNull(),
    emailHash: text().notNull(),
    codeHash: text().notNull(),
    attempts: integer().notNull().default(0),
    expiresAt: text().notNull(),
    usedAt: text(),
    createdAt: text().notNull(),
  },
  (t) => [
    index("template_link_codes_lookup_idx").on(t.slugHash, t.emailHash, t.createdAt),
    index("template_link_codes_expires_idx").on(t.expiresAt),
  ],
);
