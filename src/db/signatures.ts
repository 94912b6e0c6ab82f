import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { RoleField } from "./documents";

export type EnvelopeStatus = "partially_signed" | "completed" | "declined" | "voided" | "expired";
/** `pending`: a sequential signer whose turn has not come (no link yet); the spec's statuses follow from `sent`. */
export type SignerStatus =
  | "pending"
  | "sent"
  | "opened"
  | "authenticated"
  | "consented"
  | "signed"
  | "approved"
  | "viewed"
  | "copied"
  | "declined";
/** What a recipient of an uploaded document does (issue 44); every signer of a typed form is a `signer`. */
export type RecipientKind = "signer" | "approver" | "viewer" | "cc";
/** A recipient's field on an uploaded document: a role's field (documents.ts RoleField) placed for one recipient. */
export type EnvelopeField = Omit<RoleField, "role"> & { id: string };
/** A field's value as given at signing: text (dates as YYYY-MM-DD), a checkbox, a typed or a drawn (R2 key) signature. */
export type StoredValue = { text: string } | { checked: boolean } | { adopted: string } | { image: string };
export type EnvelopeSource = "api" | "template" | "public_link";
export type LinkVia = "email" | "embedded" | "in_person" | "public_link";
/** How a signer's identity is checked: `code`, the server verified a one-time code it mailed; `attested`, the client says so (spec rule 2). */
export type SignerVerification = "code" | "attested";
/** How a signer was authenticated, as the audit trail and the signed PDF record it. */
export type VerificationMethod = "email_code" | "client_attested";
export interface ReminderPlan {
  firstAfterDays: number;
  everyDays: number | null;
}
/** The audit chain's head, signed with the seal key at a terminal event (seal/keys.ts): a rebuilt chain no longer verifies. */
export interface ChainSeal {
  seq: number;
  hash: string;
  signature: string;
  certificateSha256: string;
  at: string;
}

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
    signerVerification: text().$type<SignerVerification>().notNull().default("attested"),
    /** The document as the signers read it: the PDF rendered at send (R2), its title and SHA-256. */
    documentKey: text(),
    documentTitle: text(),
    documentSha256: text(),
    reminders: text({ mode: "json" }).$type<ReminderPlan>(),
    /** When the cron mails the signers still to sign that the envelope expires in a day; null once mailed or not due. */
    expiryNoticeAt: text(),
    /** The sealed, signed PDF (document, signature pages, certificate) once built, and its SHA-256. */
    sealedKey: text(),
    sealedSha256: text(),
    /** When the signed copies were mailed: a redelivered seal mails them if the last attempt died before. */
    copiesMailedAt: text(),
    chainSeal: text({ mode: "json" }).$type<ChainSeal>(),
    /**
     * Set by a person's erasure on an envelope that never completed, in the batch that deletes it: the one case the
     * audit trail's append-only trigger lets rows go (migrations/tenant/0005). A completed envelope cannot be marked.
     */
    erasingAt: text(),
    /** How the envelope came to be: sent by the API, made from a template, or by a visitor of a template's public link. */
    source: text().$type<EnvelopeSource>().notNull().default("api"),
    /** The sender's note to the recipients, in their signing mail and on the signing page (a template's use sets it). */
    message: text(),
    templateId: text(),
    createdBy: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    version: integer().notNull().default(1),
  },
  (t) => [
    index("envelopes_org_document_idx").on(t.organizationId, t.documentId, t.createdAt),
    // The daily brief's envelopes waiting on signers (src/brief/): an organization's open ones, oldest first.
    index("envelopes_org_status_idx").on(t.organizationId, t.status, t.createdAt, t.id),
    // The cron sweep for open envelopes past their expiry whose alarm was never set (signatures/sweeps.ts).
    index("envelopes_status_expires_idx").on(t.status, t.expiresAt),
    index("envelopes_expiry_notice_idx").on(t.expiryNoticeAt),
    // POST /api/public/verify finds the envelope of a sealed PDF by the file's SHA-256.
    index("envelopes_sealed_sha256_idx").on(t.sealedSha256),
  ],
);

/** Signers of an envelope. Their live links are in signing_links; `remindAt` is when the cron next reminds them. */
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
    /** The sender's label for a recipient of an uploaded document, unique in its envelope (null on a typed form). */
    key: text(),
    kind: text().$type<RecipientKind>().notNull().default("signer"),
    /** Recipients of one order act in parallel; the next order's turn comes when everyone before is done. */
    signingOrder: integer().notNull().default(1),
    fields: text({ mode: "json" }).$type<EnvelopeField[]>(),
    fieldValues: text({ mode: "json" }).$type<Record<string, StoredValue>>(),
    /** Signs inside the sender's own application (a view URL the sender asks for): never mailed a link. */
    embedded: integer({ mode: "boolean" }).notNull().default(false),
    /** Signs in person on the device of this user of the organization (a host session): never mailed a link. */
    hostUserId: text(),
    status: text().$type<SignerStatus>().notNull(),
    sentAt: text(),
    signedAt: text(),
    declinedAt: text(),
    verification: text().$type<VerificationMethod>(),
    remindAt: text(),
  },
  (t) => [index("envelope_signers_envelope_idx").on(t.envelopeId, t.position), index("envelope_signers_remind_idx").on(t.remindAt)],
);

/**
 * Live signing links: the SHA-256 of each raw token (the raw token is only in the answer that created it and in the
 * mail). A signer may hold several (the first mail, then each reminder's); all die when the signer signs or declines
 * or the envelope ends.
 */
export const signingLinks = sqliteTable(
  "signing_links",
  {
    tokenHash: text().primaryKey(),
    envelopeId: text().notNull(),
    signerId: text().notNull(),
    organizationId: text().notNull(),
    /** How the link reached its holder: mailed, opened by an embedded view or a host session, or a public link's visitor. */
    via: text().$type<LinkVia>().notNull().default("email"),
    createdAt: text().notNull(),
  },
  (t) => [index("signing_links_envelope_idx").on(t.envelopeId)],
);

/** An organization's defaults for new envelopes (GET/PUT /api/signatures/settings). */
export const signatureSettings = sqliteTable("signature_settings", {
  organizationId: text().primaryKey(),
  signerVerification: text().$type<SignerVerification>().notNull().default("attested"),
  reminders: text({ mode: "json" }).$type<ReminderPlan>(),
  updatedAt: text().notNull(),
});

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
