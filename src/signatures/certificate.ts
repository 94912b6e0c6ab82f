import type { PDFDocument } from "@pdfme/pdf-lib";
import { pdfLib } from "../files/pdf-lib";
import { and, eq, isNull } from "drizzle-orm";
import { documents, envelopes } from "../db/schema";
import { FORMS, renderDocumentPdf } from "../documents/service";
import type { Env } from "../env";
import type { EventConsumer } from "../events/consumers";
import type { RecipientKind } from "../db/signatures";
import { type UnicodeWriter, unicodeWriter } from "../files/pdf-writer";
import { onShard } from "../shards/tenants";
import { type AuditRow, readAudit, verifyChain } from "./audit";
import { loadEnvelope, type Tenant } from "./machine";

/**
 * The certificate of completion (spec: Envelope state table, "certificate generated"): a PDF naming the document and
 * its SHA-256, every signer with each step they took (time, IP, user agent) and the audit chain's head, stored in R2.
 * Built by a consumer of DOCUMENT_SIGNED, so a failure is retried by the queue and never holds up the signature.
 * The signed packet is the document as signed, a signature page per signer, then this certificate, in one PDF.
 */
export const certificateKey = (organizationId: string, envelopeId: string) => `certificates/${organizationId}/${envelopeId}.pdf`;

export type Verification = "email_code" | "client_attested";

export interface PacketSigner {
  id: string;
  name: string;
  email: string;
  role: string;
  /** signer (a typed form's parties too), approver, viewer or cc; left out: signer. */
  kind?: RecipientKind;
  signedAt: string | null;
  verification: Verification | null;
}

export interface SignedPacketInput {
  /** documentSha256: hex SHA-256 of the document PDF the signers saw. */
  envelope: { id: string; mode: string; completedAt: string | null; documentSha256: string };
  document: { id: string; formKey: string; sha256: string; canonical: Record<string, unknown>; title?: string | null };
  /** The exact PDF the signers saw; without it the document is rendered again from its canonical data. */
  documentPdf?: Uint8Array;
  signers: PacketSigner[];
  audit: AuditRow[];
  chain: { valid: boolean; head: string | null; length: number };
  /** Called once the document's pages are in the packet (the same page indices), before anything is appended. */
  onDocumentPages?: (packet: PDFDocument) => Promise<void>;
}

/** The packet's input, where the PDF's hash and how signers were verified may not be known. */
export type CertificateInput = Omit<SignedPacketInput, "envelope" | "signers" | "documentPdf" | "onDocumentPages"> & {
  envelope: Omit<SignedPacketInput["envelope"], "documentSha256"> & { documentSha256?: string | null };
  signers: (Omit<PacketSigner, "verification"> & { verification?: Verification | null })[];
};

const VERIFICATION: Record<Verification, string> = {
  email_code: "E-mail one-time code (verified by the server)",
  client_attested: "Attested by the signer's client",
};
const verificationText = (v: Verification | null | undefined) => (v ? VERIFICATION[v] : "not recorded");
const formTitle = (formKey: string) => FORMS[formKey]?.title ?? formKey;
const documentTitle = (d: SignedPacketInput["document"]) => d.title ?? formTitle(d.formKey);

/** What a recipient did, as the certificate says it; how, for a signature made embedded or in person (issue 45). */
function recipientLine(s: CertificateInput["signers"][number], audit: AuditRow[]): string {
  const who = `${s.name} <${s.email}>, ${s.role}`;
  if (s.kind === "cc") return `${who}: receives the sealed copy`;
  if (s.kind === "viewer") return `${who}: viewed`;
  const done = audit.findLast((a) => a.signerId === s.id && (a.event === "signed" || a.event === "approved"));
  return `${who}: ${s.kind === "approver" ? "approved" : "signed"}${signedHow(done?.data ?? null)} ${s.signedAt ?? ""}`;
}

/** The audit entry's `via` (session-transitions.ts signedVia), in words. */
function signedHow(data: Record<string, unknown> | null): string {
  if (data?.via === "embedded") return " embedded in the sender's application,";
  if (data?.via !== "in_person") return "";
  const host = data.host as { name?: string | null; email?: string } | undefined;
  return ` in person, hosted by ${[host?.name, host?.email ? `<${host.email}>` : null].filter(Boolean).join(" ")},`;
}

function writeCertificate(w: UnicodeWriter, input: CertificateInput) {
  w.line("Certificate of completion", { size: 18, strong: true });
  w.gap(8);
  w.line(`Document: ${input.document.id}`);
  if (input.document.formKey === "upload") {
    w.line(`Title: ${documentTitle(input.document)} (an uploaded PDF)`);
    w.line(`Uploaded PDF SHA-256: ${input.document.sha256}`);
  } else {
    w.line(`Form: ${formTitle(input.document.formKey)} (${input.document.formKey})`);
    w.line(`Document SHA-256: ${input.document.sha256}`);
  }
  if (input.envelope.documentSha256) w.line(`Document PDF SHA-256 (as the signers saw it): ${input.envelope.documentSha256}`);
  w.line(`Envelope: ${input.envelope.id} (${input.envelope.mode})`);
  w.line(`Completed: ${input.envelope.completedAt ?? ""}`);
  w.gap(10);
  w.line("Signers", { size: 13, strong: true });
  for (const s of input.signers) {
    w.gap(4);
    w.line(recipientLine(s, input.audit), { strong: true });
    w.line(`Verification: ${verificationText(s.verification)}`, { indent: 14, size: 9 });
    for (const e of input.audit.filter((a) => a.signerId === s.id)) {
      w.line(`${e.event} at ${e.at} from ${e.ip ?? "unknown IP"} (${e.userAgent ?? "unknown agent"})`, { indent: 14, size: 9 });
    }
  }
  w.gap(10);
  w.line("Audit trail", { size: 13, strong: true });
  w.line(`${input.chain.length} entries, hash chain ${input.chain.valid ? "verified" : "BROKEN"}; head ${input.chain.head ?? ""}`);
}

