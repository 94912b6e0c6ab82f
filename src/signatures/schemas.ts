import { z } from "@hono/zod-openapi";
import { PageSize, placedField } from "../documents/schemas";
import { freeText, oneLineText } from "../lib/validation";

export const SIGNER_ACTIONS = ["send_code", "authenticate", "consent", "sign", "decline", "approve", "reject"] as const;
export const SIGNER_VERIFICATIONS = ["code", "attested"] as const;
export const ENVELOPE_STATUSES = ["partially_signed", "completed", "declined", "voided", "expired"] as const;
export const SIGNER_STATUSES = [
  "pending",
  "sent",
  "opened",
  "authenticated",
  "consented",
  "signed",
  "approved",
  "viewed",
  "copied",
  "declined",
] as const;
export const MAX_SIGNERS = 20;
/** Fields placed on one uploaded document, and form fields filled at send. */
export const MAX_FIELDS = 500;
export const RECIPIENT_KINDS = ["signer", "approver", "viewer", "cc"] as const;
export const FIELD_TYPES = ["signature", "initials", "name", "email", "date", "text", "number", "checkbox", "radio", "dropdown"] as const;
/** A drawn signature's PNG, as a data URL, at most this many bytes of image. */
export const MAX_DRAWN_SIGNATURE_BYTES = 100 * 1024;

export const SignerInput = z
  .strictObject({ name: oneLineText(200), email: z.email().max(254), role: oneLineText(50) })
  .openapi("SignerInput");

/** A recipient of an uploaded document (issue 44). */
export const RecipientInput = z
  .strictObject({
    key: oneLineText(64).openapi({
      description: "Your own label for the recipient, unique in the request; fields name it",
      example: "buyer1",
    }),
    name: oneLineText(200),
    email: z.email().max(254),
    role: z.enum(RECIPIENT_KINDS).openapi({
      description:
        "signer: fills and signs their fields; approver: approves or rejects (a rejection declines the envelope); viewer: done once they have opened the document; cc: gets the sealed copy by e-mail at completion, no link",
    }),
    order: z
      .int()
      .min(1)
      .max(MAX_SIGNERS)
      .default(1)
      .openapi({ description: "Recipients of one order act in parallel; the next order is sent when everyone before it is done" }),
    embedded: z.boolean().optional().openapi({
      description:
        "Signs inside your own application (issue 45): never mailed a link and given no `url` in the send's answer; when their turn comes, ask POST /api/signatures/{envelopeId}/signers/{signerId}/view for a single-use signing URL. Not with inPerson",
    }),
    inPerson: z
      .strictObject({
        hostUserId: z
          .string()
          .min(1)
          .max(100)
          .openapi({ description: "A user of your organization who hosts the signing on their device" }),
      })
      .optional()
      .openapi({
        description:
          "Signs in person on the host's device (issue 45): never mailed a link and given no `url` in the send's answer; the host asks POST /api/signatures/{envelopeId}/signers/{signerId}/host-session. Not with embedded",
      }),
  })
  .openapi("RecipientInput");

const percent = (what: string) =>
  z
    .number()
    .min(0)
    .max(100)
    .openapi({ description: `${what}, in percent of the page as displayed` });

