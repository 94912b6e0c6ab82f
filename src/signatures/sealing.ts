import { and, eq, isNull } from "drizzle-orm";
import type { PDFDocument } from "@pdfme/pdf-lib";
import { documents, envelopes, organizations, users } from "../db/schema";
import { renderable } from "../documents/service";
import { expectRow, StaleWrite } from "../db/write";
import { readConfig, type Env } from "../env";
import { commit } from "../events/commit";
import type { EventConsumer } from "../events/consumers";
import { signedFileUrl } from "../files/signed-url";
import { sha256Hex } from "../lib/crypto";
import { withDeferred } from "../lib/deferred";
import { nowIso } from "../lib/time";
import { sendAfterCommit } from "../mail/mailer";
import { onShard, systemContext } from "../shards/tenants";
import { registerPublicKeys } from "../shards/directory";
import { readAudit, verifyChain } from "./audit";
import { renderSignedPacket } from "./certificate";
import { DONE, type Loaded, loadEnvelope, type SignerRow, type Tenant } from "./machine";
import { type StampField, stampFields } from "./stamp";
import { envelopeEvent } from "./present";

/**
 * The signed document (docs/decisions/0012-sealed-pdfs-with-pades.md): once every signer has signed, one PDF (the
 * document as the signers read it, a signature page per signer, the certificate of completion) sealed with the
 * platform's PAdES seal, stored in R2, its SHA-256 recorded (POST /api/public/verify finds the envelope by it), and a
 * copy mailed to every signer and to the sender. Built by a consumer of DOCUMENT_SIGNED: a failure is retried by the
 * queue and never holds up a signature, and the write that records the PDF is conditional (and emits envelope.sealed,
 * once). The copies are mailed once that write has landed and marked mailed after (`copiesMailedAt`), so a delivery
 * that died between the two mails them on the next: at least once, and again only when an attempt died after mailing.
 */
export const sealedDocumentKey = (organizationId: string, envelopeId: string) => `signed/${organizationId}/${envelopeId}.pdf`;
/** How long the link in the completion mail works: the signing token is dead, so this link is the signer's copy. */
export const COPY_LINK_TTL_SECONDS = 30 * 86_400;

export async function sealEnvelope(env: Env, tenant: Tenant, envelopeId: string): Promise<void> {
  const loaded = await loadEnvelope(tenant, envelopeId);
  if (loaded?.envelope.status !== "completed" || loaded.envelope.copiesMailedAt) return;
  if (!loaded.envelope.sealedKey && !(await sealDocument(env, tenant, loaded))) return;
  await mailCopies(env, tenant, loaded);
}

/** Builds, stores and records the sealed PDF; false when another attempt recorded its own first (that one mails). */
async function sealDocument(env: Env, tenant: Tenant, loaded: Loaded): Promise<boolean> {
  const db = tenant.db;
  const { envelope, signers } = loaded;
  const [document, audit, stored] = await Promise.all([
    db.select().from(documents).where(eq(documents.id, envelope.documentId)).get(),
    readAudit(db, envelope.id),
    envelope.documentKey ? env.FILES.get(envelope.documentKey) : null,
  ]);
  if (!document) return false;
  const documentPdf = stored ? new Uint8Array(await stored.arrayBuffer()) : undefined;
  const packet = await renderSignedPacket(env, {
    envelope: { id: envelope.id, mode: envelope.mode, completedAt: envelope.completedAt, documentSha256: envelope.documentSha256 ?? "" },
    // Rendered again only when the stored PDF is missing, as at send: an amendment names the agreement it amends.
    document: await renderable(db, document.organizationId, document),
    documentPdf,
    signers: signers.map((s) => ({
      id: s.id,
      name: s.name,
      email: s.email,
      role: s.role,
      kind: s.kind,
      signedAt: s.signedAt,
      verification: s.verification,
    })),
    audit,
    chain: await verifyChain(envelope.id, audit),
    onDocumentPages: document.source === "upload" ? (packet) => stampValues(env, tenant, document, signers, packet) : undefined,
  });
  packet.setTitle(`Signed: ${envelope.documentTitle ?? document.formKey} (${envelope.id})`);
  const { sealPdf } = await import("../seal/pades");
  const sealed = await sealPdf(env, packet, {
    reason: `Every party signed envelope ${envelope.id}`,
    name: "Brokerage Edge API seal",
    contactInfo: readConfig(env).APP_URL,
  });
  const sha256 = await sha256Hex(sealed);
  const key = sealedDocumentKey(envelope.organizationId, envelope.id);
  await env.FILES.put(key, sealed, {
    httpMetadata: { contentType: "application/pdf", contentDisposition: `attachment; filename="signed-${envelope.id}.pdf"` },
  });
  // POST /api/public/verify finds the organization by this hash in the directory: registered first, so a
  // recorded hash always resolves; one whose write below loses resolves to no envelope, which answers as unknown.
  await registerPublicKeys(tenant.directory, envelope.organizationId, "sealed_pdf", [sha256]);
  const unsealed = and(eq(envelopes.id, envelope.id), isNull(envelopes.sealedKey));
  // envelope.sealed is staged in the batch that records the PDF, behind the guard that none is recorded yet: of the
  // attempts a redelivery or a retry makes, the one that records it emits it, once.
  return withDeferred(async (defer) => {
    const ctx = systemContext(env, db, envelope.organizationId, `seal:${envelope.id}`, defer);
    const after = { ...loaded, envelope: { ...envelope, sealedKey: key, sealedSha256: sha256 } };
    try {
      await commit(
        ctx,
        [expectRow(db, envelopes, unsealed), db.update(envelopes).set({ sealedKey: key, sealedSha256: sha256 }).where(unsealed)],
        [envelopeEvent(ctx, "envelope.sealed", after, loaded, undefined, { documentSha256: sha256 })],
      );
      return true;
    } catch (err) {
      if (err instanceof StaleWrite) return false;
      throw err;
    }
  });
}

