import { OpenAPIHono, z } from "@hono/zod-openapi";
import { openCors } from "../platform/cors";
import { API, apiError, apiJson } from "../platform/api-family";
import { serviceContext } from "../platform/auth";
import { limitBody } from "../platform/body-limit";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { type BotChallenge, requireChallenge } from "../platform/bot-challenge";
import { readConfig } from "../env";
import { requestMeta } from "../platform/request-meta";
import { rateLimit } from "../platform/rate-limit";
import { defineRoute, jsonBody } from "../platform/route";
import { openPublicKey, publicServiceContext } from "../platform/session";
import {
  PublicReferral,
  Referral,
  REFERRAL_CHANNELS,
  ReferralCreate,
  ReferralList,
  ReferralListQuery,
  REWARD_STATUSES,
  REWARD_TYPES,
} from "./schemas";
import { captureReferral, createReferral, listReferrals, REFERRAL_DEDUP_DAYS } from "./service";

const tags = ["Reputation"];
const security = [{ bearerAuth: [] }];
/** The public form's body limit (spec: Limits, POST public referral body at most 32 KB). */
export const PUBLIC_REFERRAL_MAX_BYTES = 32 * 1024;

const RULES = `Every referral starts RECEIVED. Channels: ${REFERRAL_CHANNELS.join(", ")}. Reward tracking is optional: rewardType (${REWARD_TYPES.join(", ")}),
rewardStatus (${REWARD_STATUSES.join(", ")}; PENDING when only a type is given) and rewardValue, both only with a type. Emits REFERRAL_RECEIVED; a workflow then turns
the referred person into a lead contact (source REFERRAL, assigned to the agent) when referredContact is an e-mail address, linking the
organization's existing contact with that e-mail instead of making a second one, and sets leadContactId.`;

const list = defineRoute(API, {
  operationId: "listReferrals",
  method: "get",
  path: "/api/reputation/referrals",
  tags,
  security,
  summary: "List referrals",
  description: "Newest first; keyset-paginated (`pagination.nextCursor`).",
  request: { query: ReferralListQuery },
  responses: { 200: apiJson("A page of referrals", ReferralList) },
});

const create = defineRoute(API, {
  operationId: "createReferral",
  method: "post",
  path: "/api/reputation/referrals",
  tags,
  security,
  summary: "Log a referral",
  description: `${RULES} The agent must be a user and the referrer a contact of your organization (400 otherwise).`,
  request: jsonBody(ReferralCreate),
  responses: { 201: apiJson("The referral", Referral) },
});

const capture = defineRoute(API, {
  operationId: "recordPublicReferral",
  method: "post",
  path: "/api/public/referral/{agentSlug}",
  security: [],
  tags: ["Referrals (public)"],
  summary: "Refer someone to an agent",
  description: `No authentication: the slug of a PUBLISHED profile is the capability. Records the referrer as a contact of the agent's
organization (an existing contact with that e-mail is linked), creates the referral RECEIVED with channel PUBLIC_PROFILE and emits
REFERRAL_RECEIVED; the referred person then becomes a lead of the agent. Body at most 32 KB (413); every problem of the body is
listed in one 400; 10 requests a minute per address (429). Unknown, unpublished and deleted profiles answer the same 404. CORS-enabled.
With the bot challenge configured (BOT_CHALLENGE_SECRET), the body needs a Turnstile \`challengeToken\` (400 without, 403 when refused).
The same referred e-mail sent to the same agent within ${REFERRAL_DEDUP_DAYS} days of the first referral is a duplicate: it answers the same
202 with that referral's id and records nothing (no second referral, referrer or lead).`,
  middleware: [limitBody(PUBLIC_REFERRAL_MAX_BYTES), rateLimit("public-referral:post")] as const,
  request: {
    params: z.object({
      agentSlug: z
        .string()
        .min(1)
        .max(100)
        .openapi({ param: { name: "agentSlug", in: "path" } }),
    }),
    ...jsonBody(PublicReferral),
  },
  responses: {
    202: apiJson(
      "Received (or a duplicate of a referral received within the window: the same answer, naming it)",
      z
        .object({
          received: z.literal(true),
          referralId: z.string().openapi({ description: "The referral recorded, or the earlier one this repeats" }),
        })
        .openapi("ReferralReceived"),
    ),
    403: apiError("The bot challenge token was refused (challenge_failed)"),
    404: apiError("No published profile at this slug"),
    429: apiError("Too many requests from this address (rate_limited)"),
  },
});

export interface ReferralDeps {
  /** The bot challenge for a configured Turnstile secret (tests point the real client at a fake siteverify). */
  botChallenge: (secret: string) => BotChallenge;
}

export function createReferralRoutes(deps: ReferralDeps) {
  const routes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook });
  // An agent's own site may host the form: any origin may post (errors readable too); nothing private is answered.
  routes.use("/api/public/referral/*", openCors(["POST", "OPTIONS"], ["accept", "content-type"]));
  return routes
    .openapi(list, async (c) => c.json(await listReferrals(serviceContext(c), c.req.valid("query")), 200))
    .openapi(create, async (c) => c.json(await createReferral(serviceContext(c), c.req.valid("json")), 201))
    .openapi(capture, async (c) => {
      const input = c.req.valid("json");
      await requireChallenge(
        readConfig(c.env).BOT_CHALLENGE_SECRET,
        deps.botChallenge,
        input.challengeToken,
        requestMeta(c).ip,
        "when the bot challenge is configured",
      );
      const { agentSlug } = c.req.valid("param");
      // The slug's organization from the directory, with its shard opened; unknown there is the same 404.
      const organizationId = await openPublicKey(c, "agent_slug", agentSlug);
      const base = organizationId && publicServiceContext(c, organizationId);
      const referral = base && (await captureReferral(base, agentSlug, input));
      if (!referral) return c.json({ error: "not_found", message: "No published profile at this address" }, 404);
      return c.json({ received: true as const, referralId: referral.id }, 202);
    });
}
