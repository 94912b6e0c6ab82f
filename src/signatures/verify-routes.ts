import { OpenAPIHono, z } from "@hono/zod-openapi";
import { and, eq } from "drizzle-orm";
import { envelopes, envelopeSigners } from "../db/schema";
import { sha256Hex } from "../lib/crypto";
import { AppError, Validation } from "../lib/errors";
import { API, apiError, apiJson } from "../platform/api-family";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { rateLimit } from "../platform/rate-limit";
import { defineRoute } from "../platform/route";
import { openPublicKey } from "../platform/session";

/**
 * POST /api/public/verify: anyone holding a PDF can ask whether it is a signed document this platform
 * sealed, unchanged. The seal itself is checked (seal/verify.ts), then the file's SHA-256 must be the one recorded
 * when it was sealed; the answer names the envelope and its signers, never an e-mail address.
 */
export const VERIFY_MAX_BYTES = 10 * 1024 * 1024;

class NotPdfContentType extends AppError {
  readonly status = 415;
  readonly code = "unsupported_media_type";
  constructor() {
    super("Content-Type must be application/pdf: the body is the PDF itself");
  }
}

const Verified = z
  .object({
    valid: z.literal(true),
    envelopeId: z.string(),
    completedAt: z.string().nullable(),
    documentSha256: z.string().nullable().openapi({ description: "SHA-256 (hex) of the document PDF the signers were shown" }),
    signers: z.array(
      z.object({
        name: z.string(),
        role: z.string(),
        signedAt: z.string().nullable(),
        verification: z.enum(["email_code", "client_attested"]).nullable(),
      }),
    ),
  })
  .openapi("VerifiedDocument");
const NotVerified = z
  .object({
    valid: z.literal(false),
    reason: z
      .enum(["not_signed", "digest_mismatch", "signature_invalid", "not_our_seal", "incomplete_coverage", "malformed", "unknown_document"])
      .openapi({
        description:
          "not_signed: no signature; digest_mismatch: the signed bytes changed; signature_invalid: the seal's signature does not hold; not_our_seal: signed, but not with this platform's seal; incomplete_coverage: bytes were added after sealing; malformed: the signature cannot be read; unknown_document: sealed by us, but no envelope recorded this file",
      }),
  })
  .openapi("NotVerifiedDocument");

const verify = defineRoute(API, {
  operationId: "verifySignedDocument",
  security: [],
  method: "post",
  path: "/api/public/verify",
  tags: ["Signing (public)"],
  summary: "Check a signed PDF",
  description:
    "No authentication. The body is the PDF itself (`Content-Type: application/pdf`, at most 10 MiB). 20 requests a minute per address.",
  middleware: [rateLimit("public-verify:post")] as const,
  request: { body: { required: true, content: { "application/pdf": { schema: z.string().openapi({ format: "binary" }) } } } },
  responses: {
    200: apiJson("Whether the PDF is one this platform sealed, unchanged", z.union([Verified, NotVerified])),
    400: apiError("The body is not a PDF"),
    415: apiError("Content-Type is not application/pdf"),
    429: apiError("Too many requests from this address (rate_limited)"),
    503: apiError("SEAL_CERTIFICATE is not configured"),
  },
});

export const verifyRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook }).openapi(verify, async (c) => {
  if (c.req.header("content-type")?.split(";")[0]?.trim().toLowerCase() !== "application/pdf") throw new NotPdfContentType();
  const bytes = new Uint8Array(await c.req.arrayBuffer());
  const { inspectSealedPdf, isPdf } = await import("../seal/verify");
  if (!isPdf(bytes))
    throw new Validation(
      [{ field: "", path: [], code: "not_a_pdf", message: "The body is not a PDF (it must start with %PDF-)" }],
      "malformed",
    );
  const inspection = await inspectSealedPdf(c.env, bytes);
  if (!inspection.valid) return c.json({ valid: false as const, reason: inspection.reason }, 200);
  const sha256 = await sha256Hex(bytes);
  // The hash names the organization in the directory (registered at sealing, signatures/sealing.ts), which opens its shard.
  const organizationId = await openPublicKey(c, "sealed_pdf", sha256, { writes: false });
  const db = c.get("db");
  const envelope = organizationId
    ? await db
        .select()
        .from(envelopes)
        .where(and(eq(envelopes.organizationId, organizationId), eq(envelopes.sealedSha256, sha256)))
        .get()
    : undefined;
  if (!envelope) return c.json({ valid: false as const, reason: "unknown_document" as const }, 200);
  const signers = await db
    .select()
    .from(envelopeSigners)
    .where(eq(envelopeSigners.envelopeId, envelope.id))
    .orderBy(envelopeSigners.position);
  return c.json(
    {
      valid: true as const,
      envelopeId: envelope.id,
      completedAt: envelope.completedAt,
      documentSha256: envelope.documentSha256,
      signers: signers.map((s) => ({ name: s.name, role: s.role, signedAt: s.signedAt, verification: s.verification })),
    },
    200,
  );
});
