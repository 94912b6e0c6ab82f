import { z } from "zod";
import { InsufficientPermission } from "../lib/errors";
import { Template, TemplateListQuery, TemplateUse } from "../templates/schemas";
import { listTemplates } from "../templates/service";
import { useTemplate } from "../templates/use";
import { defineTool, parseWith } from "./tool";

export const listTemplatesTool = defineTool({
  name: "list_templates",
  route: "GET /api/templates",
  title: "List document templates",
  description:
    "The organization's reusable documents, newest first: each with its roles (key, label, signer/approver/viewer/cc, order) and its named fields (which role fills each, its type), the names use_template's `values` fill. A page at a time: pass `cursor` from the previous answer's nextCursor.",
  permission: "templates:read",
  effect: "read",
  input: z.strictObject({
    limit: z.int().min(1).max(100).default(25),
    cursor: z.string().min(1).max(1000).optional().describe("nextCursor of the previous page"),
  }),
  output: z.object({ templates: z.array(Template), nextCursor: z.string().nullable(), total: z.int() }),
  async run({ limit, cursor }, { ctx }) {
    const query = parseWith(TemplateListQuery, { limit: String(limit), ...(cursor ? { cursor } : {}) });
    const { templates, pagination } = await listTemplates(ctx, query);
    return { templates, nextCursor: pagination.nextCursor, total: pagination.total };
  },
});

export const useTemplateTool = defineTool({
  name: "use_template",
  route: "POST /api/templates/{id}/use",
  title: "Send a document made from a template",
  description:
    "Makes a new document from a template and sends it for signature: every role needs a recipient ({name, email} by role key); `values` prefill fields by name (`{value, lock: true}` shows a value the recipient cannot change); `formValues` fill the PDF's own form. The first order is mailed now, each next order when everyone before is done; the signing links go to the recipients by mail, never into this answer. Needs templates:read too.",
  permission: "envelopes:send",
  // Mail sent to people outside the organization cannot be called back.
  effect: "destructive",
  openWorld: true,
  input: z.strictObject({
    templateId: z.string().min(1).max(100).describe("The template's id (list_templates)"),
    recipients: TemplateUse.shape.recipients,
    values: TemplateUse.shape.values,
    formValues: TemplateUse.shape.formValues,
    message: TemplateUse.shape.message,
    expiresInDays: TemplateUse.shape.expiresInDays,
  }),
  output: z.object({
    envelopeId: z.string(),
    documentId: z.string(),
    recipients: z.array(
      z.object({ signerId: z.string(), key: z.string().optional(), name: z.string(), email: z.string(), role: z.string(), order: z.int() }),
    ),
  }),
  async run({ templateId, ...use }, { ctx, meta, granted }) {
    if (!granted.has("templates:read"))
      throw new InsufficientPermission("The use_template tool also needs templates:read, which this access token was not granted");
    const sent = await useTemplate(ctx, templateId, parseWith(TemplateUse, use), meta);
    // The signing links are the recipients' capabilities: they go to them by mail, never into an agent's context.
    const recipients = sent.envelope.signers.map((s) => ({
      signerId: s.id,
      ...(s.key ? { key: s.key } : {}),
      name: s.name,
      email: s.email,
      role: s.role,
      order: s.order,
    }));
    return { envelopeId: sent.envelopeId, documentId: sent.envelope.documentId, recipients };
  },
});

export const templateTools = [listTemplatesTool, useTemplateTool];