export const FieldInput = z
  .strictObject({
    recipient: oneLineText(64).openapi({ description: "The key of the recipient who fills the field" }),
    type: z.enum(FIELD_TYPES),
    page: z.int().min(1).max(500).openapi({ description: "From 1" }),
    x: percent("Left edge, from the page's left"),
    y: percent("Top edge, from the page's top"),
    width: percent("Width").refine((v) => v > 0, "Must be more than 0"),
    height: percent("Height").refine((v) => v > 0, "Must be more than 0"),
    name: oneLineText(100)
      .optional()
      .openapi({ description: "A name of your own for the field (the sealed copy's values are listed by it)" }),
    required: z.boolean().optional().openapi({ description: "Default: true for signature and initials, false otherwise" }),
    readOnly: z.boolean().optional().openapi({ description: "With value: the recipient sees the value and cannot change it" }),
    value: z
      .union([oneLineText(1000), z.number().finite(), z.boolean()])
      .optional()
      .openapi({ description: "A prefilled value (text, number, date YYYY-MM-DD, checkbox true/false, an option)" }),
    options: z.array(oneLineText(200)).min(1).max(50).optional().openapi({ description: "The choices of a radio or dropdown field" }),
    validation: z
      .strictObject({
        maxLength: z.int().min(1).max(1000).optional(),
        min: z.number().finite().optional(),
        max: z.number().finite().optional(),
        pattern: z.string().min(1).max(200).optional().openapi({
          description: "A regular expression the whole value must match (no nested quantifiers such as (a+)+)",
        }),
      })
      .optional(),
  })
  .openapi("FieldInput");

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
    recipients: z.array(RecipientInput).min(1).max(MAX_SIGNERS).optional().openapi({
      description: "An uploaded document's recipients (required for one, refused for a typed form); `mode` does not apply: `order` does",
    }),
    fields: z.array(FieldInput).max(MAX_FIELDS).optional().openapi({
      description: "Where each recipient fills what, on an uploaded document; every signer needs a signature field",
    }),
    formValues: z
      .record(z.string().min(1).max(200), z.union([z.string().max(2000), z.boolean()]))
      .refine((v) => Object.keys(v).length <= MAX_FIELDS, `At most ${MAX_FIELDS} form fields`)
      .optional()
      .openapi({
        description:
          "The uploaded PDF's own form fields filled by name (text: a string; checkbox: true/false; radio, dropdown: an option); then every form field is flattened",
      }),
  })
  .refine((r) => !(r.signers && r.recipients), {
    message: "Give signers (a typed form) or recipients (an uploaded document), not both",
    path: ["recipients"],
  })
  .openapi("SignatureRequest");
export type SignatureRequest = z.infer<typeof SignatureRequest>;

export const SigningLink = z
  .object({
    signerId: z.string(),
    name: z.string(),
    email: z.string(),
    role: z.string(),
    key: z.string().optional().openapi({ description: "The recipient's key, on an uploaded document" }),
    order: z.int().openapi({ description: "The recipient's order: a link of a later order answers 409 not_your_turn until its turn" }),
    url: z.string().optional().openapi({
      example: "https://app.example.test/sign/sign_…",
      description:
        "Shown once: an Idempotency-Key replay of this answer leaves it out (the link went to the signer by mail). Never given for an embedded or in-person recipient: they sign through a view URL or a host session",
    }),
  })
  .openapi("SigningLink");

export const SignerField = z
  .object({
    id: z.string(),
    type: z.enum(FIELD_TYPES),
    ...placedField,
    value: placedField.value.openapi({ description: "The sender's prefilled value" }),
  })
  .openapi("SignerField", { description: "A field of the recipient's, in percent of its page as displayed (origin top-left)" });

