import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { RESTORE_DAYS } from "../crm/trash";
import { NoQuery } from "../crm/list-query";
import { API, apiError, apiJson } from "../platform/api-family";
import { requirePermission, serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { ETAG_HEADER, withEtag } from "../platform/etag";
import { validationHook } from "../platform/openapi";
import { keepAnswerInBatch } from "../platform/idempotency";
import { requestMeta } from "../platform/request-meta";
import { defineRoute, jsonBody } from "../platform/route";
import { SignatureCreated } from "../signatures/schemas";
import { issuePublicLink } from "./public-link";
import {
  PublicLinkIssued,
  PublicLinkRequest,
  type Template,
  TemplateAnswer,
  TemplateCreate,
  TemplateIdParam,
  TemplateList,
  TemplateListQuery,
  TemplatePatch,
  TemplateUse,
} from "./schemas";
import { createTemplate, deleteTemplate, getTemplate, listTemplates, patchTemplate, restoreTemplate } from "./service";
import { useTemplate } from "./use";

const tags = ["Templates"];
const security = [{ bearerAuth: [] }];
const NOT_FOUND = { 404: apiError("No template with this id in your organization") };
const INVALID = { 422: apiError("Every problem with the roles and fields at once (invalid_template, with issues[])") };
const STALE = { 412: apiError("If-Match named a version the template is no longer at (precondition_failed)") };

const create = defineRoute(API, {
  operationId: "createTemplate",
  method: "post",
  path: "/api/templates",
  tags,
  security,
  summary: "Make a template from an uploaded document",
  description: `Roles (who fills what, in which order) and fields (as at a send, each for a role and with a name unique in the
template). Left without fields, the template takes the document's fields found from its text tags. The template keeps its own
copy of the PDF. Emits template.created.`,
  request: jsonBody(TemplateCreate),
  responses: { 201: apiJson("The template", TemplateAnswer, ETAG_HEADER), ...INVALID },
});

const list = defineRoute(API, {
  operationId: "listTemplates",
  method: "get",
  path: "/api/templates",
  tags,
  security,
  summary: "List templates, newest first",
  request: { query: TemplateListQuery },
  responses: { 200: apiJson("A page of templates", TemplateList) },
});

const read = defineRoute(API, {
  operationId: "getTemplate",
  method: "get",
  path: "/api/templates/{id}",
  tags,
  security,
  summary: "A template with its roles, fields and public link state",
  request: { params: TemplateIdParam, query: NoQuery },
  responses: { 200: apiJson("The template", TemplateAnswer, ETAG_HEADER), ...NOT_FOUND },
});

const patch = defineRoute(API, {
  operationId: "updateTemplate",
  method: "patch",
  path: "/api/templates/{id}",
  tags,
  security,
  summary: "Change a template's name, roles or fields (a new version)",
  description:
    "The version moves on; envelopes already made keep the fields they were sent with. Fields are checked against the roles the template will have. Honours If-Match. Emits template.updated.",
  request: { params: TemplateIdParam, ...jsonBody(TemplatePatch) },
  responses: { 200: apiJson("The template", TemplateAnswer, ETAG_HEADER), ...NOT_FOUND, ...INVALID, ...STALE },
});

const remove = defineRoute(API, {
  operationId: "deleteTemplate",
  method: "delete",
  path: "/api/templates/{id}",
  tags,
  security,
  summary: "Delete a template (to the trash)",
  description: `The template leaves the lists and its public link stops at once (404 gone). \`POST /api/templates/{id}/restore\`
brings it back for ${RESTORE_DAYS} days (its public link stays off); then the purge removes it with its PDF. Honours If-Match.
Emits template.deleted.`,
  request: { params: TemplateIdParam, query: NoQuery },
  responses: { 204: { description: "Deleted" }, ...NOT_FOUND, ...STALE },
});

const restore = defineRoute(API, {
  operationId: "restoreTemplate",
  method: "post",
  path: "/api/templates/{id}/restore",
  tags,
  security,
  summary: "Bring a deleted template back from the trash",
  description: `Within ${RESTORE_DAYS} days of its delete. Emits template.restored.`,
  request: { params: TemplateIdParam, query: NoQuery },
  responses: { 200: apiJson("The template", TemplateAnswer, ETAG_HEADER), 404: apiError("No template with this id in your trash") },
});

const use = defineRoute(API, {
  operationId: "sendFromTemplate",
  method: "post",
  path: "/api/templates/{id}/use",
  tags,
  security,
  summary: "Send a new document made from the template",
  description: `A new document (the template's PDF, \`templateId\` and \`templateVersion\` on it) and its envelope (\`source:
template\`), answered as a send is: a link per signer, approver and viewer. Each role needs a recipient; \`values\` fill fields
by name (\`{value, lock: true}\`: read-only for the recipient), \`formValues\` the PDF's own form fields. Every problem at once
in one 422 (invalid_recipients): a role without a recipient, a value for an unknown field or of the wrong type. Needs
envelopes:send and templates:read.`,
  request: { params: TemplateIdParam, ...jsonBody(TemplateUse) },
  responses: {
    201: apiJson("The envelope and its links", SignatureCreated),
    ...NOT_FOUND,
    422: apiError("Every problem with the recipients, values and form values at once (invalid_recipients, with issues[])"),
  },
});

const publicLink = defineRoute(API, {
  operationId: "updateTemplatePublicLink",
  method: "post",
  path: "/api/templates/{id}/public-link",
  tags,
  security,
  summary: "Issue (or disable) the template's public link",
  description: `\`enabled: true\` issues a new link \`{app_url}/t/<slug>\` for a visitor who fills \`role\` (a signer role), with
the other roles' recipients as given: the URL is in this answer only (only its hash is kept) and any earlier link of the
template stops (404 gone). \`enabled: false\` stops the current link. A visitor gives a name and an e-mail, proves the e-mail
with a code, and signs the envelope made from the template (\`source: public_link\`).`,
  request: { params: TemplateIdParam, ...jsonBody(PublicLinkRequest) },
  responses: {
    201: apiJson("The link", PublicLinkIssued),
    ...NOT_FOUND,
    422: apiError("The role or the other roles' recipients do not fit the template (invalid_public_link, with issues[])"),
  },
});

/** A verb's context whose answer, `{template}`, joins its batch with an Idempotency-Key: a retry after a lost reply replays it. */
const keeping = (c: Context<AppBindings>, status: number) => ({
  ...serviceContext(c),
  keepAnswer: keepAnswerInBatch(c.get("idempotencyClaim"), status, (template: Template) => ({ template })),
});

export const templateRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(create, async (c) => c.json({ template: withEtag(c, await createTemplate(keeping(c, 201), c.req.valid("json"))) }, 201))
  .openapi(list, async (c) => c.json(await listTemplates(serviceContext(c), c.req.valid("query")), 200))
  .openapi(read, async (c) => c.json({ template: withEtag(c, await getTemplate(serviceContext(c), c.req.valid("param").id)) }, 200))
  .openapi(patch, async (c) => {
    const template = await patchTemplate(keeping(c, 200), c.req.valid("param").id, c.req.valid("json"));
    return c.json({ template: withEtag(c, template) }, 200);
  })
  .openapi(remove, async (c) => {
    await deleteTemplate(serviceContext(c), c.req.valid("param").id);
    return c.body(null, 204);
  })
  .openapi(restore, async (c) => c.json({ template: withEtag(c, await restoreTemplate(keeping(c, 200), c.req.valid("param").id)) }, 200))
  .openapi(use, async (c) => {
    requirePermission(c, "templates:read");
    // Raw signing tokens: an Idempotency-Key replay leaves them out. The answer is kept in the use's own batch, so a
    // retry after a lost reply replays it rather than making a second document.
    const omitted = [["links", "*", "url"]];
    c.set("replayOmits", omitted);
    const keepAnswer = keepAnswerInBatch(c.get("idempotencyClaim"), 201, (sent: object) => sent, omitted);
    const ctx = { ...serviceContext(c), keepAnswer };
    return c.json(await useTemplate(ctx, c.req.valid("param").id, c.req.valid("json"), requestMeta(c)), 201);
  })
  .openapi(publicLink, async (c) => {
    c.set("replayOmits", [["url"]]); // the slug is a capability: an Idempotency-Key replay leaves it out
    return c.json(await issuePublicLink(serviceContext(c), c.req.valid("param").id, c.req.valid("json")), 201);
  });
