import { and, count, desc, eq, isNull } from "drizzle-orm";
import { decodeNewestFirstCursor, olderThan, paginate } from "../crm/pagination";
import { archiveRows, readTrashed, restoreFrame, restoreRows, trashEntry } from "../crm/trash";
import { type RoleField, type TemplateField, type TemplateRole, templateLinks, templates } from "../db/schema";
import { expectVersion, expectVersionMatch, type VersionedTable, versioned, withRetries } from "../db/write";
import { findDocument, storedPdf } from "../documents/service";
import { commit } from "../events/commit";
import { resourceEvent } from "../events/resource-event";
import { templatePrefix } from "../files/keys";
import { discardUploads, putUploads, settleUploads } from "../files/uploads";
import { type FieldIssue, NotFound, Unprocessable } from "../lib/errors";
import { newId } from "../lib/ids";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { placeFields } from "../signatures/service";
import type { Template, TemplateCreate, TemplatePatch } from "./schemas";

export { templatesErasable } from "./erasure";

type Row = typeof templates.$inferSelect;
type LinkRow = typeof templateLinks.$inferSelect;

const TEMPLATES: VersionedTable = {
  table: templates,
  id: templates.id,
  organizationId: templates.organizationId,
  version: templates.version,
};

/** The template's own copy of its PDF (its prefix goes with it when the trash purges it). */
export const templateFileKey = (organizationId: string, id: string) => `${templatePrefix(organizationId, id)}document.pdf`;

export function toTemplate(row: Row, link: LinkRow | null): Template {
  return versioned(
    {
      id: row.id,
      name: row.name,
      version: row.version,
      documentId: row.documentId,
      title: row.title,
      pageCount: row.pageCount,
      pages: row.pages.map(({ width, height, rotation }) => ({ width, height, rotation })),
      formFields: row.formFields,
      roles: row.roles,
      fields: row.fields,
      publicLink: link && { role: link.role, enabled: link.enabled, createdAt: link.createdAt, disabledAt: link.disabledAt },
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
    },
    row.version,
  );
}

const invalid = (issues: FieldIssue[]) =>
  new Unprocessable("invalid_template", `${issues.length} problem(s) with the template's roles and fields`, issues);

/**
 * Roles and fields checked against the document's pages, all at once (422 invalid_template naming each): role keys
 * unique, someone besides a cc acts, every field on a page of the document with an existing role that fills fields,
 * names unique, every signer with a signature field. The answer is the fields as the template keeps them.
 */
function checkedFields(pages: Row["pages"], roles: TemplateRole[], given: Omit<TemplateField, "id">[]): TemplateField[] {
  const issues: FieldIssue[] = [];
  const issue = (path: (string | number)[], code: string, message: string) => issues.push({ field: path.join("."), path, code, message });
  const owners = new Map<string, TemplateRole["role"]>();
  for (const [i, r] of roles.entries()) {
    if (owners.has(r.key)) issue(["roles", i, "key"], "duplicate_key", `The key ${r.key} is given to more than one role`);
    else owners.set(r.key, r.role);
  }
  if (roles.every((r) => r.role === "cc")) issue(["roles"], "no_actor", "Some role besides a cc must sign, approve or view the document");
  const names = new Set<string>();
  for (const [i, f] of given.entries()) {
    if (names.has(f.name)) issue(["fields", i, "name"], "duplicate_name", `Another field is named ${f.name}`);
    names.add(f.name);
  }
  const specs = given.map(({ role, value, options, validation, ...f }) => ({
    ...f,
    owner: role,
    ...(value === null ? {} : { value }),
    ...(options === null ? {} : { options }),
    ...(validation === null ? {} : { validation }),
  }));
  const placed = placeFields(pages, owners, specs, issue, "role");
  for (const [i, r] of roles.entries())
    if (r.role === "signer" && !placed.get(r.key)?.some((f) => f.type === "signature"))
      issue(["roles", i], "signature_field_required", `The signer role ${r.key} has no signature field`);
  if (issues.length > 0) throw invalid(issues);
  return given.map((f) => ({ ...f, id: newId() }));
}

