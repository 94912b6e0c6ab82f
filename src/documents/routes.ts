import { OpenAPIHono } from "@hono/zod-openapi";
import { NoQuery } from "../crm/list-query";
import { API, apiError, apiJson } from "../platform/api-family";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { requestMeta } from "../platform/request-meta";
import { defineRoute, jsonBody } from "../platform/route";
import { EnvelopeList, SignatureCreated, SignatureRequest } from "../signatures/schemas";
import { listEnvelopes, sendForSignature } from "../signatures/service";
import { Document, DocumentCreate, DocumentIdParam, DocumentList, DocumentListQuery, Usage } from "./schemas";
import { createDocument, getDocument, getUsage, listDocuments } from "./service";

const tags = ["Documents"];
const security = [{ bearerAuth: [] }];
const NOT_FOUND = { 404: apiError("No document with this id in your organization") };

const create = defineRoute(API, {
  operationId: "createDocument",
  method: "post",
  path: "/api/documents",
  tags,
  security,
  summary: "Generate a document from a reviewed canonical draft",
  description:
    "The canonical draft is validated against its form's schema (every problem listed in one 400). Every generation counts on the month's usage meter; past the allotment it is recorded as overage, never refused (spec rule 3).",
  request: jsonBody(DocumentCreate),
  responses: { 201: apiJson("The generated document", Document) },
});

const list = defineRoute(API, {
  operationId: "listDocuments",
  method: "get",
  path: "/api/documents",
  tags,
  security,
  summary: "List documents, newest first",
  request: { query: DocumentListQuery },
  responses: { 200: apiJson("A page of documents", DocumentList) },
});

const usage = defineRoute(API, {
  operationId: "getDocumentUsage",
  method: "get",
  path: "/api/documents/usage",
  tags,
  security,
  summary: "Documents generated this calendar month",
  responses: { 200: apiJson("The usage meter", Usage) },
});

const read = defineRoute(API, {
  operationId: "getDocument",
  method: "get",
  path: "/api/documents/{id}",
  tags,
  security,
  summary: "Read a document",
  request: { params: DocumentIdParam },
  responses: { 200: apiJson("The document", Document), ...NOT_FOUND },
});

const send = defineRoute(API, {
  operationId: "sendDocumentForSignature",
  method: "post",
  path: "/api/documents/{id}/signature",
  tags: ["Signatures"],
  security,
  summary: "Send a document for signature",
  description:
    "Opens an envelope (status partially_signed). The signing parties derive from the document in its form's order (GET /api/documents/forms: lease landlords then tenants; purchase agreement and amendment buyers then sellers; listing sellers then the brokerage; buyer representation buyers then the brokerage); `signers` replaces them. Parallel: every signer's link is created and mailed at once; sequential: the first signer's now, each next one when the previous has signed. Links are `{APP_URL}/sign/<token>`; the token appears only in this answer and in the e-mail.",
  request: { params: DocumentIdParam, ...jsonBody(SignatureRequest) },
  responses: {
    201: apiJson("The envelope and the links created now", SignatureCreated),
    ...NOT_FOUND,
    409: apiError(
      "cannot_send_for_signature: the document is not GENERATED (an envelope is open, or it is signed), is not a typed standard-form document, or has no signing parties",
    ),
  },
});

const envelopes = defineRoute(API, {
  operationId: "listDocumentEnvelopes",
  method: "get",
  path: "/api/documents/{id}/signatures",
  tags: ["Signatures"],
  security,
  summary: "The document's signature envelopes",
  request: { params: DocumentIdParam, query: NoQuery },
  responses: { 200: apiJson("Envelopes, newest first", EnvelopeList), ...NOT_FOUND },
});

// Static paths (/usage) are registered before /{id}.
export const documentRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(usage, async (c) => c.json(await getUsage(serviceContext(c)), 200))
  .openapi(create, async (c) => c.json(await createDocument(serviceContext(c), c.req.valid("json")), 201))
  .openapi(list, async (c) => c.json(await listDocuments(serviceContext(c), c.req.valid("query")), 200))
  .openapi(read, async (c) => c.json(await getDocument(serviceContext(c), c.req.valid("param").id), 200))
  .openapi(send, async (c) => {
    c.set("replayOmits", [["links", "*", "url"]]); // raw signing tokens: an Idempotency-Key replay leaves them out
    return c.json(await sendForSignature(serviceContext(c), c.req.valid("param").id, c.req.valid("json"), requestMeta(c)), 201);
  })
  .openapi(envelopes, async (c) => c.json({ envelopes: await listEnvelopes(serviceContext(c), c.req.valid("param").id) }, 200));
