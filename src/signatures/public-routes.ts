import { OpenAPIHono, z } from "@hono/zod-openapi";
import { eq } from "drizzle-orm";
import type { Context } from "hono";
import { envelopeSigners } from "../db/schema";
import { readConfig } from "../env";
import { sha256Hex } from "../lib/crypto";
import { AppError, InvalidState, Validation } from "../lib/errors";
import { API, apiError, apiJson, gone } from "../platform/api-family";
import type { BotChallenge } from "../platform/bot-challenge";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { rateLimit } from "../platform/rate-limit";
import { requestMeta } from "../platform/request-meta";
import { defineRoute } from "../platform/route";
import { envelopeSigner } from "./envelope-signer";
import { signingPage } from "./page";
import { ActionDone, Gone, SignerAction, SignerView, TokenParam } from "./schemas";

/** The token failed the bot challenge (Turnstile): 403 on the public routes. */
export class ChallengeFailed extends AppError {
  readonly status = 403;
  readonly code = "challenge_failed";
  constructor() {
    super("The bot challenge was not passed; reload the page and try again");
  }
}

const tags = ["Signing (public)"];
const GONE = { 404: { description: "Unknown, expired, already signed, declined or voided link, alike (no reason given)", content: { "application/json": { schema: Gone } } } };
const RATE_LIMITED = { 429: apiError("Too many requests from this address (rate_limited)") };

const open = defineRoute(API, {
  operationId: "openSigningLink",
  security: [],
  method: "get",
  path: "/api/public/sign/{token}",
  tags,
  summary: "Open a signing link",
  description: "No authentication: the token is the capability. The first open records `opened`.",
  middleware: [rateLimit("public-sign:get")] as const,
  request: { params: TokenParam },
  responses: { 200: apiJson("The link is live", SignerView), ...GONE, ...RATE_LIMITED },
});

const act = defineRoute(API, {
  operationId: "actOnSigningLink",
  security: [],
  method: "post",
  path: "/api/public/sign/{token}",
  tags,
  summary: "Authenticate, consent, sign or decline",
  description:
    "In this order: authenticate (with `codeVerified: true`), consent, sign; decline from any active state. With the bot challenge configured, sign and decline need a Turnstile `challengeToken`. The last signature completes the envelope (`completed: true`).",
  middleware: [rateLimit("public-sign:post")] as const,
  request: { params: TokenParam, body: { required: true, content: { "application/json": { schema: SignerAction } } } },
  responses: {
    200: apiJson("Done", ActionDone),
    ...GONE,
    403: apiError("The bot challenge token was refused (challenge_failed)"),
    409: apiError("invalid_state: the action is out of order (sign before consent, say), or authenticate without codeVerified"),
    ...RATE_LIMITED,
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

/** The envelope a live token belongs to; null for any other token. */
async function envelopeOf(c: Context<AppBindings>, tokenHash: string): Promise<string | null> {
  const row = await c.get("db").select({ envelopeId: envelopeSigners.envelopeId }).from(envelopeSigners).where(eq(envelopeSigners.tokenHash, tokenHash)).get();
  return row?.envelopeId ?? null;
}


export interface SigningDeps {
  /** The bot challenge for a configured Turnstile secret (tests point the real client at a fake siteverify). */
  botChallenge: (secret: string) => BotChallenge;
}

export function createPublicSigningRoutes(deps: SigningDeps) {
  return new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
    .openapi(open, async (c) => {
      const tokenHash = await sha256Hex(c.req.valid("param").token);
      const envelopeId = await envelopeOf(c, tokenHash);
      if (!envelopeId) return gone(c);
      const result = await envelopeSigner(c.env, envelopeId).open(envelopeId, tokenHash, requestMeta(c));
      return result.kind === "gone" ? gone(c) : c.json({ state: "active" as const, signer: result.signer }, 200);
    })
    .openapi(act, async (c) => {
      const input = c.req.valid("json");
      const meta = requestMeta(c);
      const secret = readConfig(c.env).BOT_CHALLENGE_SECRET;
      if (secret && (input.action === "sign" || input.action === "decline")) {
        if (!input.challengeToken) throw new Validation([{ field: "challengeToken", path: ["challengeToken"], code: "required", message: "Required for sign and decline" }]);
        if (!(await deps.botChallenge(secret).verify(input.challengeToken, meta.ip))) throw new ChallengeFailed();
      }
      const tokenHash = await sha256Hex(c.req.valid("param").token);
      const envelopeId = await envelopeOf(c, tokenHash);
      if (!envelopeId) return gone(c);
      const result = await envelopeSigner(c.env, envelopeId).act(envelopeId, tokenHash, input, meta);
      if (result.kind === "gone") return gone(c);
      if (result.kind === "invalid_state") throw new InvalidState("invalid_state", result.message);
      return c.json(input.action === "sign" ? { ok: true as const, completed: result.completed === true } : { ok: true as const }, 200);
    })
    .openapi(page, async (c) => signingPage(c) as never);
}
