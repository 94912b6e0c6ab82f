import { z } from "zod";
import { MAX_QUERY_CHARS, searchDocuments } from "../documents/indexing";
import { FormSummary } from "../documents/form-routes";
import { Obligation, ObligationQuery } from "../documents/obligation-routes";
import { listObligations } from "../documents/obligations";
import { SearchHit, SearchQuery } from "../documents/search-routes";
import { DraftRequest, DraftResult, draftDocument } from "../documents/draft";
import { Document, DocumentCreate } from "../documents/schemas";
import { createDocument, getDocument, listForms } from "../documents/service";
import { Unprocessable } from "../lib/errors";
import {
  Envelope,
  FieldInput,
  MAX_FIELDS,
  MAX_SIGNERS,
  RecipientInput,
  SignatureRequest,
  SignerInput,
  VoidQuery,
} from "../signatures/schemas";
import { getEnvelope, listEnvelopes, resendSigner, sendForSignature, voidEnvelope } from "../signatures/service";
import { resourceLink } from "./resources";
import { defineTool, parseWith } from "./tool";

export const searchDocumentsTool = defineTool({
  name: "search_documents",
  route: "GET /api/documents/search",
  title: "Search documents",
  description:
    "Ranks the organization's documents by how close their text (form, parties, address, dates, amounts) is in meaning to a natural-language query. Answers document ids with a similarity score, best first; none when no AI gateway is configured.",
  permission: "documents:read",
  effect: "read",
  output: z.object({ hits: z.array(SearchHit) }),
  input: z.strictObject({ query: z.string().min(1).max(MAX_QUERY_CHARS).describe("e.g. lease on Queen St W") }),
  async run({ query }, { ctx }) {
    const { q } = parseWith(SearchQuery, { q: query });
    return { hits: await searchDocuments(ctx, q) };
  },
});

export const listObligationsTool = defineTool({
  name: "list_obligations",
  route: "GET /api/documents/obligations",
  title: "List document obligations",
  description:
    "Deadlines derived from the organization's documents (deposit due, condition waiver, closing, expiry, renewal …) that fall due within the next withinDays days, overdue ones included, soonest first, each with its urgency.",
  permission: "documents:read",
  effect: "read",
  output: z.object({ obligations: z.array(Obligation) }),
  input: z.strictObject({ withinDays: z.int().min(0).max(365).default(30).describe("Days ahead of today (UTC)") }),
  async run({ withinDays }, { ctx }) {
    const query = parseWith(ObligationQuery, { withinDays: String(withinDays) });
    return { obligations: await listObligations(ctx, query.withinDays) };
  },
});

export const listFormsTool = defineTool({
  name: "list_forms",
  route: "GET /api/documents/forms",
  title: "List document forms",
  description:
    "The forms a document can be generated from: lease, agreement of purchase and sale, listing agreement, buyer representation agreement, amendment, free-form text. Each with its formKey, title, signing roles in signing order, whether it can be sent for signature, and the JSON Schema its canonical data must follow.",
  permission: "documents:read",
  effect: "read",
  output: z.object({ forms: z.array(FormSummary) }),
  input: z.strictObject({}),
  async run() {
    return { forms: listForms() };
  },
});