/** One page per signer: who, the typed signature, and where and how it was given (from their "signed" audit entry). */
function writeSignaturePage(w: UnicodeWriter, input: SignedPacketInput, s: PacketSigner) {
  const signed = input.audit.findLast((a) => a.signerId === s.id && a.event === "signed");
  w.newPage();
  w.line(`Signature: ${s.role}`, { size: 16, strong: true });
  w.line(`${documentTitle(input.document)}, document ${input.document.id}`, { size: 9, muted: true });
  w.gap(14);
  w.line(`Name: ${s.name}`);
  w.line(`Role: ${s.role}`);
  w.line(`E-mail: ${s.email}`);
  w.gap(18);
  w.line(`/s/ ${s.name}`, { size: 22 });
  w.gap(18);
  w.line(`Signed at: ${s.signedAt ?? "not signed"}`);
  w.line(`IP address: ${signed?.ip ?? "not recorded"}`);
  w.line(`User agent: ${signed?.userAgent ?? "not recorded"}`);
  w.line(`Verification: ${verificationText(s.verification)}`);
  const how = signedHow(signed?.data ?? null);
  if (how) w.line(`Signed${how.replace(/,$/, "")}`);
  w.gap(10);
  w.line(`Envelope ${input.envelope.id}${input.envelope.documentSha256 ? `; document PDF SHA-256 ${input.envelope.documentSha256}` : ""}`, {
    size: 8,
    muted: true,
  });
}

export async function renderCertificate(env: Env, input: CertificateInput): Promise<Uint8Array> {
  const { PDFDocument } = await pdfLib();
  const pdf = await PDFDocument.create();
  pdf.setTitle(`Certificate of completion ${input.envelope.id}`);
  pdf.setProducer("Brokerage Edge API");
  const w = await unicodeWriter(env, pdf);
  writeCertificate(w, input);
  await w.finish((page, pages) => `Certificate of completion, envelope ${input.envelope.id} · page ${page} of ${pages}`);
  return pdf.save();
}

/**
 * The signed packet, unsaved so the caller can seal it: the PDF the signers saw (so its pages are those very pages),
 * a signature page per signer, then the certificate of completion.
 */
export async function renderSignedPacket(env: Env, input: SignedPacketInput): Promise<PDFDocument> {
  const { PDFDocument } = await pdfLib();
  // The document's own PDF is the packet: its pages stay those very pages, and a 15 MB upload is held once, not copied
  // into a second document (issue 44: a 100-page upload seals within a Worker's 128 MB).
  const packet = await PDFDocument.load(input.documentPdf ?? (await renderDocumentPdf(env, input.document)), { updateMetadata: false });
  packet.setTitle(`${documentTitle(input.document)}, signed (envelope ${input.envelope.id})`);
  packet.setProducer("Brokerage Edge API");
  // An uploaded document's fields, drawn on its own pages before the signature pages follow them.
  await input.onDocumentPages?.(packet);
  const w = await unicodeWriter(env, packet);
  for (const s of input.signers) if (s.kind === undefined || s.kind === "signer" || s.kind === "approver") writeSignaturePage(w, input, s);
  w.newPage();
  writeCertificate(w, input);
  await w.finish((page, pages) => `Envelope ${input.envelope.id} · signatures and certificate, page ${page} of ${pages}`);
  return packet;
}

/** Builds and stores the certificate of a completed envelope, once: a second call finds it done. */
export async function generateCertificate(env: Env, tenant: Tenant, envelopeId: string): Promise<void> {
  const db = tenant.db;
  const loaded = await loadEnvelope(tenant, envelopeId);
  if (loaded?.envelope.status !== "completed" || loaded.envelope.certificateKey) return;
  const { envelope, signers } = loaded;
  const [document, audit] = await Promise.all([
    db.select().from(documents).where(eq(documents.id, envelope.documentId)).get(),
    readAudit(db, envelope.id),
  ]);
  if (!document) return;
  const pdf = await renderCertificate(env, { envelope, document, signers, audit, chain: await verifyChain(envelope.id, audit) });
  const key = certificateKey(envelope.organizationId, envelope.id);
  await env.FILES.put(key, pdf, {
    httpMetadata: { contentType: "application/pdf", contentDisposition: `attachment; filename="certificate-${envelope.id}.pdf"` },
  });
  await db
    .update(envelopes)
    .set({ certificateKey: key })
    .where(and(eq(envelopes.id, envelope.id), isNull(envelopes.certificateKey)));
}

export const certificateConsumer: EventConsumer = {
  name: "certificate-of-completion",
  accepts: (type) => type === "DOCUMENT_SIGNED",
  async handle(events, { env, db }) {
    // The dispatcher hands over the events of one shard with that shard (events/consumers.ts).
    const tenant = onShard(env, db);
    for (const e of events) await generateCertificate(env, tenant, String((e.data as { envelopeId?: unknown }).envelopeId));
  },
};