/**
 * Every recipient's field values drawn into their boxes on the uploaded document's pages (stamp.ts): what they gave
 * at signing, a read-only or untouched prefilled value as the sender set it, and a date left empty as the day they
 * signed in the organization's time zone.
 */
async function stampValues(
  env: Env,
  tenant: Tenant,
  document: typeof documents.$inferSelect,
  signers: SignerRow[],
  packet: PDFDocument,
): Promise<void> {
  const org = await tenant.db
    .select({ timeZone: organizations.timeZone })
    .from(organizations)
    .where(eq(organizations.id, document.organizationId))
    .get();
  const day = (at: string | null) =>
    at
      ? new Intl.DateTimeFormat("en-CA", { timeZone: org?.timeZone ?? "UTC", year: "numeric", month: "2-digit", day: "2-digit" }).format(
          new Date(at),
        )
      : null;
  const fields: StampField[] = signers.flatMap((s) =>
    (s.fields ?? []).map((f) => {
      const given = s.fieldValues?.[f.id] ?? null;
      const signedDay = f.type === "date" && !given && DONE.has(s.status) ? day(s.signedAt) : null;
      return { ...f, value: given ?? (signedDay ? { text: signedDay } : null) };
    }),
  );
  if (fields.length === 0) return;
  const pages = (document.pages ?? []).map((p) => ({ crop: p.crop, rotation: p.rotation }));
  await stampFields(env, packet, pages, fields, {
    images: async (key) => {
      const object = await env.FILES.get(key);
      return object ? new Uint8Array(await object.arrayBuffer()) : null;
    },
  });
}

/** A copy of the sealed PDF to every signer and the sender, then the mark that they went. */
async function mailCopies(env: Env, tenant: Tenant, { envelope, signers }: Loaded): Promise<void> {
  const db = tenant.db;
  const sender = envelope.createdBy
    ? await db.select({ email: users.email, name: users.name }).from(users).where(eq(users.id, envelope.createdBy)).get()
    : undefined;
  const key = sealedDocumentKey(envelope.organizationId, envelope.id);
  const copy = await signedFileUrl(env, readConfig(env).APP_URL.replace(/\/$/, ""), key, COPY_LINK_TTL_SECONDS);
  const everyone = [
    ...signers.map((s) => ({ name: s.name, email: s.email })),
    ...(sender ? [{ name: sender.name ?? sender.email, email: sender.email }] : []),
  ];
  // One copy per address: a sender who also signed gets one.
  const recipients = everyone.filter((r, i) => everyone.findIndex((o) => o.email.toLowerCase() === r.email.toLowerCase()) === i);
  const title = envelope.documentTitle ?? "The document";
  await Promise.all(
    recipients.map((r) =>
      sendAfterCommit(
        env,
        db,
        {
          organizationId: envelope.organizationId,
          to: r.email,
          subject: `Signed by every party: ${title}`,
          text: `Hello ${r.name},\n\nEvery party has signed "${title}". Your copy, sealed so that any PDF reader can check it has not changed since:\n${copy.url}\n\nThe link works until ${copy.expiresAt}. Keep the PDF: it is your record of the signed document.`,
        },
        "signed copy",
        { envelopeId: envelope.id },
      ),
    ),
  );
  await db
    .update(envelopes)
    .set({ copiesMailedAt: nowIso() })
    .where(and(eq(envelopes.id, envelope.id), isNull(envelopes.copiesMailedAt)));
}

export const sealingConsumer: EventConsumer = {
  name: "signed-document-seal",
  accepts: (type) => type === "DOCUMENT_SIGNED",
  async handle(events, { env, db }) {
    // The dispatcher hands over the events of one shard with that shard (events/consumers.ts).
    const tenant = onShard(env, db);
    for (const e of events) await sealEnvelope(env, tenant, String((e.data as { envelopeId?: unknown }).envelopeId));
  },
};