export const sendForSignatureTool = defineTool({
  name: "send_for_signature",
  route: "POST /api/documents/{id}/signature",
  title: "Send a document for signature",
  description:
    "Opens a signature envelope on a GENERATED document and e-mails each signer their signing link (the links are not returned). A standard-form document (GET /api/documents/forms, or list_forms): the signers derive from the document (lease: landlords, then tenants; purchase agreement and its amendments: buyers, then sellers; listing agreement: sellers, then the listing brokerage; buyer representation agreement: buyers, then the brokerage) unless `signers` replaces them, in signing order; parallel mode sends every link at once, sequential mode one after another. An uploaded PDF (get_document shows its pages and form fields): `recipients` (signer, approver, viewer, cc, each with an order), `fields` placed in percent of a page as displayed (every signer needs a signature field) and `formValues` for the PDF's own form; the first order is mailed now, each next order when everyone before is done. Answers every recipient, with who is up now (`upNow`: mailed and yet to act).",
  permission: "envelopes:send",
  // Mail sent to people outside the organization cannot be called back.
  effect: "destructive",
  openWorld: true,
  output: z.object({
    envelope: z.object({
      envelopeId: z.string(),
      mode: z.enum(["parallel", "sequential"]),
      status: z.string(),
      signers: z.array(
        z.object({
          signerId: z.string(),
          position: z.int(),
          name: z.string(),
          email: z.string(),
          role: z.string(),
          key: z.string().optional().describe("An uploaded PDF's recipient key"),
          order: z.int(),
          status: z.string(),
          mailed: z.boolean(),
          upNow: z.boolean(),
        }),
      ),
    }),
  }),
  input: z.strictObject({
    documentId: z.string().min(1).max(100).describe("The document's id"),
    signers: z.array(SignerInput).max(MAX_SIGNERS).optional(),
    mode: z.enum(["parallel", "sequential"]).default("parallel"),
    expiresInDays: z
      .int()
      .min(1)
      .max(365)
      .optional()
      .describe("Links and the envelope expire after this many days; no expiry when left out"),
    recipients: z.array(RecipientInput).min(1).max(MAX_SIGNERS).optional().describe("An uploaded PDF's recipients"),
    fields: z.array(FieldInput).max(MAX_FIELDS).optional().describe("An uploaded PDF's fields, each naming its recipient's key"),
    formValues: z
      .record(z.string().min(1).max(200), z.union([z.string().max(2000), z.boolean()]))
      .optional()
      .describe("An uploaded PDF's own form fields filled by name (a checkbox true or false)"),
  }),
  async run({ documentId, ...request }, { ctx, meta }) {
    // The route's schema too: it refuses a signer listed twice.
    const { envelopeId, links } = await sendForSignature(ctx, documentId, parseWith(SignatureRequest, request), meta);
    // The links name only the signers mailed now (in sequential mode the first): the envelope names them all. The
    // signing links are the signers' capabilities: they go to the signers by mail, never into an agent's context.
    const envelope = await getEnvelope(ctx, envelopeId);
    // An embedded or in-person recipient (issue 45) is listed without a link: never mailed.
    const mailed = new Set(links.filter((l) => l.url !== undefined).map((l) => l.signerId));
    // An uploaded PDF's later orders hold a link from the start, mailed only when their turn comes.
    const signers = envelope.signers.map((s, position) => ({
      signerId: s.id,
      position,
      name: s.name,
      email: s.email,
      role: s.role,
      ...(s.key ? { key: s.key } : {}),
      order: s.order,
      status: s.status,
      mailed: mailed.has(s.id) && s.status === "sent",
      upNow: s.status === "sent",
    }));
    return { envelope: { envelopeId, mode: envelope.mode, status: envelope.status, signers } };
  },
});

const documentId = z.string().min(1).max(100).describe("The document's id");
const envelopeId = z.string().min(1).max(100).describe("The envelope's id (send_for_signature answers it)");

export const generateDocumentTool = defineTool({
  name: "generate_document",
  title: "Generate a document from a form",
  description:
    "Makes a GENERATED document from a form's canonical data (list_forms gives each form's JSON Schema; draft_document drafts one from plain words), with the obligations its form implies (deposit due, closing …). Counts toward the month's generation allotment. Link it to a deal with dealId. It can then be sent for signature.",
  permission: "documents:write",
  route: "POST /api/documents",
  input: DocumentCreate,
  output: z.object({ document: Document }),
  effect: "write",
  run: async (input, { ctx }) => ({ document: await createDocument(ctx, input) }),
  links: ({ document }) => [resourceLink("document-pdf", document.id)],
});

export const draftDocumentTool = defineTool({
  name: "draft_document",
  title: "Draft a form's data from plain words, with AI",
  description:
    "The AI gateway picks the form the prompt describes (lease, agreement of purchase and sale, listing agreement, buyer representation agreement, amendment) and answers its canonical data, valid against the form's schema. Nothing is stored: review the draft with the user, then pass formKey and canonical to generate_document. Refused with draft_failed when no AI gateway is configured or the model's answer does not fit the form (every issue listed).",
  permission: "documents:write",
  route: "POST /api/documents/draft",
  input: DraftRequest,
  output: DraftResult,
  // Stores nothing and changes nothing: the draft is only an answer.
  effect: "read",
  async run(input, { ctx }) {
    const outcome = await draftDocument(ctx, input);
    if (!outcome.ok) {
      // The route's 422 draft_failed, as a tool error: the reason, and each issue of a draft that broke the form.
      const issues = outcome.issues.map((i) => `${i.path.join(".") || "(draft)"}: ${i.message}`).join("; ");
      throw new Unprocessable("draft_failed", `No usable draft (${outcome.reason})${issues ? `: ${issues}` : ""}`);
    }
    return { formKey: outcome.formKey, canonical: outcome.canonical };
  },
});

