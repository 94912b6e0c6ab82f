import { and, desc, eq } from "drizzle-orm";
import { documents, envelopes, envelopeSigners } from "../db/schema";
import type { SignerStatus } from "../db/signatures";
import { commit, expectVersion, type VersionedTable, withRetries } from "../db/write";
import { FORMS, type SigningParty } from "../documents/forms";
import { findDocument } from "../documents/service";
import { signedFileUrl } from "../files/signed-url";
import { InvalidState, NotFound } from "../lib/errors";
import { loggableError } from "../lib/log";
import { newId } from "../lib/ids";
import { inJsonList } from "../lib/sql";
import { addSeconds, nowIso } from "../lib/time";
import type { ServiceContext } from "../platform/context";
import { appendAudit, GENESIS, readAudit, verifyChain } from "./audit";
import { envelopeSigner } from "./envelope-signer";
import { type EnvelopeRow, mintToken, type RequestMeta, sendSigningLink, type SignerRow, signingUrl } from "./machine";
import type { Envelope, SignatureRequest } from "./schemas";

const DOCUMENTS: VersionedTable = { table: documents, id: documents.id, organizationId: documents.organizationId, version: documents.version };
/** Envelopes listed per document, newest first. */
export const ENVELOPES_PER_DOCUMENT = 100;

const cannotSend = (message: string) => new InvalidState("cannot_send_for_signature", message);

export function toEnvelope(e: EnvelopeRow, signers: SignerRow[]): Envelope {
  return {
    id: e.id,
    documentId: e.documentId,
    status: e.status,
    mode: e.mode,
    createdAt: e.createdAt,
    completedAt: e.completedAt,
    expiresAt: e.expiresAt,
    signers: signers.map((s) => ({
      id: s.id,
      name: s.name,
      email: s.email,
      role: s.role,
      status: s.status,
      ...(s.signedAt ? { signedAt: s.signedAt } : {}),
      ...(s.sentAt ? { sentAt: s.sentAt } : {}),
    })),
    certificate:
      e.status !== "completed"
        ? { status: "not_applicable", url: null }
        : e.certificateKey
          ? { status: "ready", url: `/api/signatures/${e.id}/certificate` }
          : { status: "pending", url: null },
  };
}

/**
 * POST /api/documents/{id}/signature. Refusals (spec: Errors, 409 cannot_send_for_signature), each with its own
 * message: the document is not GENERATED (an envelope is open, or it is signed), its form is not a typed standard
 * form, or there is nobody to sign. The envelope starts partially_signed; in parallel mode every signer's link is
 * minted and mailed at once, in sequential mode only the first. Guarded on the document's version, so two concurrent
 * sends of one document open one envelope.
 */
