import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { readConfig } from "../env";
import { sha256Hex } from "../lib/crypto";
import { OrganizationMoving, TemporarilyUnavailable } from "../lib/errors";
import { API, apiError, apiJson, gone } from "../platform/api-family";
import { type BotChallenge, requireChallenge } from "../platform/bot-challenge";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { rateLimit } from "../platform/rate-limit";
import { requestMeta } from "../platform/request-meta";
import { defineRoute } from "../platform/route";
import { openPublicKey } from "../platform/session";
import type { ActResult, OpenResult } from "./actions";
import { envelopeSigner } from "./signer-client";
import { envelopeIdOf } from "./links";
import { envelopeOfLink, signerDocumentView } from "./service";
import { signingPage } from "./page";
import { sessionGonePage } from "./page-session";
import { ActionDone, Gone, SignerAction, SignerView, TokenParam } from "./schemas";

const tags = ["Signing (public)"];
const GONE = {
  404: {
    description: "Unknown, expired, already signed, declined or voided link, alike (no reason given)",
    content: { "application/json": { schema: Gone } },
  },
};
const RATE_LIMITED = { 429: apiError("Too many requests from this address (rate_limited)") };

const open = defineRoute(API, {
  operationId: "openSigningLink",
  security: [],
  method: "get",
  path: "/api/public/sign/{token}",
  tags,
  summary: "Open a signing link",
  description:
    "No authentication: the token is the capability. The first open records `opened`. The answer carries the document the signer is asked to sign: its text, and its PDF through a link for this signer.",
  middleware: [rateLimit("public-sign:get")] as const,
  request: { params: TokenParam },
  responses: {
    200: apiJson("The link is live", SignerView),
    ...GONE,
    409: apiError("not_your_turn: a recipient of a later order; the link works once everyone before them is done (they are mailed then)"),
    ...RATE_LIMITED,
    503: apiError(
      "organization_moving: the first open records `opened`, which waits while a shard move fences the organization's writes (a few seconds; Retry-After); temporarily_unavailable: recording it failed, try again after Retry-After",
    ),
  },
});

const act = defineRoute(API, {
  operationId: "actOnSigningLink",
  security: [],
  method: "post",
  path: "/api/public/sign/{token}",
  tags,
  summary: "Authenticate, consent, sign or decline",
  description:
    "In this order: send_code (the server mails the signer a 6-digit code), authenticate (with `code`, or `codeVerified: true` where the envelope's signerVerification is `attested`), consent, sign; decline from any active state. With the bot challenge configured, sign and decline need a Turnstile `challengeToken`. The last signature completes the envelope (`completed: true`).",
  middleware: [rateLimit("public-sign:post")] as const,
  request: { params: TokenParam, body: { required: true, content: { "application/json": { schema: SignerAction } } } },
  responses: {
    200: apiJson("Done", ActionDone),
    ...GONE,
    403: apiError("The bot challenge token was refused (challenge_failed)"),
    409: apiError(
      "invalid_state: the action is out of order (sign before consent, say), not this recipient's (sign for an approver, approve for a signer), or authenticate with neither code nor codeVerified; verification_required: codeVerified on an envelope that needs a code; not_your_turn: a recipient of a later order",
    ),
    422: apiError(
      "code_invalid (wrong, used, or none pending), code_expired, code_attempts_exceeded (5 wrong tries ended the code); invalid_fields: the fields' values, each problem in issues[]; reason_required: a reject without a reason",
    ),
    429: apiError(
      "rate_limited: too many requests from this address; code_resend_too_soon: a code was mailed less than a minute ago, or 5 in the last hour (Retry-After says when); verification_locked: 15 wrong codes locked this signer's send_code and authenticate until the sender sends a new link (POST /api/signatures/{envelopeId}/signers/{signerId}/resend); it does not end with time, Retry-After (a day) only says when to look again",
    ),
    503: apiError(
      "temporarily_unavailable: the action could not be recorded just now (nothing was assumed done); try it again after Retry-After",
    ),
  },
});

const page = defineRoute(API, {
  operationId: "getSigningPage",
  security: [],
  method: "get",
  path: "/sign/{token}",
  tags,
  summary: "The signing page",
  description: "An HTML page (DESIGN.md contract 5) that walks the signer through the public signing API.",
  request: { params: TokenParam },
  responses: { 200: { description: "The page", content: { "text/html": { schema: z.string() } } } },
});

const sessionPage = defineRoute(API, {
  operationId: "openSigningSession",
  security: [],
  method: "get",
  path: "/sign/session/{token}",
  tags,
  summary: "The signing page of a single-use session (an embedded view, an in-person host session)",
  description:
    "Issue 45: the URL POST /api/signatures/{envelopeId}/signers/{signerId}/view or …/host-session answered. The first open gets the signing page (an embedded view's may be framed only by its frameAncestors); any later open, or one after the session expired, answers 410.",
  middleware: [rateLimit("public-sign:get")] as const,
  request: { params: TokenParam },
  responses: {
    200: { description: "The page", content: { "text/html": { schema: z.string() } } },
    410: { description: "Used, expired or unknown", content: { "text/html": { schema: z.string() } } },
    ...RATE_LIMITED,
    503: apiError(
      "organization_moving or temporarily_unavailable: the open could not be recorded just now (the session is not used up); try again after Retry-After",
    ),
  },
});