/** The fields as given (a field's defaults filled in), or the document's text-tag fields when none are. */
function givenFields(input: TemplateCreate["fields"], tagged: RoleField[] | null): Omit<TemplateField, "id">[] {
  if (input)
    return input.map((f) => ({
      type: f.type,
      role: f.role,
      page: f.page,
      x: f.x,
      y: f.y,
      width: f.width,
      height: f.height,
      name: f.name,
      required: f.required ?? (f.type === "signature" || f.type === "initials"),
      readOnly: f.readOnly ?? false,
      value: f.value ?? null,
      options: f.options ?? null,
      validation: f.validation ?? null,
    }));
  const count = new Map<string, number>();
  return (tagged ?? []).map((f) => {
    const n = (count.get(f.type) ?? 0) + 1;
    count.set(f.type, n);
    return { ...f, name: f.name ?? `${f.type}_${n}` };
  });
}

const roleList = (roles: TemplateCreate["roles"]): TemplateRole[] =>
  roles.map((r) => ({ key: r.key, label: r.label, role: r.role, order: r.order }));

/**
 * POST /api/templates: a template from an uploaded document. The template keeps its own copy of the PDF (noted pending,
 * then put, then settled in the row's batch: files/uploads.ts), so the document may later go without it.
 */
export async function createTemplate(ctx: ServiceContext, input: TemplateCreate): Promise<Template> {
  const doc = await findDocument(ctx, input.documentId).catch((err: unknown) => {
    if (!(err instanceof NotFound)) throw err;
    throw invalid([
      { field: "documentId", path: ["documentId"], code: "invalid_reference", message: "No document with this id in your organization" },
    ]);
  });
  if (doc.source !== "upload" || !doc.fileKey || !doc.pages)
    throw invalid([
      {
        field: "documentId",
        path: ["documentId"],
        code: "not_an_upload",
        message: "A template is made from an uploaded PDF (POST /api/documents/uploads)",
      },
    ]);
  const roles = roleList(input.roles);
  const fields = checkedFields(doc.pages, roles, givenFields(input.fields, doc.fields));
  const at = nowIso();
  const id = newId();
  const row: Row = {
    id,
    organizationId: ctx.organizationId,
    name: input.name,
    documentId: doc.id,
    title: doc.title ?? input.name,
    fileKey: templateFileKey(ctx.organizationId, id),
    sha256: doc.sha256,
    pageCount: doc.pages.length,
    pages: doc.pages,
    formFields: doc.formFields ?? [],
    restrictionsRemoved: doc.restrictionsRemoved,
    roles,
    fields,
    createdBy: ctx.actor.userId ?? null,
    createdAt: at,
    updatedAt: at,
    version: 1,
  };
  const bytes = await storedPdf(ctx, doc.fileKey);
  const upload = { key: row.fileKey, bytes, httpMetadata: { contentType: "application/pdf" } };
  await putUploads(ctx, [upload]).catch((err: unknown) => {
    ctx.defer(discardUploads(ctx, [row.fileKey]));
    throw err;
  });
  const template = toTemplate(row, null);
  try {
    await commit(
      ctx,
      [ctx.db.insert(templates).values(row), ...settleUploads(ctx, [row.fileKey])],
      [resourceEvent(ctx, "template.created", template)],
      { answer: template },
    );
  } catch (err) {
    ctx.defer(discardUploads(ctx, [row.fileKey]));
    throw err;
  }
  return template;
}

const mine = (ctx: ServiceContext, id: string) => and(eq(templates.organizationId, ctx.organizationId), eq(templates.id, id));
const linkOf = (ctx: ServiceContext, id: string) =>
  ctx.db
    .select()
    .from(templateLinks)
    .where(and(eq(templateLinks.organizationId, ctx.organizationId), eq(templateLinks.templateId, id)))
    .orderBy(desc(templateLinks.createdAt))
    .limit(1);

/** A template of the caller's organization with its latest public link, in one round trip; 404 otherwise. */
export async function findTemplate(ctx: ServiceContext, id: string): Promise<{ row: Row; link: LinkRow | null }> {
  const [rows, links] = await ctx.db.batch([ctx.db.select().from(templates).where(mine(ctx, id)), linkOf(ctx, id)]);
  const row = rows[0];
  if (!row) throw new NotFound("Template");
  return { row, link: links[0] ?? null };
}

export async function getTemplate(ctx: ServiceContext, id: string): Promise<Template> {
  const { row, link } = await findTemplate(ctx, id);
  return toTemplate(row, link);
}