export const Signer = z
  .object({
    id: z.string(),
    name: z.string(),
    email: z.string(),
    role: z.string().openapi({
      description: "A typed form's party (buyer, seller …), or on an uploaded document signer, approver, viewer or cc",
    }),
    key: z.string().optional().openapi({ description: "The sender's key for the recipient, on an uploaded document" }),
    order: z.int().openapi({ description: "Recipients of one order act in parallel, each order after the one before" }),
    status: z.enum(SIGNER_STATUSES).openapi({
      description:
        "sent, opened, authenticated, consented, then signed (a signer), approved (an approver) or viewed (a viewer); declined; pending while their order's turn has not come (a cc until completion, then copied)",
    }),
    signedAt: z.string().optional(),
    sentAt: z.string().optional(),
    verification: z
      .enum(["email_code", "client_attested"])
      .optional()
      .openapi({ description: "How the signer was authenticated, once they were" }),
    embedded: z.boolean().openapi({ description: "Signs inside the sender's own application, through a view URL (never mailed)" }),
    inPerson: z
      .object({ hostUserId: z.string() })
      .nullable()
      .openapi({ description: "Signs in person on the device of this user of the organization, through a host session (never mailed)" }),
    fields: z
      .array(
        SignerField.extend({
          filled: z.union([z.string(), z.boolean()]).nullable().openapi({
            description:
              "What the recipient filled in: the text, a checkbox's state, `adopted` or `drawn` for a signature; null until then",
          }),
        }),
      )
      .optional()
      .openapi({ description: "On an uploaded document: the recipient's fields and what they filled in" }),
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
    source: z.enum(["api", "template", "public_link"]).openapi({
      description:
        "api: sent with POST /api/documents/{id}/signature; template: made by POST /api/templates/{id}/use; public_link: by a visitor of a template's public link",
    }),
    templateId: z.string().nullable().openapi({ description: "The template it was made from" }),
    message: z.string().nullable().openapi({ description: "The sender's note to the recipients (their signing mail and page)" }),
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

export const SignatureCreated = z
  .object({
    envelopeId: z.string(),
    envelope: Envelope.openapi({ description: "The envelope as GET /api/signatures/{envelopeId} shows it" }),
    links: z.array(SigningLink).openapi({
      description:
        "Every signer's link in parallel mode; the first signer's in sequential mode (the next link is sent when the previous signer has signed). An embedded or in-person recipient is listed without a url: they sign through a view URL or a host session",
    }),
  })
  .openapi("SignatureCreated");

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
    reason: freeText(1000)
      .optional()
      .openapi({ description: "With decline, and required with reject; stored as data, never interpreted (no control characters)" }),
    fields: z
      .record(z.string().min(1).max(100), z.union([z.string().max(200_000), z.number().finite(), z.boolean()]))
      .refine((v) => Object.keys(v).length <= MAX_FIELDS, `At most ${MAX_FIELDS} fields`)
      .optional()
      .openapi({
        description:
          'With sign, on an uploaded document: each of your fields\' value by its id (checkbox true/false, date YYYY-MM-DD, number, text, the option of a radio or dropdown; signature and initials "adopted" for your typed name or a PNG data URL of a drawn one, at most 100 KB). Name and e-mail fields are filled with yours',
      }),
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
    signer: z.object({
      name: z.string(),
      email: z.string().optional().openapi({ description: "On an uploaded document: the address name and e-mail fields are filled with" }),
      role: z.string().openapi({ description: "A typed form's party, or on an uploaded document signer, approver or viewer" }),
      status: z.enum(SIGNER_STATUSES),
      documentId: z.string(),
    }),
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
            description:
              "The document's content as text, what the PDF says (a typed form's); null for an uploaded document, and on a code envelope until the signer's code is verified",
          }),
        pages: z
          .array(PageSize)
          .optional()
          .openapi({ description: "An uploaded document's pages as displayed (points, after /Rotate): where fields' percent boxes sit" }),
      })
      .openapi({ description: "The document the signer is asked to sign" }),
    fields: z
      .array(SignerField)
      .optional()
      .openapi({ description: "An uploaded document: this recipient's fields (ids for the sign action's `fields`)" }),
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

/** POST /api/signatures/{envelopeId}/signers/{signerId}/view (issue 45, part 3). */
export const ViewRequest = z
  .strictObject({
    returnUrl: z.string().min(1).max(2000).openapi({
      description:
        "Where the page goes when the signer is done: `?event=signing_complete`, `declined` or `cancel` is added. An https URL (in development also http://127.0.0.1:<port> or http://localhost:<port>)",
      example: "https://tm.example.com/deals/42/signed",
    }),
    frameAncestors: z
      .array(z.string().min(1).max(300))
      .min(1)
      .max(5)
      .openapi({
        description:
          "The origins that may frame the page (its Content-Security-Policy frame-ancestors names exactly these); the page posts its events (ready, signed, declined, error) to the first one only. https origins (in development also http://127.0.0.1:<port>, http://localhost:<port>)",
        example: ["https://tm.example.com"],
      }),
  })
  .openapi("ViewRequest");
export type ViewRequest = z.infer<typeof ViewRequest>;

export const SigningSessionLink = z
  .object({
    url: z.string().optional().openapi({
      description:
        "Single use: the first open gets the signing page, any later one 410. Shown once: an Idempotency-Key replay of this answer leaves it out",
      example: "https://app.example.test/sign/session/ses_…",
    }),
    expiresAt: z.string().openapi({ description: "After this the URL answers 410 unopened" }),
  })
  .openapi("SigningSessionLink");
