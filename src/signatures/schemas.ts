import { z } from "@hono/zod-openapi";
import { oneLineText } from "../lib/validation";

export const SIGNER_ACTIONS = ["authenticate", "consent", "sign", "decline"] as const;
export const ENVELOPE_STATUSES = ["partially_signed", "completed", "declined", "voided", "expired"] as const;
export const SIGNER_STATUSES = ["pending", "sent", "opened", "authenticated", "consented", "signed", "declined"] as const;
export const MAX_SIGNERS = 20;

export const SignerInput = z.strictObject({ name: oneLineText(200), email: z.email().max(254), role: oneLineText(50) }).openapi("SignerInput");

/** POST /api/documents/{id}/signature (spec: Endpoints; DESIGN.md contract 4 for `signers`). */
export const SignatureRequest = z
  .strictObject({
    mode: z.enum(["parallel", "sequential"]).default("parallel"),
    expiresInDays: z.int().min(1).max(365).optional().openapi({ description: "Links and the envelope expire after this many days; no expiry when left out" }),
    signers: z
      .array(SignerInput)
      .max(MAX_SIGNERS)
      .optional()
      .openapi({ description: "Replaces the signing parties derived from the document (landlords, then tenants), in signing order" }),
  })
  .refine((r) => !r.signers || new Set(r.signers.map((s) => s.email.toLowerCase())).size === r.signers.length, {
    message: "Each signer once (by e-mail)",
    path: ["signers"],
    params: { code: "duplicate_signer" },
  })
  .openapi("SignatureRequest");
export type SignatureRequest = z.infer<typeof SignatureRequest>;

export const SigningLink = z
  .object({ signerId: z.string(), name: z.string(), email: z.string(), role: z.string(), url: z.string().openapi({ example: "https://app.example.test/sign/sign_…" }) })
  .openapi("SigningLink");

export const SignatureCreated = z
  .object({
    envelopeId: z.string(),
    links: z.array(SigningLink).openapi({ description: "Every signer's link in parallel mode; the first signer's in sequential mode (the next link is sent when the previous signer has signed)" }),
  })
  .openapi("SignatureCreated");

export const Signer = z
  .object({
    id: z.string(),
    name: z.string(),
    email: z.string(),
    role: z.string(),
    status: z.enum(SIGNER_STATUSES).openapi({ description: "sent, opened, authenticated, consented, signed, declined; pending for a sequential signer whose turn has not come" }),
    signedAt: z.string().optional(),
    sentAt: z.string().optional(),
  })
  .openapi("Signer");

export const Envelope = z
  .object({
    id: z.string(),
    documentId: z.string(),
    status: z.enum(ENVELOPE_STATUSES),
    mode: z.enum(["parallel", "sequential"]),
    createdAt: z.string(),
    completedAt: z.string().nullable(),
    expiresAt: z.string().nullable(),
    signers: z.array(Signer),
    certificate: z
      .object({ status: z.enum(["not_applicable", "pending", "ready"]), url: z.string().nullable().openapi({ description: "Where to get a signed, expiring download link, once ready" }) })
      .openapi({ description: "The certificate of completion, generated once every signer has signed" }),
  })
  .openapi("Envelope");
export type Envelope = z.infer<typeof Envelope>;

export const EnvelopeList = z.object({ envelopes: z.array(Envelope).openapi({ description: "Newest first, at most 100" }) });

export const VoidQuery = z.strictObject({ reason: z.string().trim().min(1).max(500).default("voided by agent") });

export const AuditEntry = z
  .object({
    seq: z.int(),
    event: z.string().openapi({ example: "signed" }),
    signerId: z.string().nullable(),
    at: z.string(),
    ip: z.string().nullable(),
    userAgent: z.string().nullable(),
    data: z.record(z.string(), z.unknown()).nullable(),
    prevHash: z.string(),
    hash: z.string(),
  })
  .openapi("AuditEntry");

export const AuditTrail = z
  .object({
    events: z.array(AuditEntry),
    chain: z.object({
      valid: z.boolean(),
      head: z.string().nullable().openapi({ description: "Hash of the last entry" }),
      length: z.int(),
      brokenAt: z.int().nullable().openapi({ description: "seq of the first entry that does not verify" }),
    }),
  })
  .openapi("AuditTrail");

export const CertificateLink = z.object({ url: z.string(), expiresAt: z.string() }).openapi("CertificateLink");

export const EnvelopeIdParam = z.object({ envelopeId: z.string().min(1).max(100).openapi({ param: { name: "envelopeId", in: "path" } }) });

/** POST /api/public/sign/{token} (spec: Endpoints rule 2). */
export const SignerAction = z
  .strictObject({
    action: z.enum(SIGNER_ACTIONS),
    codeVerified: z.boolean().optional().openapi({ description: "With authenticate: whether the one-time code or knowledge-based check was verified" }),
    reason: z.string().max(1000).optional().openapi({ description: "With decline; stored as data, never interpreted" }),
    challengeToken: z.string().min(1).max(4096).optional().openapi({ description: "Turnstile token, required for sign and decline when the bot challenge is configured" }),
  })
  .openapi("SignerAction");
export type SignerAction = z.infer<typeof SignerAction>;

export const SignerView = z
  .object({ state: z.literal("active"), signer: z.object({ name: z.string(), role: z.string(), status: z.enum(SIGNER_STATUSES), documentId: z.string() }) })
  .openapi("SignerView");
export { Gone } from "../platform/api-family";
export const ActionDone = z.object({ ok: z.literal(true), completed: z.boolean().optional().openapi({ description: "With sign: true when this signature completed the envelope" }) }).openapi("SignerActionResult");

export const TokenParam = z.object({ token: z.string().min(1).max(200).openapi({ param: { name: "token", in: "path" } }) });
