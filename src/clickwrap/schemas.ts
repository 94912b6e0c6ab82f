import { z } from "@hono/zod-openapi";
import { pageParams } from "../crm/list-query";
import { oneLineText } from "../lib/validation";

/** Agreement text at most (characters); a request body is at most 1 MiB anyway. */
export const MAX_BODY_CHARS = 200_000;
/** Acceptances a list answers at most (spec: Limits, GET acceptances most recent 200). */
export const MAX_ACCEPTANCES = 200;

const hash = z
  .string()
  .regex(/^[0-9a-f]{64}$/)
  .openapi({ example: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", description: "Hex SHA-256 of the body" });

export const AgreementPublish = z
  .strictObject({
    key: z
      .string()
      .regex(
        /^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/,
        "Letters, digits, dot, underscore, colon and dash, at most 100, starting with a letter or digit",
      )
      .openapi({ example: "terms-of-service" }),
    title: oneLineText(200),
    body: z
      .string()
      .min(1)
      .max(MAX_BODY_CHARS)
      .refine((b) => /[^\s\p{Cf}\p{Z}]/u.test(b), {
        message: "The agreement text has nothing visible",
        params: { code: "invalid_character" },
      }),
  })
  .openapi("ClickwrapPublish");
export type AgreementPublish = z.infer<typeof AgreementPublish>;

export const Published = z.object({ id: z.string(), versionHash: hash }).openapi("ClickwrapPublished");

/** The public view (spec: GET /api/public/clickwrap/{agreementId}). */
export const PublicAgreement = z
  .object({ agreement: z.object({ id: z.string(), key: z.string(), title: z.string(), body: z.string(), versionHash: hash }) })
  .openapi("ClickwrapPublicAgreement");

export const AgreementSummary = z
  .object({
    id: z.string(),
    key: z.string(),
    title: z.string(),
    versionHash: hash,
    active: z.boolean(),
    versions: z.int().openapi({ description: "Texts published so far" }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("ClickwrapAgreementSummary");
export type AgreementSummary = z.infer<typeof AgreementSummary>;

export const AgreementList = z
  .object({
    agreements: z.array(AgreementSummary),
    pagination: z.object({ hasMore: z.boolean(), nextCursor: z.string().nullable(), total: z.int(), limit: z.int() }),
  })
  .openapi("ClickwrapAgreementList");

export const AgreementDetail = z
  .object({
    agreement: AgreementSummary.extend({ body: z.string() }),
    history: z
      .array(z.object({ versionHash: hash, title: z.string(), publishedAt: z.string(), currentSince: z.string(), current: z.boolean() }))
      .openapi({
        description:
          "A page of the texts published: the current one first, then by when each was last current, newest first; GET …/versions/{versionHash} has each one's text",
      }),
    nextCursor: z.string().nullable().openapi({ description: "`cursor` of the next page of history; null on the last page" }),
  })
  .openapi("ClickwrapAgreementDetail");

export const VersionText = z
  .object({ versionHash: hash, title: z.string(), body: z.string(), publishedAt: z.string() })
  .openapi("ClickwrapVersion");

export const Acceptance = z
  .object({
    id: z.string(),
    versionHash: hash,
    subjectRef: z.string().nullable(),
    acceptedAt: z.string(),
    ip: z.string().nullable().openapi({ description: "Ours: the address the acceptance came from (evidence)" }),
    userAgent: z.string().nullable().openapi({ description: "Ours: the browser that sent it (evidence)" }),
  })
  .openapi("ClickwrapAcceptance");
export type Acceptance = z.infer<typeof Acceptance>;

export const AcceptanceList = z
  .object({
    acceptances: z.array(Acceptance).openapi({ description: `Newest first, at most ${MAX_ACCEPTANCES}` }),
    versionHash: hash.openapi({ description: "The agreement's current version" }),
    acceptedCurrentVersion: z
      .boolean()
      .optional()
      .openapi({ description: "With subjectRef: whether that subject has accepted the current version" }),
  })
  .openapi("ClickwrapAcceptanceList");

/** Who accepted: one line of 1 to 200 visible characters (no control characters or bidi overrides, which would misreport the evidence). */
export const SUBJECT = oneLineText(200);

export const AcceptanceQuery = z.strictObject({
  subjectRef: SUBJECT.optional().openapi({ description: "Only this subject's acceptances" }),
  current: z
    .enum(["true", "false"])
    .transform((v) => v === "true")
    .optional()
    .openapi({ type: "string", enum: ["true", "false"], description: "true: only acceptances of the current version" }),
});

export const AcceptRequest = z
  .strictObject({
    subjectRef: SUBJECT.optional().openapi({ description: "Who accepted (a person id, an e-mail …); null when absent" }),
    versionHash: hash
      .optional()
      .openapi({ description: "The version the person was shown; refused with 409 when it is no longer the current one" }),
  })
  .openapi("ClickwrapAccept");
export type AcceptRequest = z.infer<typeof AcceptRequest>;

export const AgreementIdParam = z.object({
  agreementId: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "agreementId", in: "path" } }),
});
export const VersionParam = AgreementIdParam.extend({
  versionHash: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "versionHash", in: "path" } }),
});
export const ListQuery = z.strictObject(pageParams);
/** A page of an agreement's history: the list's `limit` and `cursor` (from `nextCursor`); any other parameter is refused. */
export const HistoryQuery = z.strictObject({
  limit: pageParams.limit.openapi({ description: "1–100, default 25; anything else is a 400" }),
  cursor: pageParams.cursor.openapi({ description: "`nextCursor` of the previous page" }),
});
export { Gone } from "../platform/api-family";
