import type { documents, TemplateField } from "../db/schema";
import type { EnvelopeSource } from "../db/signatures";
import { UPLOAD_FORM_KEY } from "../documents/schemas";
import { linkedDeal, storedPdf, toDocument } from "../documents/service";
import { uploadKey } from "../files/keys";
import { newEvent } from "../events/outbox";
import { resourceEvent } from "../events/resource-event";
import { discardUploads, putUploads, settleUploads } from "../files/uploads";
import { type FieldIssue, Unprocessable } from "../lib/errors";
import { newId } from "../lib/ids";
import { nowIso } from "../lib/time";
import type { RequestMeta, ServiceContext } from "../service-context";
import type { SignatureRequest } from "../signatures/schemas";
import { sendForSignature, valueProblem } from "../signatures/service";
import type { RoleRecipient, TemplateUse } from "./schemas";
import { findTemplate } from "./service";

type TemplateRow = Awaited<ReturnType<typeof findTemplate>>["row"];
type DocumentRow = typeof documents.$inferSelect;

/**
 * The send a use of the template makes: each role's recipient under the role's key, role and order, each field for its
 * role with the value given by its name (`lock` shows it read-only). Every problem at once in one 422
 * (invalid_recipients, as a send's): a role without a recipient, a recipient for no role, a value for no field or
 * one its field would refuse.
 */
function requestOf(template: TemplateRow, input: TemplateUse): SignatureRequest {
  const issues: FieldIssue[] = [];
  const issue = (path: string[], code: string, message: string) => issues.push({ field: path.join("."), path, code, message });
  const roles = new Set(template.roles.map((r) => r.key));
  for (const r of template.roles)
    if (!input.recipients[r.key]) issue(["recipients", r.key], "recipient_required", `The role ${r.key} (${r.label}) has no recipient`);
  for (const key of Object.keys(input.recipients))
    if (!roles.has(key)) issue(["recipients", key], "unknown_role", `The template has no role ${key}`);

  const byName = new Map(template.fields.map((f) => [f.name, f]));
  const given = new Map<string, { value: string | number | boolean; lock: boolean }>();
  for (const [name, v] of Object.entries(input.values ?? {})) {
    const field = byName.get(name);
    const value = typeof v === "object" ? v : { value: v, lock: false };
    if (!field) issue(["values", name], "unknown_field", "The template has no field with this name");
    else {
      const problem = valueProblem(field, value.value);
      if (problem) issue(["values", name], "invalid_value", problem);
      else given.set(name, value);
    }
  }
  if (issues.length > 0)
    throw new Unprocessable("invalid_recipients", `${issues.length} problem(s) with the recipients and values`, issues);

  return {
    mode: input.mode ?? "parallel",
    ...(input.expiresInDays === undefined ? {} : { expiresInDays: input.expiresInDays }),
    ...(input.signerVerification === undefined ? {} : { signerVerification: input.signerVerification }),
    ...(input.reminders === undefined ? {} : { reminders: input.reminders }),
    recipients: template.roles.map((r) => ({ ...(input.recipients[r.key] as RoleRecipient), key: r.key, role: r.role, order: r.order })),
    fields: template.fields.map((f) => fieldInput(f, given.get(f.name))),
    ...(input.formValues ? { formValues: input.formValues } : {}),
  };
}

function fieldInput(f: TemplateField, given: { value: string | number | boolean; lock: boolean } | undefined) {
  const value = given?.value ?? f.value;
  return {
    recipient: f.role,
    type: f.type,
    page: f.page,
    x: f.x,
    y: f.y,
    width: f.width,
    height: f.height,
    name: f.name,
    required: f.required,
    readOnly: f.readOnly || (given?.lock ?? false),
    ...(value === null ? {} : { value }),
    ...(f.options ? { options: f.options } : {}),
    ...(f.validation ? { validation: f.validation } : {}),
  };
}

/**
 * POST /api/templates/{id}/use (and a public link's visitor, `source: public_link`): a new document from the
 * template's PDF and its envelope, answered as a send is. The document's row, its copy of the PDF (noted pending, put,
 * settled in the batch) and its events commit in the send's own batch: a refused send leaves no document behind.
 */
export async function useTemplate(
  ctx: ServiceContext,
  templateId: string,
  input: TemplateUse,
  meta: RequestMeta,
  source: Exclude<EnvelopeSource, "api"> = "template",
  verifiedKey?: string,
) {
  const { row: template } = await findTemplate(ctx, templateId);
  const request = requestOf(template, input);
  const dealGuard = await linkedDeal(ctx, input.dealId);
  const at = nowIso();
  const id = newId();
  const key = uploadKey(ctx.organizationId, id);
  const row: DocumentRow = {
    id,
    organizationId: ctx.organizationId,
    formKey: UPLOAD_FORM_KEY,
    status: "GENERATED",
    canonical: {},
    sha256: template.sha256,
    dealId: input.dealId ?? null,
    source: "upload",
    title: template.title,
    fileKey: key,
    pageCount: template.pageCount,
    pages: template.pages,
    formFields: template.formFields,
    restrictionsRemoved: template.restrictionsRemoved,
    textStatus: "pending",
    fields: null,
    tagsStatus: null,
    templateId: template.id,
    templateVersion: template.version,
    createdBy: ctx.actor.userId ?? null,
    createdAt: at,
    updatedAt: at,
    version: 1,
  };
  const bytes = await storedPdf(ctx, template.fileKey);
  const httpMetadata = { contentType: "application/pdf", contentDisposition: `inline; filename="document-${id}.pdf"` };
  await putUploads(ctx, [{ key, bytes, httpMetadata }]).catch((err: unknown) => {
    ctx.defer(discardUploads(ctx, [key]));
    throw err;
  });
  try {
    return await sendForSignature(ctx, id, request, meta, {
      create: {
        row,
        statements: [...dealGuard, ...settleUploads(ctx, [key])],
        events: [
          newEvent(ctx, "DOCUMENT_UPLOADED", { documentId: id, sha256: row.sha256, pageCount: row.pageCount }),
          resourceEvent(ctx, "document.created", toDocument({ ...row, status: "OUT_FOR_SIGNATURE" })),
        ],
      },
      source,
      templateId: template.id,
      ...(verifiedKey ? { verifiedKey } : {}),
      ...(input.message ? { message: input.message } : {}),
    });
  } catch (err) {
    ctx.defer(discardUploads(ctx, [key]));
    throw err;
  }
}
