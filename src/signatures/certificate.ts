import { PDFDocument, type PDFFont, type PDFPage, rgb, StandardFonts } from "@pdfme/pdf-lib";
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

/** The standard PDF fonts encode WinAnsi only; anything else is shown as "?" (the audit route has every byte). */
const printable = (text: string) => text.replace(/[^\x20-\x7e\u00a0-\u00ff]/g, "?");

interface Lines {
  page: PDFPage;
  y: number;
}

function writer(pdf: PDFDocument, font: PDFFont, bold: PDFFont) {
  const state: Lines = { page: pdf.addPage([595, 842]), y: 790 };
  return (text: string, { size = 10, strong = false, indent = 0 } = {}) => {
    if (state.y < 60) {
      state.page = pdf.addPage([595, 842]);
      state.y = 790;
    }
    // Long values (hashes, user agents) wrap at the page edge rather than run off it.
    const max = Math.floor((495 - indent) / (size * 0.52));
    for (let i = 0, s = printable(text); i < Math.max(1, s.length); i += max) {
      state.page.drawText(s.slice(i, i + max), { x: 50 + indent, y: state.y, size, font: strong ? bold : font, color: rgb(0.1, 0.1, 0.12) });
      state.y -= size + 5;
    }
  };
}

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
  const line = writer(pdf, await pdf.embedFont(StandardFonts.Helvetica), await pdf.embedFont(StandardFonts.HelveticaBold));
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