/**
 * Runs `call` on the object of the envelope the token names. The token's hash names its organization in the
 * directory, which opens that organization's shard; the object then needs no D1 read of the route's. A
 * token that names no envelope is looked up by hash on that shard (a link minted before ids were carried) and tried
 * once more. A hash the directory does not know is gone, like any dead link.
 */
async function onEnvelope<T extends { kind: string }>(
  c: Context<AppBindings>,
  token: string,
  call: (envelopeId: string, organizationId: string, shard: number, tokenHash: string) => Promise<unknown>,
): Promise<T | { kind: "gone" }> {
  const tokenHash = await sha256Hex(token);
  const organizationId = await openPublicKey(c, "signing_link", tokenHash);
  if (!organizationId) return { kind: "gone" };
  const named = envelopeIdOf(token);
  const shard = c.get("shard");
  const first = (named ? await call(named, organizationId, shard, tokenHash) : { kind: "unknown" }) as
    | T
    | { kind: "unknown" | "moving" | "failed" };
  refuseUnfinished(first);
  if (first.kind !== "unknown") return first as T;
  const looked = await envelopeOfLink(c.get("db"), tokenHash);
  const second = (looked && looked !== named ? await call(looked, organizationId, shard, tokenHash) : { kind: "gone" }) as
    | T
    | { kind: "unknown" | "gone" | "moving" | "failed" };
  refuseUnfinished(second);
  return second.kind === "unknown" ? { kind: "gone" } : (second as T | { kind: "gone" });
}

/** The object could not act: a shard move fences the organization, or a step failed (503 either way, with Retry-After). */
function refuseUnfinished(result: { kind: string }): void {
  if (result.kind === "moving") throw new OrganizationMoving();
  if (result.kind === "failed") throw new TemporarilyUnavailable();
}

export interface SigningDeps {
  /** The bot challenge for a configured Turnstile secret (tests point the real client at a fake siteverify). */
  botChallenge: (secret: string) => BotChallenge;
}

export function createPublicSigningRoutes(deps: SigningDeps) {
  return new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
    .openapi(open, async (c) => {
      const meta = requestMeta(c);
      const result = await onEnvelope<OpenResult>(c, c.req.valid("param").token, (id, org, shard, hash) =>
        envelopeSigner(c.env, id).open(id, org, shard, hash, meta),
      );
      if (result.kind === "refused") return c.json({ error: result.code, message: result.message }, 409);
      if (result.kind !== "active") return gone(c);
      const { id, kind: _kind, email, ...signer } = result.signer;
      const document = await signerDocumentView(c.env, c.get("db"), id, signer.documentId, result.document);
      return c.json(
        {
          state: "active" as const,
          signer: result.fields ? { ...signer, email } : signer,
          document,
          ...(result.fields ? { fields: result.fields } : {}),
          signerVerification: result.signerVerification,
        },
        200,
      );
    })
    .openapi(act, async (c) => {
      const input = c.req.valid("json");
      const meta = requestMeta(c);
      const secret = readConfig(c.env).BOT_CHALLENGE_SECRET;
      if (input.action === "sign" || input.action === "decline" || input.action === "approve" || input.action === "reject")
        await requireChallenge(secret, deps.botChallenge, input.challengeToken, meta.ip, "for sign and decline");
      const result = await onEnvelope<ActResult>(c, c.req.valid("param").token, (id, org, shard, hash) =>
        envelopeSigner(c.env, id).act(id, org, shard, hash, input, meta),
      );
      if (result.kind === "gone") return gone(c);
      if (result.kind === "refused") {
        const headers: Record<string, string> = result.retryAfterSeconds ? { "Retry-After": String(result.retryAfterSeconds) } : {};
        const issues = result.issues?.map(({ field, path, code, message }) => ({ field, path, code, message }));
        return c.json({ error: result.code, message: result.message, ...(issues ? { issues } : {}) }, result.status, headers);
      }
      if (result.kind === "code_sent")
        return c.json({ ok: true as const, sentTo: result.sentTo, expiresInSeconds: result.expiresInSeconds }, 200);
      return c.json(
        input.action === "sign" || input.action === "approve"
          ? { ok: true as const, completed: result.completed === true }
          : { ok: true as const },
        200,
      );
    })
    .openapi(page, async (c) => signingPage(c) as never)
    .openapi(sessionPage, async (c) => {
      // The token is a capability: only its SHA-256 is looked up; it names its envelope, the directory its organization.
      const token = c.req.valid("param").token;
      const envelopeId = envelopeIdOf(token, "ses");
      const tokenHash = await sha256Hex(token);
      const organizationId = envelopeId && (await openPublicKey(c, "signing_session", tokenHash));
      if (!envelopeId || !organizationId) return sessionGonePage(c) as never;
      const result = await envelopeSigner(c.env, envelopeId).openSession(
        envelopeId,
        organizationId,
        c.get("shard"),
        tokenHash,
        requestMeta(c),
      );
      refuseUnfinished(result);
      if (result.kind !== "opened") return sessionGonePage(c) as never;
      const { kind, returnUrl, frameAncestors } = result.session;
      return signingPage(c, { token: result.token, kind, returnUrl, frameAncestors, signerName: result.signer.name }) as never;
    });
}
