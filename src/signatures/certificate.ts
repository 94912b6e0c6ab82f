import { PDFDocument } from "@pdfme/pdf-lib";
import { pdfWriter } from "../files/pdf-writer";
import { and, eq, isNull } from "drizzle-orm";
import { createDb, type Db } from "../db/client";
import { documents, envelopes } from "../db/schema";
import type { Env } from "../env";
import type { EventConsumer } from "../events/consumers";
import { FORMS } from "../documents/forms";
import { type AuditRow, readAudit, verifyChain } from "./audit";
import { loadEnvelope } from "./machine";

/**
 * The certificate of completion (spec: Envelope state table, "certificate generated"): a PDF naming the document and
 * its SHA-256, every signer with each step they took (time, IP, user agent) and the audit chain's head, stored in R2.
 * Built by a consumer of DOCUMENT_SIGNED, so a failure is retried by the queue and never holds up the signature.
 */
export const certificateKey = (organizationId: string, envelopeId: string) => `certificates/${organizationId}/${envelopeId}.pdf`;

export async function renderCertificate(input: {
  envelope: { id: string; completedAt: string | null; mode: string };
  document: { id: string; formKey: string; sha256: string };
  signers: { id: string; name: string; email: string; role: string; signedAt: string | null }[];
  audit: AuditRow[];
  chain: { valid: boolean; head: string | null; length: number };
}): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  pdf.setTitle(`Certificate of completion ${input.envelope.id}`);
  pdf.setProducer("Brokerage Edge API");
  const { line } = await pdfWriter(pdf);
  line("Certificate of completion", { size: 18, strong: true });
  line("");
  line(`Document: ${input.document.id}`);
  line(`Form: ${FORMS[input.document.formKey]?.title ?? input.document.formKey} (${input.document.formKey})`);
  line(`Document SHA-256: ${input.document.sha256}`);
  line(`Envelope: ${input.envelope.id} (${input.envelope.mode})`);
  line(`Completed: ${input.envelope.completedAt ?? ""}`);
  line("");
  line("Signers", { size: 13, strong: true });
  for (const s of input.signers) {
    line(`${s.name} <${s.email}>, ${s.role}: signed ${s.signedAt ?? ""}`, { strong: true });
    for (const e of input.audit.filter((a) => a.signerId === s.id)) line(`${e.event} at ${e.at} from ${e.ip ?? "unknown IP"} (${e.userAgent ?? "unknown agent"})`, { indent: 14, size: 9 });
  }
  line("");
  line("Audit trail", { size: 13, strong: true });
  line(`${input.chain.length} entries, hash chain ${input.chain.valid ? "verified" : "BROKEN"}; head ${input.chain.head ?? ""}`);
  return pdf.save();
}

/** Builds and stores the certificate of a completed envelope, once: a second call finds it done. */
export async function generateCertificate(env: Env, db: Db, envelopeId: string): Promise<void> {
  const loaded = await loadEnvelope(env, envelopeId);
  if (!loaded || loaded.envelope.status !== "completed" || loaded.envelope.certificateKey) return;
  const { envelope, signers } = loaded;
  const [document, audit] = await Promise.all([db.select().from(documents).where(eq(documents.id, envelope.documentId)).get(), readAudit(db, envelope.id)]);
  if (!document) return;
  const pdf = await renderCertificate({ envelope, document, signers, audit, chain: await verifyChain(envelope.id, audit) });
  const key = certificateKey(envelope.organizationId, envelope.id);
  await env.FILES.put(key, pdf, { httpMetadata: { contentType: "application/pdf", contentDisposition: `attachment; filename="certificate-${envelope.id}.pdf"` } });
  await db.update(envelopes).set({ certificateKey: key }).where(and(eq(envelopes.id, envelope.id), isNull(envelopes.certificateKey)));
}

export const certificateConsumer: EventConsumer = {
  name: "certificate-of-completion",
  accepts: (type) => type === "DOCUMENT_SIGNED",
  async handle(events, { env }) {
    const db = createDb(env.DB);
    for (const e of events) await generateCertificate(env, db, String((e.data as { envelopeId?: unknown }).envelopeId));
  },
};
