import { and, desc, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { documents, envelopes, envelopeSigners, signingLinks } from "../db/schema";
import type { EnvelopeSource, ReminderPlan, SignerStatus } from "../db/signatures";
import type { DomainEvent } from "../events/event";
import { expectVersion, type Statement, type VersionedTable, withRetries } from "../db/write";
import { commit } from "../events/commit";
import {
  findDocument,
  FORMS,
  renderable,
  renderDocumentPdf,
  renderDocumentText,
  signingParties,
  type SigningParty,
  storedPdf,
} from "../documents/service";
import { fillAndFlatten } from "../files/pdf-form";
import { pdfLib } from "../files/pdf-lib";
import { appUrlOf, type Env, readConfig } from "../env";
import { requestFileSigner, signedFileUrl } from "../files/signed-url";
import { InvalidState, NotFound, OrganizationMoving, TemporarilyUnavailable, Unprocessable } from "../lib/errors";
import { loggableError } from "../lib/log";
import { newId } from "../lib/ids";
import { inJsonList } from "../lib/sql";
import { addSeconds, nowIso } from "../lib/time";
import type { RequestMeta, ServiceContext } from "../service-context";
import { envelopeFilesPrefix } from "../files/keys";
import { registerPublicKeys } from "../shards/directory";
import { sha256Hex } from "../lib/crypto";
import { appendAudit, GENESIS, readAudit, verifyChain } from "./audit";
import { checkChainSeal } from "./chain-seal";
import { envelopeSigner } from "./signer-client";
import { mintToken, sendSigningLink, signingUrl } from "./links";
import { type EnvelopeRow, type SignerRow, TERMINAL } from "./machine";
import { envelopeEvent, toEnvelope } from "./present";
import { expiryNoticeAt, nextReminderAt } from "./reminders";
import { formRecipients, type Recipient } from "./recipients";
import { checkedUploadRecipients, unmailed } from "./hosted-recipients";
import { readSettings } from "./settings";
import type { Envelope, SignatureRequest } from "./schemas";

/** A person's erasure (erasure/erase.ts) reaches their envelopes through this; the right of access reads them. */
export { envelopesNaming, signaturesErasable } from "./erasure";
/** A template's fields and a use's values get the checks a send's fields get (templates/). */
export { placeFields, valueProblem } from "./recipients";

const DOCUMENTS: VersionedTable = {
  table: documents,
  id: documents.id,
  organizationId: documents.organizationId,
  version: documents.version,
};
/** Envelopes listed per document, newest first. */
export const ENVELOPES_PER_DOCUMENT = 100;

type DocumentRow = typeof documents.$inferSelect;

const cannotSend = (message: string) => new InvalidState("cannot_send_for_signature", message);

/** The R2 key of the document PDF an envelope's signers read. */
export const envelopeDocumentKey = (organizationId: string, envelopeId: string) =>
  `${envelopeFilesPrefix(organizationId, envelopeId)}document.pdf`;

/** Addresses that appear more than once among the signers (any case). */
function duplicateAddresses(parties: SigningParty[]): string[] {
  const seen = new Map<string, number>();
  for (const p of parties) seen.set(p.email.toLowerCase(), (seen.get(p.email.toLowerCase()) ?? 0) + 1);
  return [...seen].filter(([, n]) => n > 1).map(([email]) => email);
}

/**
 * POST /api/documents/{id}/signature. Refusals (spec: Errors, 409 cannot_send_for_signature), each with its own
 * message: the document is not GENERATED (an envelope is open, or it is signed), its form is not a typed standard
 * form, or there is nobody to sign. The envelope starts partially_signed; in parallel mode every signer's link is
 * minted and mailed at once, in sequential mode only the first. Guarded on the document's version, so two concurrent
 * sends of one document open one envelope.
 */
export async function sendForSignature(
  ctx: ServiceContext,
  documentId: string,
  input: SignatureRequest,
  meta: RequestMeta,
  options: SendOptions = {},
) {
  const envelopeId = newId();
  let rendered: { key: string; sha256: string; title: string } | null = null;
  const created = await withRetries(async () => {
    const [doc, settings] = await Promise.all([options.create?.row ?? findDocument(ctx, documentId), readSettings(ctx)]);
    if (doc.status === "OUT_FOR_SIGNATURE")
      throw cannotSend("The document is not GENERATED: an envelope for it is still open (void it to send again)");
    if (doc.status !== "GENERATED") throw cannotSend(`The document is not GENERATED: it is ${doc.status}`);
    const uploaded = doc.source === "upload";
    const recipients = uploaded ? await checkedUploadRecipients(ctx, doc, input) : await typedFormRecipients(ctx, doc, input);

    // The document as the signers will read it, rendered once, stored before the envelope exists.
    if (!rendered) {
      const pdf = uploaded
        ? await uploadAsSent(ctx, doc, input.formValues ?? {})
        : await renderDocumentPdf(ctx.env, await renderable(ctx.db, ctx.organizationId, doc));
      const key = envelopeDocumentKey(ctx.organizationId, envelopeId);
      await ctx.files.put(key, pdf, {
        httpMetadata: { contentType: "application/pdf", contentDisposition: `inline; filename="document-${doc.id}.pdf"` },
      });
      rendered = { key, sha256: await sha256Hex(pdf), title: doc.title ?? FORMS[doc.formKey]?.title ?? doc.formKey };
    }
    const now = new Date();
    const at = nowIso(now);
    const reminders: ReminderPlan | null = input.reminders === undefined ? settings.reminders : input.reminders;
    const expiresAt = input.expiresInDays ? nowIso(addSeconds(now, input.expiresInDays * 86_400)) : null;
    const envelope: EnvelopeRow = {
      id: envelopeId,
      organizationId: ctx.organizationId,
      documentId,
      status: "partially_signed",
      mode: input.mode,
      expiresAt,
      completedAt: null,
      endedReason: null,
      certificateKey: null,
      signerVerification: input.signerVerification ?? settings.signerVerification,
      documentKey: rendered.key,
      documentTitle: rendered.title,
      documentSha256: rendered.sha256,
      reminders,
      expiryNoticeAt: expiryNoticeAt(now, expiresAt),
      sealedKey: null,
      sealedSha256: null,
      copiesMailedAt: null,
      chainSeal: null,
      erasingAt: null,
      source: options.source ?? "api",
      templateId: options.templateId ?? null,
      message: options.message ?? null,
      createdBy: ctx.actor.userId ?? null,
      createdAt: at,
      updatedAt: at,
      version: 1,
    };
    // The first order acts now. A typed form's later signers get their link when their turn comes; an uploaded
    // document's recipients (but a cc) hold theirs from now on, which answers not_your_turn until then.
    const firstOrder = Math.min(...recipients.filter((r) => r.kind !== "cc").map((r) => r.order));
    const links: { signer: SignerRow; token: string; hash: string }[] = [];
    const unlinked: SignerRow[] = [];
    const signers: SignerRow[] = [];
    for (const [position, r] of recipients.entries()) {
      const now = r.kind !== "cc" && r.order === firstOrder;
      // A public link's visitor proved their address with the link's code just now: they start authenticated.
      const verified = now && r.kind === "signer" && options.verifiedKey !== undefined && r.key === options.verifiedKey;
      const row: SignerRow = {
        id: newId(),
        envelopeId: envelope.id,
        organizationId: ctx.organizationId,
        position,
        name: r.name,
        email: r.email,
        role: r.role,
        key: r.key,
        kind: r.kind,
        signingOrder: r.order,
        fields: r.fields,
        fieldValues: null,
        embedded: r.embedded,
        hostUserId: r.hostUserId,
        status: (verified ? "authenticated" : now ? "sent" : "pending") as SignerStatus,
        sentAt: now ? at : null,
        signedAt: null,
        declinedAt: null,
        verification: verified ? "email_code" : null,
        // Issue 45: an embedded or in-person recipient holds no link and is never mailed (nor reminded).
        remindAt: now && !unmailed(r) ? nextReminderAt(reminders, new Date(at), 0) : null,
      };
      if (unmailed(r)) unlinked.push(row);
      else if (now || (uploaded && r.kind !== "cc")) links.push({ signer: row, ...(await mintToken(envelope.id)) });
      signers.push(row);
    }
    const sentData = {
      ...(ctx.actor.userId ? { userId: ctx.actor.userId } : {}),
      documentSha256: rendered.sha256,
      ...(doc.restrictionsRemoved ? { restrictionsRemoved: true } : {}),
    };
    const audit = await appendAudit(
      ctx.db,
      ctx.organizationId,
      envelope.id,
      { seq: 0, hash: GENESIS },
      signers
        .filter((signer) => signer.status === "sent" || signer.status === "authenticated")
        .flatMap((signer) => [
          { event: "sent" as const, signerId: signer.id, at, ip: meta.ip, userAgent: meta.userAgent, data: sentData },
          ...(signer.status === "authenticated"
            ? [{ event: "authenticated" as const, signerId: signer.id, at, ip: meta.ip, userAgent: meta.userAgent, data: PUBLIC_LINK_CODE }]
            : []),
        ]),
    );
    // The links' keys go to the directory before the shard write that makes them live.
    await registerPublicKeys(
      ctx.directory,
      ctx.organizationId,
      "signing_link",
      links.map((l) => l.hash),
    );
    // The answer joins the batch with an Idempotency-Key (its raw links left out): a retry after a lost reply replays it.
    const answer = {
      envelopeId: envelope.id,
      envelope: toEnvelope(envelope, signers),
      links: signers.flatMap((signer) => {
        const link = links.find((l) => l.signer.id === signer.id);
        if (link) return [signingLinkOf(ctx.env, signer, link.token)];
        return unlinked.includes(signer) ? [signingLinkOf(ctx.env, signer, null)] : [];
      }),
    };
    await commit(
      ctx,
      [
        ...(options.create
          ? [ctx.db.insert(documents).values({ ...doc, status: "OUT_FOR_SIGNATURE" }), ...options.create.statements]
          : [
              expectVersion(ctx.db, DOCUMENTS, ctx.organizationId, doc),
              ctx.db
                .update(documents)
                .set({ status: "OUT_FOR_SIGNATURE", updatedAt: at, version: doc.version + 1 })
                .where(and(eq(documents.id, doc.id), eq(documents.organizationId, ctx.organizationId))),
            ]),
        ctx.db.insert(envelopes).values(envelope),
        ...signers.map((s) => ctx.db.insert(envelopeSigners).values(s)),
        ...links.map((l) =>
          ctx.db.insert(signingLinks).values({
            tokenHash: l.hash,
            envelopeId: envelope.id,
            signerId: l.signer.id,
            organizationId: ctx.organizationId,
            ...(l.signer.status === "authenticated" ? { via: "public_link" as const } : {}),
            createdAt: at,
          }),
        ),
        ...audit.statements,
      ],
      [...(options.create?.events ?? []), envelopeEvent(ctx, "envelope.sent", { envelope, signers }, null)],
      { answer },
    );
    return { envelope, links, answer };
  }).catch(async (err: unknown) => {
    if (rendered) ctx.defer(ctx.files.delete(rendered.key).catch(() => undefined));
    throw err;
  });

  const { envelope, links, answer } = created;
  // The object serializes the envelope from here on; it also holds the expiry alarm. A failed call is covered: every
  // transition checks the expiry itself, so the envelope still expires, at its next touch.
  await envelopeSigner(ctx.env, envelope.id)
    .begin(envelope.id, ctx.organizationId, envelope.expiresAt)
    .catch((err) =>
      ctx.log.warn("envelope alarm not set; expiry is checked on each use", { envelopeId: envelope.id, error: loggableError(err) }),
    );
  for (const { signer, token } of links)
    if (signer.status === "sent")
      ctx.defer(sendSigningLink(ctx.env, ctx.db, ctx.organizationId, signer, token, "request", null, envelope.message));
  return answer;
}

/**
 * What a send made by another route sets: a document created in the send's own batch (a template's use: its row, the
 * statements and events that go with it), the envelope's source and template, the sender's message.
 */
export interface SendOptions {
  create?: { row: DocumentRow; statements: Statement[]; events: DomainEvent[] };
  source?: EnvelopeSource;
  templateId?: string;
  message?: string;
  /** The key of a recipient who proved their address just now (a public link's visitor, by its code): authenticated from the start. */
  verifiedKey?: string;
}

/** How a public link's visitor was authenticated, as the audit trail records it. */
const PUBLIC_LINK_CODE = { method: "email_code", via: "public_link" };

/** A recipient's link as the send and the resend answer it (the raw token's only way out besides the mail). */
const signingLinkOf = (
  env: Env,
  signer: Pick<SignerRow, "id" | "name" | "email" | "role" | "key" | "signingOrder">,
  token: string | null,
) => ({
  signerId: signer.id,
  name: signer.name,
  email: signer.email,
  role: signer.role,
  ...(signer.key ? { key: signer.key } : {}),
  order: signer.signingOrder,
  // An embedded or in-person recipient (issue 45) has no link: a view URL or a host session opens their signing.
  ...(token === null ? {} : { url: signingUrl(env, token) }),
});

/** A typed form's signing parties (or the `signers` that replace them), refused when there are none to send to. */
async function typedFormRecipients(ctx: ServiceContext, doc: DocumentRow, input: SignatureRequest): Promise<Recipient[]> {
  if (input.recipients || input.fields || input.formValues) {
    const given = (["recipients", "fields", "formValues"] as const).filter((k) => input[k] !== undefined);
    throw new Unprocessable(
      "invalid_recipients",
      "Recipients, fields and form values are for uploaded documents; a typed form is sent to its parties (or `signers`)",
      given.map((k) => ({ field: k, path: [k], code: "not_for_forms", message: "Only an uploaded document takes this" })),
    );
  }
  const form = FORMS[doc.formKey];
  const derived = await signingParties(ctx, doc);
  if (!form || !derived)
    throw cannotSend(`The document is not a typed standard-form document (${doc.formKey}): no signing parties derive from it`);
  const parties: SigningParty[] = input.signers ?? derived;
  if (parties.length === 0) throw cannotSend("The document has no signing parties");
  const duplicates = duplicateAddresses(parties);
  if (duplicates.length > 0)
    throw cannotSend(`Each signer needs an address of their own; more than one signer has ${duplicates.join(", ")}`);
  return formRecipients(parties, input.mode);
}

/**
 * An uploaded document as its recipients read it: its own form fields filled with `formValues`, then every form field
 * flattened so nothing stays editable (a PDF without form fields is sent as stored).
 */
async function uploadAsSent(ctx: ServiceContext, doc: DocumentRow, formValues: Record<string, string | boolean>): Promise<Uint8Array> {
  const bytes = await storedPdf(ctx, doc.fileKey!);
  if (!doc.formFields?.length) return bytes;
  const { PDFDocument } = await pdfLib();
  const pdf = await PDFDocument.load(bytes, { updateMetadata: false });
  const { issues } = await fillAndFlatten(ctx.env, pdf, formValues);
  if (issues.length > 0)
    throw new Unprocessable(
      "invalid_recipients",
      `${issues.length} problem(s) with the form values`,
      issues.map((i) => ({ field: `formValues.${i.name}`, path: ["formValues", i.name], code: "invalid_form_value", message: i.message })),
    );
  return pdf.save();
}

async function signersOf(ctx: ServiceContext, envelopeIds: string[]): Promise<Map<string, SignerRow[]>> {
  const rows = envelopeIds.length
    ? await ctx.db
        .select()
        .from(envelopeSigners)
        .where(and(eq(envelopeSigners.organizationId, ctx.organizationId), inJsonList(envelopeSigners.envelopeId, envelopeIds)))
        .orderBy(envelopeSigners.position)
    : [];
  const out = new Map<string, SignerRow[]>(envelopeIds.map((id) => [id, []]));
  for (const r of rows) out.get(r.envelopeId)!.push(r);
  return out;
}

export async function findEnvelope(ctx: ServiceContext, envelopeId: string): Promise<EnvelopeRow> {
  const row = await ctx.db
    .select()
    .from(envelopes)
    .where(and(eq(envelopes.organizationId, ctx.organizationId), eq(envelopes.id, envelopeId)))
    .get();
  if (!row) throw new NotFound("Envelope");
  return row;
}

/** GET /api/signatures/{envelopeId}: 404 outside the caller's organization. */
export async function getEnvelope(ctx: ServiceContext, envelopeId: string): Promise<Envelope> {
  const [rows, signers] = await ctx.db.batch([
    ctx.db
      .select()
      .from(envelopes)
      .where(and(eq(envelopes.organizationId, ctx.organizationId), eq(envelopes.id, envelopeId))),
    ctx.db
      .select()
      .from(envelopeSigners)
      .where(and(eq(envelopeSigners.organizationId, ctx.organizationId), eq(envelopeSigners.envelopeId, envelopeId)))
      .orderBy(envelopeSigners.position),
  ]);
  if (!rows[0]) throw new NotFound("Envelope");
  return toEnvelope(rows[0], signers);
}

/** GET /api/documents/{id}/signatures: the document's envelopes, newest first. */
export async function listEnvelopes(ctx: ServiceContext, documentId: string): Promise<Envelope[]> {
  await findDocument(ctx, documentId);
  const rows = await ctx.db
    .select()
    .from(envelopes)
    .where(and(eq(envelopes.organizationId, ctx.organizationId), eq(envelopes.documentId, documentId)))
    .orderBy(desc(envelopes.createdAt), desc(envelopes.id))
    .limit(ENVELOPES_PER_DOCUMENT);
  const signers = await signersOf(
    ctx,
    rows.map((r) => r.id),
  );
  return rows.map((r) => toEnvelope(r, signers.get(r.id)!));
}

/** DELETE /api/signatures/{envelopeId}: through the envelope's object, in turn with the signers' actions. */
export async function voidEnvelope(ctx: ServiceContext, envelopeId: string, reason: string, meta: RequestMeta): Promise<{ voided: true }> {
  await findEnvelope(ctx, envelopeId);
  const result = await envelopeSigner(ctx.env, envelopeId).void(envelopeId, ctx.organizationId, reason, ctx.actor.userId ?? null, meta);
  if (result.kind === "moving") throw new OrganizationMoving();
  if (result.kind === "failed") throw new TemporarilyUnavailable();
  if (result.kind === "not_found") throw new NotFound("Envelope");
  if (result.kind === "cannot_void") throw new InvalidState("cannot_void", result.message);
  return { voided: true };
}

/**
 * POST /api/signatures/{envelopeId}/signers/{signerId}/resend: a new link for the signer, mailed and
 * answered once, through the envelope's object (resend.ts). 404 outside the caller's organization.
 */
export async function resendSigner(ctx: ServiceContext, envelopeId: string, signerId: string, meta: RequestMeta) {
  await findEnvelope(ctx, envelopeId);
  const result = await envelopeSigner(ctx.env, envelopeId).resend(envelopeId, ctx.organizationId, signerId, ctx.actor.userId ?? null, meta);
  if (result.kind === "moving") throw new OrganizationMoving();
  if (result.kind === "failed") throw new TemporarilyUnavailable();
  if (result.kind === "not_found") throw new NotFound("Signer", "No signer with this id in this envelope");
  if (result.kind === "cannot_resend") throw new InvalidState("cannot_resend", result.message);
  const { signer, token } = result;
  ctx.defer(sendSigningLink(ctx.env, ctx.db, ctx.organizationId, signer, token, "resend"));
  return signingLinkOf(ctx.env, signer, token);
}

/** GET /api/signatures/{envelopeId}/audit: every entry, and whether the hash chain still verifies. */
export async function getAuditTrail(ctx: ServiceContext, envelopeId: string) {
  const envelope = await findEnvelope(ctx, envelopeId);
  const rows = await readAudit(ctx.db, envelopeId);
  const chain = await verifyChain(envelopeId, rows);
  const last = rows.at(-1);
  const seal = await checkChainSeal(ctx.env, envelopeId, TERMINAL.has(envelope.status), envelope.chainSeal, {
    seq: last?.seq ?? 0,
    hash: last?.hash ?? GENESIS,
  });
  return {
    events: rows.map(({ seq, event, signerId, at, ip, userAgent, data, prevHash, hash }) => ({
      seq,
      event,
      signerId,
      at,
      ip,
      userAgent,
      data,
      prevHash,
      hash,
    })),
    // A rebuilt chain verifies as a chain, but no seal signature covers its head.
    chain: { ...chain, valid: chain.valid && (seal === "valid" || seal === "not_applicable"), seal },
  };
}

/** The R2 key of a completed envelope's certificate of completion; refused before completion or while it is made. */
async function certificateKeyOf(ctx: ServiceContext, envelopeId: string): Promise<string> {
  const envelope = await findEnvelope(ctx, envelopeId);
  if (envelope.status !== "completed")
    throw new InvalidState(
      "certificate_unavailable",
      `The envelope is ${envelope.status}: a certificate exists only for a completed envelope`,
    );
  if (!envelope.certificateKey) throw new InvalidState("certificate_pending", "The certificate is being generated; try again in a moment");
  return envelope.certificateKey;
}

/** The R2 key of a completed envelope's sealed PDF; refused before completion or while it is sealed. */
async function sealedKeyOf(ctx: ServiceContext, envelopeId: string): Promise<string> {
  const envelope = await findEnvelope(ctx, envelopeId);
  if (envelope.status !== "completed")
    throw new InvalidState(
      "document_unavailable",
      `The envelope is ${envelope.status}: a signed document exists only for a completed envelope`,
    );
  if (!envelope.sealedKey) throw new InvalidState("document_pending", "The signed document is being sealed; try again in a moment");
  return envelope.sealedKey;
}

/** GET /api/signatures/{envelopeId}/certificate: a signed link to the PDF, valid 15 minutes. */
export async function certificateLink(ctx: ServiceContext, envelopeId: string) {
  return requestFileSigner(ctx)(await certificateKeyOf(ctx, envelopeId));
}

/** GET /api/signatures/{envelopeId}/document: a signed link to the sealed PDF, valid 15 minutes. */
export async function signedDocumentLink(ctx: ServiceContext, envelopeId: string) {
  return requestFileSigner(ctx)(await sealedKeyOf(ctx, envelopeId));
}

/** The bytes behind those links, for a caller that reads them in-band (an MCP client's resources/read). */
export async function envelopeFile(ctx: ServiceContext, envelopeId: string, file: "certificate" | "sealed"): Promise<Uint8Array> {
  const key = file === "certificate" ? await certificateKeyOf(ctx, envelopeId) : await sealedKeyOf(ctx, envelopeId);
  const object = await ctx.files.get(key);
  if (!object)
    throw new InvalidState(
      `${file === "certificate" ? "certificate" : "document"}_pending`,
      "The file is not stored yet; try again in a moment",
    );
  return new Uint8Array(await object.arrayBuffer());
}

/** The envelope of a link minted before tokens carried it (links.ts): looked up by hash; null for any other token. */
export async function envelopeOfLink(db: Db, tokenHash: string): Promise<string | null> {
  const row = await db
    .select({ envelopeId: signingLinks.envelopeId })
    .from(signingLinks)
    .where(eq(signingLinks.tokenHash, tokenHash))
    .get();
  return row?.envelopeId ?? null;
}

/**
 * What the signer reads: the document's text, and its PDF through a link for this signer (valid 10 to 15 minutes);
 * on a `code` envelope only once the signer's code was verified (title and fingerprint before that).
 */
export async function signerDocumentView(
  env: Env,
  db: Db,
  signerId: string,
  documentId: string,
  doc: { title: string | null; sha256: string | null; key: string | null; visible: boolean },
) {
  const row = await db
    .select({
      id: documents.id,
      organizationId: documents.organizationId,
      formKey: documents.formKey,
      canonical: documents.canonical,
      source: documents.source,
      pages: documents.pages,
    })
    .from(documents)
    .where(eq(documents.id, documentId))
    .get();
  // An uploaded document's pages are no secret of its parties: the signing page lays out the fields on them.
  const pages =
    row?.source === "upload" ? { pages: (row.pages ?? []).map(({ width, height, rotation }) => ({ width, height, rotation })) } : {};
  if (!doc.visible) return { title: doc.title, sha256: doc.sha256, pdfUrl: null, text: null, ...pages };
  const pdfUrl = doc.key ? (await signedFileUrl(env, appUrlOf(readConfig(env)), doc.key, undefined, signerId)).url : null;
  if (row?.source === "upload") return { title: doc.title, sha256: doc.sha256, pdfUrl, text: null, ...pages };
  const text = row ? renderDocumentText(await renderable(db, row.organizationId, row)) : { title: doc.title ?? "Document", sections: [] };
  return { title: doc.title ?? text.title, sha256: doc.sha256, pdfUrl, text };
}