export async function sendForSignature(ctx: ServiceContext, documentId: string, input: SignatureRequest, meta: RequestMeta) {
  const created = await withRetries(async () => {
    const doc = await findDocument(ctx, documentId);
    if (doc.status === "OUT_FOR_SIGNATURE") throw cannotSend("The document is not GENERATED: an envelope for it is still open (void it to send again)");
    if (doc.status !== "GENERATED") throw cannotSend(`The document is not GENERATED: it is ${doc.status}`);
    const form = FORMS[doc.formKey];
    if (!form?.parties) throw cannotSend(`The document is not a typed standard-form document (${doc.formKey}): no signing parties derive from it`);
    const parties: SigningParty[] = input.signers ?? form.parties(doc.canonical);
    if (parties.length === 0) throw cannotSend("The document has no signing parties");

    const at = nowIso();
    const envelope: EnvelopeRow = {
      id: newId(),
      organizationId: ctx.organizationId,
      documentId,
      status: "partially_signed",
      mode: input.mode,
      expiresAt: input.expiresInDays ? nowIso(addSeconds(new Date(), input.expiresInDays * 86_400)) : null,
      completedAt: null,
      endedReason: null,
      certificateKey: null,
      createdBy: ctx.actor.userId ?? null,
      createdAt: at,
      updatedAt: at,
      version: 1,
    };
    const sendNow = input.mode === "parallel" ? parties.length : 1;
    const links: { signer: SignerRow; token: string }[] = [];
    const signers: SignerRow[] = [];
    for (const [position, p] of parties.entries()) {
      const row: SignerRow = {
        id: newId(),
        envelopeId: envelope.id,
        organizationId: ctx.organizationId,
        position,
        name: p.name,
        email: p.email,
        role: p.role,
        status: (position < sendNow ? "sent" : "pending") as SignerStatus,
        tokenHash: null,
        sentAt: position < sendNow ? at : null,
        signedAt: null,
        declinedAt: null,
      };
      if (position < sendNow) {
        const { token, hash } = await mintToken();
        row.tokenHash = hash;
        links.push({ signer: row, token });
      }
      signers.push(row);
    }
    const audit = await appendAudit(
      ctx.db,
      ctx.organizationId,
      envelope.id,
      { seq: 0, hash: GENESIS },
      links.map(({ signer }) => ({ event: "sent", signerId: signer.id, at, ip: meta.ip, userAgent: meta.userAgent, data: ctx.actor.userId ? { userId: ctx.actor.userId } : null })),
    );
    await commit(ctx, [
      expectVersion(ctx.db, DOCUMENTS, ctx.organizationId, doc),
      ctx.db
        .update(documents)
        .set({ status: "OUT_FOR_SIGNATURE", updatedAt: at, version: doc.version + 1 })
        .where(and(eq(documents.id, doc.id), eq(documents.organizationId, ctx.organizationId))),
      ctx.db.insert(envelopes).values(envelope),
      ...signers.map((s) => ctx.db.insert(envelopeSigners).values(s)),
      ...audit.statements,
    ]);
    return { envelope, links };
  });

  const { envelope, links } = created;
  // The object serializes the envelope from here on; it also holds the expiry alarm. A failed call is covered: every
  // transition checks the expiry itself, so the envelope still expires, at its next touch.
  await envelopeSigner(ctx.env, envelope.id)
    .begin(envelope.id, envelope.expiresAt)
    .catch((err) => console.error(JSON.stringify({ level: "warn", msg: "envelope alarm not set; expiry is checked on each use", envelopeId: envelope.id, error: loggableError(err) })));
  for (const { signer, token } of links) ctx.defer(sendSigningLink(ctx.env, ctx.organizationId, signer, token));
  return {
    envelopeId: envelope.id,
    links: links.map(({ signer, token }) => ({ signerId: signer.id, name: signer.name, email: signer.email, role: signer.role, url: signingUrl(ctx.env, token) })),
  };
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
  const row = await ctx.db.select().from(envelopes).where(and(eq(envelopes.organizationId, ctx.organizationId), eq(envelopes.id, envelopeId))).get();
  if (!row) throw new NotFound("Envelope");
  return row;
}

/** GET /api/signatures/{envelopeId}: 404 outside the caller's organization. */
export async function getEnvelope(ctx: ServiceContext, envelopeId: string): Promise<Envelope> {
  const [rows, signers] = await ctx.db.batch([
    ctx.db.select().from(envelopes).where(and(eq(envelopes.organizationId, ctx.organizationId), eq(envelopes.id, envelopeId))),
    ctx.db.select().from(envelopeSigners).where(and(eq(envelopeSigners.organizationId, ctx.organizationId), eq(envelopeSigners.envelopeId, envelopeId))).orderBy(envelopeSigners.position),
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
  if (result.kind === "not_found") throw new NotFound("Envelope");
  if (result.kind === "cannot_void") throw new InvalidState("cannot_void", result.message);
  return { voided: true };
}

/** GET /api/signatures/{envelopeId}/audit: every entry, and whether the hash chain still verifies. */
export async function getAuditTrail(ctx: ServiceContext, envelopeId: string) {
  await findEnvelope(ctx, envelopeId);
  const rows = await readAudit(ctx.db, envelopeId);
  return {
    events: rows.map(({ seq, event, signerId, at, ip, userAgent, data, prevHash, hash }) => ({ seq, event, signerId, at, ip, userAgent, data, prevHash, hash })),
    chain: await verifyChain(envelopeId, rows),
  };
}

/** GET /api/signatures/{envelopeId}/certificate: a signed link to the PDF, valid 15 minutes. */
export async function certificateLink(ctx: ServiceContext, envelopeId: string, origin: string) {
  const envelope = await findEnvelope(ctx, envelopeId);
  if (envelope.status !== "completed") throw new InvalidState("certificate_unavailable", `The envelope is ${envelope.status}: a certificate exists only for a completed envelope`);
  if (!envelope.certificateKey) throw new InvalidState("certificate_pending", "The certificate is being generated; try again in a moment");
  return signedFileUrl(ctx.env, origin, envelope.certificateKey);
}
