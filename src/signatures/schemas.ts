import { z } from "@hono/zod-openapi";
import { freeText, oneLineText } from "../lib/validation";

export const SIGNER_ACTIONS = ["send_code", "authenticate", "consent", "sign", "decline"] as const;
export const SIGNER_VERIFICATIONS = ["code", "attested"] as const;
export const ENVELOPE_STATUSES = ["partially_signed", "completed", "declined", "voided", "expired"] as const;
export const SIGNER_STATUSES = ["pending", "sent", "opened", "authenticated", "consented", "signed", "declined"] as const;
export const MAX_SIGNERS = 20;

export const SignerInput = z
  .strictObject({ name: oneLineText(200), email: z.email().max(254), role: oneLineText(50) })
  .openapi("SignerInput");

const REMINDERS = "Reminders mailed by the cron to each signer whose turn it is and who has not signed, at most 10 per signer";
/** Not a named component: a nullable reference renders as allOf in the document, which null does not match. */
export const ReminderPlan = z
  .strictObject({
    firstAfterDays: z.int().min(1).max(60).openapi({ description: "Days after a signer's link is sent before the first reminder" }),
    everyDays: z
      .int()
      .min(1)
      .max(60)
      .nullable()
      .default(null)
      .openapi({ description: "Days between later reminders; null: one reminder only" }),
  })
  .openapi({ description: REMINDERS });

const SignerVerificationField = z.enum(SIGNER_VERIFICATIONS).openapi({
  description:
    "`code`: the server mails each signer a one-time code and checks it (send_code, then authenticate with code); `attested`: the signer's client may attest it checked them (codeVerified: true)",
});

/** POST /api/documents/{id}/signature (spec: Endpoints; DESIGN.md contract 4 for `signers`). */
export const SignatureRequest = z
  .strictObject({
    mode: z.enum(["parallel", "sequential"]).default("parallel"),
    expiresInDays: z
      .int()
      .min(1)
      .max(365)
      .optional()
      .openapi({ description: "Links and the envelope expire after this many days; no expiry when left out" }),
    signers: z.array(SignerInput).max(MAX_SIGNERS).optional().openapi({
      description:
        "Replaces the signing parties derived from the document (GET /api/documents/forms: each form's roles, in order), in signing order. Each address once (409 otherwise)",
    }),
    signerVerification: SignerVerificationField.optional().openapi({
      description:
        "How signers are verified; default: the organization's setting (GET /api/signatures/settings), itself `attested` until changed",
    }),
    reminders: ReminderPlan.nullable()
      .optional()
      .openapi({ description: "Reminders; null: none for this envelope; left out: the organization's setting (none until set)" }),
  })
  .openapi("SignatureRequest");
export type SignatureRequest = z.infer<typeof SignatureRequest>;

export const SigningLink = z
  .object({
    signerId: z.string(),
    name: z.string(),
    email: z.string(),
    role: z.string(),
    url: z.string().optional().openapi({
      example: "https://app.example.test/sign/sign_…",
      description: "Shown once: an Idempotency-Key replay of this answer leaves it out (the link went to the signer by mail)",
    }),
  })
  .openapi("SigningLink");

export const SignatureCreated = z
  .object({
    envelopeId: z.string(),
    links: z.array(SigningLink).openapi({
      description:
        "Every signer's link in parallel mode; the first signer's in sequential mode (the next link is sent when the previous signer has signed)",
    }),
  })
  .openapi("SignatureCreated");

export const Signer = z
  .object({
    id: z.string(),
    name: z.string(),
    email: z.string(),
    role: z.string(),
    status: z.enum(SIGNER_STATUSES).openapi({
      description: "sent, opened, authenticated, consented, signed, declined; pending for a sequential signer whose turn has not come",
    }),
    signedAt: z.string().optional(),
    sentAt: z.string().optional(),
    verification: z
      .enum(["email_code", "client_attested"])
      .optional()
      .openapi({ description: "How the signer was authenticated, once they were" }),
  })
  .openapi("Signer");

const FileStatus = (what: string) =>
  z
    .object({
      status: z.enum(["not_applicable", "pending", "ready"]),
      url: z.string().nullable().openapi({ description: "Where to get a signed, expiring download link, once ready" }),
    })
    .openapi({ description: what });

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
    signerVerification: z.enum(SIGNER_VERIFICATIONS),
    reminders: ReminderPlan.nullable(),
    document: z
      .object({
        title: z.string().nullable(),
        sha256: z.string().nullable().openapi({ description: "SHA-256 (hex) of the PDF the signers were shown" }),
      })
      .openapi({ description: "The document as the signers read it, rendered when the envelope was sent" }),
    certificate: FileStatus("The certificate of completion, generated once every signer has signed"),
    signedDocument: FileStatus(
      "The sealed PDF (the document, a signature page per signer, the certificate), PAdES-signed with the platform's seal, built once every signer has signed",
    ),
  })
  .openapi("Envelope");
