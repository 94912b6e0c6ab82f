import { OpenAPIHono, z } from "@hono/zod-openapi";
import { NoQuery } from "../crm/list-query";
import { API, apiError, apiJson } from "../platform/api-family";
import { serviceContext } from "../platform/auth";
import { keepAnswerInBatch } from "../platform/idempotency";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { requestMeta } from "../platform/request-meta";
import { defineRoute, jsonBody } from "../platform/route";
import { EnvelopeList, SignatureCreated, SignatureRequest } from "../signatures/schemas";
import { listEnvelopes, sendForSignature } from "../signatures/service";
import { PayloadTooLarge, UnsupportedMediaType } from "../lib/errors";
import {
  Document,
  DocumentCreate,
  DocumentIdParam,
  DocumentList,
  DocumentListQuery,
  MAX_UPLOAD_BYTES,
  MAX_UPLOAD_PAGES,
  UploadedDocument,
  UploadQuery,
  Usage,
} from "./schemas";
import { createDocument, documentPdf, getDocument, getUsage, listDocuments } from "./service";
import { uploadDocument } from "./uploads";

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

const upload = defineRoute(API, {
  operationId: "uploadDocument",
  method: "post",
  path: "/api/documents/uploads",
  tags,
  security,
  summary: "Upload your own PDF to send for signature",
  description: `The body is the PDF itself (\`Content-Type: application/pdf\`, at most ${MAX_UPLOAD_BYTES / 1024 / 1024} MB). The answer describes its pages as displayed (after /Rotate, from the CropBox) and its own form fields, in the coordinates fields are placed in (percent of the page, origin top-left). Refused with nothing stored: not a PDF or a damaged one (422 pdf_invalid), one that needs a password to open (422 pdf_encrypted), more than ${MAX_UPLOAD_PAGES} pages (422 pdf_too_long), over the size (413). A PDF with an owner password only (edit restrictions) is accepted: its pages are re-imported without it (\`restrictionsRemoved\`). An upload does not count on the generation meter. Its text is extracted and indexed for /api/documents/search by a queue consumer (\`textStatus\`). With \`tags=true\`, the PDF's text tags \`{{type;role=<key>;name=<name>;required=true|false;options=a|b}}\` become the document's \`fields\` (each box where the tag's glyphs stand) and their text is taken out of the stored PDF (\`sha256\` stays that of the bytes received); a tag that cannot be read is a 422 invalid_tag naming each such tag's page and text, with nothing stored. A PDF of more than 20 pages has its tags found by a queue consumer (\`tagsStatus\` pending, then done or failed).`,
  request: {
    query: UploadQuery,
    body: {
      required: true,
      content: { "application/pdf": { schema: z.string().openapi({ format: "binary", description: "The PDF" }) } },
    },
  },
  responses: {
    201: apiJson("The uploaded document", UploadedDocument),
    415: apiError("unsupported_media_type: the body must be a PDF sent as application/pdf"),
    422: apiError("pdf_invalid, pdf_encrypted or pdf_too_long; invalid_tag (with tags=true: issues name each tag's page and text)"),
  },
});

const pdf = defineRoute(API, {
  operationId: "getDocumentPdf",
  method: "get",
  path: "/api/documents/{id}/pdf",
  tags,
  security,
  summary: "A document's PDF",
  description: "An uploaded document: the PDF as stored. A typed form's: the PDF as its form renders it now.",
  request: { params: DocumentIdParam, query: NoQuery },
  responses: {
    200: { description: "The PDF", content: { "application/pdf": { schema: z.string().openapi({ format: "binary" }) } } },
    ...NOT_FOUND,
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
  .openapi(upload, async (c) => {
    const type = c.req.header("content-type")?.split(";")[0]?.trim().toLowerCase();
    if (type !== "application/pdf")
      throw new UnsupportedMediaType("The body must be the PDF itself, sent as Content-Type: application/pdf");
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    if (bytes.byteLength > MAX_UPLOAD_BYTES) throw new PayloadTooLarge(MAX_UPLOAD_BYTES);
    const keepAnswer = keepAnswerInBatch(c.get("idempotencyClaim"), 201, (document: Document) => ({ document }));
    const document = await uploadDocument({ ...serviceContext(c), keepAnswer }, { bytes, ...c.req.valid("query") });
    return c.json({ document }, 201);
  })
  .openapi(create, async (c) => c.json(await createDocument(serviceContext(c), c.req.valid("json")), 201))
  .openapi(list, async (c) => c.json(await listDocuments(serviceContext(c), c.req.valid("query")), 200))
  .openapi(read, async (c) => c.json(await getDocument(serviceContext(c), c.req.valid("param").id), 200))
  .openapi(pdf, async (c) => {
    const id = c.req.valid("param").id;
    const bytes = await documentPdf(serviceContext(c), id);
    return c.body(bytes.slice().buffer, 200, {
      "content-type": "application/pdf",
      "content-disposition": `inline; filename="document-${id}.pdf"`,
      "cache-control": "private, no-store",
    }) as never;
  })
  .openapi(send, async (c) => {
    c.set("replayOmits", [["links", "*", "url"]]); // raw signing tokens: an Idempotency-Key replay leaves them out
    return c.json(await sendForSignature(serviceContext(c), c.req.valid("param").id, c.req.valid("json"), requestMeta(c)), 201);
  })
  .openapi(envelopes, async (c) => c.json({ envelopes: await listEnvelopes(serviceContext(c), c.req.valid("param").id) }, 200));
