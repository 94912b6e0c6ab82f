import { z } from "zod";
import { MAX_QUERY_CHARS, searchDocuments } from "../documents/indexing";
import { FormSummary } from "../documents/form-routes";
import { Obligation, ObligationQuery } from "../documents/obligation-routes";
import { listObligations } from "../documents/obligations";
import { SearchHit, SearchQuery } from "../documents/search-routes";
import { listForms } from "../documents/service";
import { MAX_SIGNERS, SignatureRequest, SignerInput } from "../signatures/schemas";
import { getEnvelope, sendForSignature } from "../signatures/service";
import { defineTool, parseWith } from "./tool";

export const searchDocumentsTool = defineTool({
  name: "search_documents",
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
  title: "Send a document for signature",
  description:
    "Opens a signature envelope on a GENERATED standard-form document and e-mails each signer their signing link (the links are not returned). Any signable form (GET /api/documents/forms, or list_forms): the signers derive from the document (lease: landlords, then tenants; purchase agreement and its amendments: buyers, then sellers; listing agreement: sellers, then the listing brokerage; buyer representation agreement: buyers, then the brokerage) unless `signers` replaces them, in signing order. Parallel mode sends every link at once, sequential mode one after another. Answers every signer in signing order, with who is up now (`upNow`: mailed and yet to sign).",
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
  }),
  async run({ documentId, ...request }, { ctx, meta }) {
    // The route's schema too: it refuses a signer listed twice.
    const { envelopeId, links } = await sendForSignature(ctx, documentId, parseWith(SignatureRequest, request), meta);
    // The links name only the signers mailed now (in sequential mode the first): the envelope names them all. The
    // signing links are the signers' capabilities: they go to the signers by mail, never into an agent's context.
    const envelope = await getEnvelope(ctx, envelopeId);
    const mailed = new Set(links.map((l) => l.signerId));
    const signers = envelope.signers.map((s, position) => ({
      signerId: s.id,
      position,
      name: s.name,
      email: s.email,
      role: s.role,
      status: s.status,
      mailed: mailed.has(s.id),
      upNow: s.status === "sent",
    }));
    return { envelope: { envelopeId, mode: envelope.mode, status: envelope.status, signers } };
  },
});

export const documentTools = [searchDocumentsTool, listObligationsTool, listFormsTool, sendForSignatureTool];