export type Envelope = z.infer<typeof Envelope>;

export const EnvelopeList = z.object({ envelopes: z.array(Envelope).openapi({ description: "Newest first, at most 100" }) });

export const VoidQuery = z.strictObject({ reason: oneLineText(500).default("voided by agent") });

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
      seal: z.enum(["valid", "invalid", "missing", "not_applicable", "unverifiable"]).openapi({
        description:
          "The signature of the chain's head made with the seal key at the terminal event: valid, invalid (the chain was rebuilt or the signature changed), missing (a terminal envelope without one), not_applicable (still open), unverifiable (no seal certificate configured to check it with)",
      }),
    }),
  })
  .openapi("AuditTrail");

export const CertificateLink = z.object({ url: z.string(), expiresAt: z.string() }).openapi("CertificateLink");

export const SignatureSettings = z
  .object({ signerVerification: z.enum(SIGNER_VERIFICATIONS), reminders: ReminderPlan.nullable() })
  .openapi("SignatureSettings", { description: "The organization's defaults for new envelopes" });
export const SignatureSettingsUpdate = z
  .strictObject({ signerVerification: SignerVerificationField.optional(), reminders: ReminderPlan.nullable().optional() })
  .openapi("SignatureSettingsUpdate");

export const EnvelopeIdParam = z.object({
  envelopeId: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "envelopeId", in: "path" } }),
});
export const SignerIdParams = EnvelopeIdParam.extend({
  signerId: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "signerId", in: "path" } }),
});

/** POST /api/public/sign/{token} (spec: Endpoints rule 2). */
export const SignerAction = z
  .strictObject({
    action: z.enum(SIGNER_ACTIONS).openapi({
      description:
        "send_code mails the signer a one-time code; then authenticate (with code), consent, sign; decline from any active state",
    }),
    code: z
      .string()
      .regex(/^[0-9]{6}$/, "Six digits")
      .optional()
      .openapi({
        description:
          "With authenticate: the 6-digit code send_code mailed to the signer (checked by the server; 10 minutes, one use, 5 tries; 15 wrong codes in all lock the signer until the sender resends the link)",
      }),
    codeVerified: z.boolean().optional().openapi({
      description:
        "With authenticate: whether the one-time code or knowledge-based check was verified (spec rule 2); refused with 409 verification_required on an envelope whose signerVerification is code",
    }),
    reason: freeText(1000).optional().openapi({ description: "With decline; stored as data, never interpreted (no control characters)" }),
    challengeToken: z
      .string()
      .min(1)
      .max(4096)
      .optional()
      .openapi({ description: "Turnstile token, required for sign and decline when the bot challenge is configured" }),
  })
  .openapi("SignerAction");
export type SignerAction = z.infer<typeof SignerAction>;

export const SignerView = z
  .object({
    state: z.literal("active"),
    signer: z.object({ name: z.string(), role: z.string(), status: z.enum(SIGNER_STATUSES), documentId: z.string() }),
    document: z
      .object({
        title: z.string().nullable(),
        sha256: z
          .string()
          .nullable()
          .openapi({ description: "SHA-256 (hex) of the PDF at pdfUrl, as recorded when the envelope was sent" }),
        pdfUrl: z.string().nullable().openapi({
          description:
            "The document as a PDF: a link for this signer, valid 10 to 15 minutes; null on a code envelope until the signer's code is verified",
        }),
        text: z
          .object({ title: z.string(), sections: z.array(z.object({ heading: z.string(), lines: z.array(z.string()) })) })
          .nullable()
          .openapi({
            description: "The document's content as text, what the PDF says; null on a code envelope until the signer's code is verified",
          }),
      })
      .openapi({ description: "The document the signer is asked to sign" }),
    signerVerification: z.enum(SIGNER_VERIFICATIONS),
  })
  .openapi("SignerView");
export { Gone } from "../platform/api-family";
export const ActionDone = z
  .object({
    ok: z.literal(true),
    completed: z.boolean().optional().openapi({ description: "With sign: true when this signature completed the envelope" }),
    sentTo: z.string().optional().openapi({ description: "With send_code: the address the code went to, masked" }),
    expiresInSeconds: z.int().optional().openapi({ description: "With send_code: how long the code works" }),
  })
  .openapi("SignerActionResult");

export const TokenParam = z.object({
  token: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: "token", in: "path" } }),
});
