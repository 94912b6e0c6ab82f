import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export type EnvelopeStatus = "partially_signed" | "completed" | "declined" | "voided" | "expired";
/** `pending`: a sequential signer whose turn has not come (no link yet); the spec's statuses follow from `sent`. */
export type SignerStatus = "pending" | "sent" | "opened" | "authenticated" | "consented" | "signed" | "declined";

/** Signature envelopes (spec: Envelope). Every transition runs in the envelope's EnvelopeSigner Durable Object. */
export const envelopes = sqliteTable(
  "envelopes",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    documentId: text().notNull(),
    status: text().$type<EnvelopeStatus>().notNull(),
    mode: text().$type<"parallel" | "sequential">().notNull(),
    expiresAt: text(),
    completedAt: text(),
    endedReason: text(),
    /** R2 key of the certificate of completion, once generated. */
    certificateKey: text(),
    createdBy: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    version: integer().notNull().default(1),
  },
  (t) => [
    index("envelopes_org_document_idx").on(t.organizationId, t.documentId, t.createdAt),
    // The cron sweep for open envelopes past their expiry whose alarm was never set (signatures/expiry.ts).
    index("envelopes_status_expires_idx").on(t.status, t.expiresAt),
  ],
);

/** Signers of an envelope; `tokenHash` is the SHA-256 of the live signing token, null once the link is dead. */
export const envelopeSigners = sqliteTable(
  "envelope_signers",
  {
    id: text().primaryKey(),
    envelopeId: text().notNull(),
    organizationId: text().notNull(),
    position: integer().notNull(),
    name: text().notNull(),
    email: text().notNull(),
    role: text().notNull(),
    status: text().$type<SignerStatus>().notNull(),
    tokenHash: text(),
    sentAt: text(),
    signedAt: text(),
    declinedAt: text(),
  },
  (t) => [uniqueIndex("envelope_signers_token_unique").on(t.tokenHash), index("envelope_signers_envelope_idx").on(t.envelopeId, t.position)],
);

/**
 * The envelope's audit trail: every event with time, IP and user agent, hash-chained (each row's hash covers the
 * previous row's hash and its own fields). Triggers in the migration refuse UPDATE and DELETE.
 */
export const envelopeAudit = sqliteTable(
  "envelope_audit",
  {
    envelopeId: text().notNull(),
    seq: integer().notNull(),
    organizationId: text().notNull(),
    event: text().notNull(),
    signerId: text(),
    at: text().notNull(),
    ip: text(),
    userAgent: text(),
    data: text({ mode: "json" }).$type<Record<string, unknown>>(),
    prevHash: text().notNull(),
    hash: text().notNull(),
  },
  (t) => [primaryKey({ columns: [t.envelopeId, t.seq] })],
);