export const getDocumentTool = defineTool({
  name: "get_document",
  title: "Get a document",
  description:
    "One document: its source (a typed form, or an uploaded PDF with its pages and form fields), status (GENERATED, OUT_FOR_SIGNATURE, SIGNED), canonical data, hash and deal; with a link to its PDF (read it with resources/read). With signatures:read also its newest envelope: every recipient with their role, order, status and fields (what they filled in).",
  permission: "documents:read",
  route: "GET /api/documents/{id}",
  input: z.strictObject({ documentId }),
  output: z.object({
    document: Document,
    envelope: Envelope.nullable()
      .optional()
      .describe("The newest envelope of the document (null: never sent); left out without signatures:read"),
  }),
  effect: "read",
  async run({ documentId }, { ctx, granted }) {
    const document = await getDocument(ctx, documentId);
    if (!granted.has("signatures:read")) return { document };
    const [newest] = await listEnvelopes(ctx, documentId);
    return { document, envelope: newest ?? null };
  },
  links: ({ document }) => [resourceLink("document-pdf", document.id)],
});

export const getEnvelopeTool = defineTool({
  name: "get_envelope",
  title: "Get a signature envelope's status",
  description:
    "An envelope: its status (sent, completed, declined, voided, expired), every signer in signing order with their status and when they viewed and signed, the reminders, and whether the certificate and the sealed PDF are ready; once completed, links to both (read them with resources/read).",
  permission: "signatures:read",
  route: "GET /api/signatures/{envelopeId}",
  input: z.strictObject({ envelopeId }),
  output: z.object({ envelope: Envelope }),
  effect: "read",
  run: async ({ envelopeId }, { ctx }) => ({ envelope: await getEnvelope(ctx, envelopeId) }),
  links: ({ envelope }) =>
    envelope.status === "completed"
      ? [resourceLink("envelope-signed-pdf", envelope.id), resourceLink("envelope-certificate", envelope.id)]
      : [],
});

export const resendSigningLinkTool = defineTool({
  name: "resend_signing_link",
  title: "Resend a signer's signing link",
  description:
    "Mails a signer who is up now (sent, not yet signed) a new signing link; the old one stops working. The link itself goes only to the signer, never into this answer. Refused for a signer who has signed or declined, or an envelope that is no longer open.",
  permission: "signatures:write",
  route: "POST /api/signatures/{envelopeId}/signers/{signerId}/resend",
  input: z.strictObject({ envelopeId, signerId: z.string().min(1).max(100).describe("The signer's id (get_envelope lists them)") }),
  output: z.object({
    signer: z.object({ signerId: z.string(), name: z.string(), email: z.string(), role: z.string(), mailed: z.literal(true) }),
  }),
  // A mail sent cannot be called back.
  effect: "destructive",
  openWorld: true,
  async run({ envelopeId, signerId }, { ctx, meta }) {
    // The signing link is the signer's capability: it goes to them by mail, never into an agent's context.
    const { url: _link, ...signer } = await resendSigner(ctx, envelopeId, signerId, meta);
    return { signer: { signerId: signer.signerId, name: signer.name, email: signer.email, role: signer.role, mailed: true as const } };
  },
});

export const voidEnvelopeTool = defineTool({
  name: "void_envelope",
  title: "Void a signature envelope",
  description:
    "Cancels an open envelope for good: every signing link stops working, the signers are told, and the document can be sent again. Refused for an envelope that is completed, declined, expired or already voided.",
  permission: "signatures:write",
  route: "DELETE /api/signatures/{envelopeId}",
  input: z.strictObject({ envelopeId, reason: VoidQuery.shape.reason.describe("Kept on the audit trail and told to the signers") }),
  output: z.object({ voided: z.literal(true), envelopeId: z.string() }),
  effect: "destructive",
  openWorld: true,
  async run({ envelopeId, reason }, { ctx, meta }) {
    await voidEnvelope(ctx, envelopeId, reason, meta);
    return { voided: true as const, envelopeId };
  },
});

export const documentTools = [
  searchDocumentsTool,
  listObligationsTool,
  listFormsTool,
  sendForSignatureTool,
  generateDocumentTool,
  draftDocumentTool,
  getDocumentTool,
  getEnvelopeTool,
  resendSigningLinkTool,
  voidEnvelopeTool,
];