/** GET /api/templates: newest first, keyset-paginated, the page and its total in one round trip. */
export async function listTemplates(ctx: ServiceContext, q: { limit: number; cursor?: string }) {
  const after = decodeNewestFirstCursor(q.cursor);
  const org = eq(templates.organizationId, ctx.organizationId);
  const [rows, [total], links] = await ctx.db.batch([
    ctx.db
      .select()
      .from(templates)
      .where(after ? and(org, olderThan(templates.createdAt, templates.id, after)) : org)
      .orderBy(desc(templates.createdAt), desc(templates.id))
      .limit(q.limit + 1),
    ctx.db.select({ n: count() }).from(templates).where(org),
    ctx.db
      .select()
      .from(templateLinks)
      .where(and(eq(templateLinks.organizationId, ctx.organizationId), isNull(templateLinks.disabledAt))),
  ]);
  const { page, pagination } = paginate(rows, q.limit, total?.n ?? 0, (r) => ({ at: r.createdAt, id: r.id }));
  const byTemplate = new Map(links.map((l) => [l.templateId, l]));
  return { templates: page.map((r) => toTemplate(r, byTemplate.get(r.id) ?? null)), pagination };
}

/**
 * PATCH /api/templates/{id}: a new version (name, roles, fields), guarded on the version read (and If-Match's). Fields
 * are checked against the roles they will have; envelopes already made keep the fields they were sent with.
 */
export async function patchTemplate(ctx: ServiceContext, id: string, patch: TemplatePatch): Promise<Template> {
  return withRetries(async () => {
    const { row, link } = await findTemplate(ctx, id);
    expectVersionMatch(ctx, row.version);
    const roles = patch.roles ? roleList(patch.roles) : row.roles;
    const given = patch.fields ? givenFields(patch.fields, null) : row.fields.map(({ id: _, ...f }) => f);
    const fields = patch.roles || patch.fields ? checkedFields(row.pages, roles, given) : row.fields;
    const after: Row = { ...row, name: patch.name ?? row.name, roles, fields, updatedAt: nowIso(), version: row.version + 1 };
    const template = toTemplate(after, link);
    await commit(
      ctx,
      [
        expectVersion(ctx.db, TEMPLATES, ctx.organizationId, row),
        ctx.db
          .update(templates)
          .set({ name: after.name, roles, fields, updatedAt: after.updatedAt, version: after.version })
          .where(mine(ctx, id)),
      ],
      [resourceEvent(ctx, "template.updated", template, toTemplate(row, link))],
      { answer: template },
    );
    return template;
  });
}

/**
 * DELETE /api/templates/{id}: to the trash (restorable for 30 days, then purged with its PDF). Its public link stops
 * at once (answers gone) and stays off after a restore.
 */
export async function deleteTemplate(ctx: ServiceContext, id: string): Promise<void> {
  await withRetries(async () => {
    const { row, link } = await findTemplate(ctx, id);
    expectVersionMatch(ctx, row.version);
    const at = nowIso();
    await commit(
      ctx,
      [
        expectVersion(ctx.db, TEMPLATES, ctx.organizationId, row),
        ctx.db
          .update(templateLinks)
          .set({ enabled: false, disabledAt: at })
          .where(
            and(eq(templateLinks.organizationId, ctx.organizationId), eq(templateLinks.templateId, id), isNull(templateLinks.disabledAt)),
          ),
        trashEntry(ctx, "template", id, row.name),
        ...archiveRows(ctx, id, templates, mine(ctx, id)),
      ],
      [resourceEvent(ctx, "template.deleted", toTemplate(row, link))],
    );
  });
}

/** POST /api/templates/{id}/restore: back from the trash (its public link stays disabled: issue a new one). */
export async function restoreTemplate(ctx: ServiceContext, id: string): Promise<Template> {
  // Of racing restores one commits; the others' guard fails, and their retry finds nothing in the trash (404).
  return withRetries(async () => {
    const trashed = await readTrashed<Row>(ctx, "template", id, templates, "Template");
    const { guard, clear } = restoreFrame(ctx, "template", id);
    const template = toTemplate(trashed.record, null);
    await commit(ctx, [guard, restoreRows(ctx.db, id, templates), ...clear], [resourceEvent(ctx, "template.restored", template)], {
      answer: template,
    });
    return template;
  });
}
