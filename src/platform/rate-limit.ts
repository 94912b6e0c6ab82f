import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { readConfig } from "../env";
import { sha256Hex } from "../lib/crypto";
import { RateLimited } from "../lib/errors";
import { loggableError } from "../lib/log";
import type { AppBindings } from "./context";
import type { RateDecision, RateLimiter, RateRule } from "./rate-limiter";
import { requestLog } from "./response-headers";

/**
 * Per-IP limits of the public routes. Counts come from the specs where they give them (documents spec, Limits);
 * the reputation spec only says "rate-limited", so its counts are ours.
 */
export const RATE_LIMITS = {
  "public-sign:get": { limit: 60, windowSeconds: 60 },
  "public-sign:post": { limit: 30, windowSeconds: 60 },
  "public-clickwrap:get": { limit: 120, windowSeconds: 60 },
  "public-clickwrap:post": { limit: 60, windowSeconds: 60 },
  "public-survey:get": { limit: 60, windowSeconds: 60 },
  "public-survey:post": { limit: 10, windowSeconds: 60 },
  "public-referral:post": { limit: 10, windowSeconds: 60 },
  "public-reviews:get": { limit: 300, windowSeconds: 60 },
  "oauth-token:post": { limit: 30, windowSeconds: 60 },
  // Ours: token revocation (RFC 7009), as many as token requests.
  "oauth-revoke:post": { limit: 30, windowSeconds: 60 },
  // Ours: client registration and the steps of the browser sign-in (each e-mail step may mail a code), counted together.
  "oauth-public:post": { limit: 20, windowSeconds: 60 },
  // Ours: the invitation page; its posts are sign-in steps, counted like the OAuth pages' (each may mail a code).
  "public-invite:get": { limit: 60, windowSeconds: 60 },
  "public-invite:post": { limit: 20, windowSeconds: 60 },
  // Ours, per e-mail address whatever the client address: sign-in codes mailed, and codes typed. Counted alike for
  // addresses with and without an account, so neither tells. 10 guesses per 15 minutes of a 6-digit code.
  "oauth-sign-in-mail:email": { limit: 5, windowSeconds: 900 },
  "oauth-sign-in-code:email": { limit: 10, windowSeconds: 900 },
  // Ours: invitation mails per invited address (a "+tag" ignored), 3 a day from one organization, so no
  // admin mails an inbox dry, and 10 a day from all of them, so neither do many, nor can one organization spend
  // another's invitations to the address.
  "invitation-mail:organization-email": { limit: 3, windowSeconds: 86_400 },
  "invitation-mail:email": { limit: 10, windowSeconds: 86_400 },
  // Ours: a template's public link (issue 45): its page and what it shows, and its posts (each may mail a code).
  "public-template:get": { limit: 60, windowSeconds: 60 },
  "public-template:post": { limit: 20, windowSeconds: 60 },
  // Ours, per e-mail address: a public link's codes mailed, and codes typed (10 guesses per 15 minutes of a 6-digit code).
  "template-link-mail:email": { limit: 5, windowSeconds: 900 },
  "template-link-code:email": { limit: 10, windowSeconds: 900 },
  // Ours: anyone may check a signed PDF (up to 10 MiB each, a signature check each).
  "public-verify:post": { limit: 20, windowSeconds: 60 },
  // Ours: signed file links (certificates, photos, reports), which only the holder of a fresh link can use anyway.
  "public-files:get": { limit: 600, windowSeconds: 60 },
  // Ours: organization export downloads (a zip each); a link's token is 32 random bytes, so this only slows a scan.
  "public-exports:get": { limit: 30, windowSeconds: 60 },
  // Ours: a user's calendar feed (issue 46); calendar clients poll it every hour or so, a token is 32 random bytes.
  "calendar-feed:get": { limit: 60, windowSeconds: 60 },
  // Ours: engagement signals of one listing, per organization (a website backend forwards its visitors' views).
  "property-signals:post": { limit: 600, windowSeconds: 60 },
} as const satisfies Record<string, RateRule>;

export type RateBucket = keyof typeof RATE_LIMITS;

/** The client address Cloudflare puts in front of every request; absent only outside Cloudflare's edge. */
/**
 * The subject a per-address limit counts: an IPv4 address as is, an IPv6 address by its /64 (one customer line holds a
 * whole /64, so counting single addresses would let anyone rotate through billions), an IPv4-mapped IPv6 address as
 * its IPv4. Spellings of one address count alike.
 */
export function clientIp(header: string | undefined): string {
  const raw = header?.trim().toLowerCase();
  if (!raw) return "unknown";
  if (!raw.includes(":")) return raw;
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(raw);
  if (mapped) return mapped[1]!;
  const [head, tail] = raw.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = raw.includes("::") ? [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right] : left;
  if (groups.length !== 8 || groups.some((g) => !/^[0-9a-f]{1,4}$/.test(g))) return raw.slice(0, 64);
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}

/**
 * Attach to a route: `middleware: [rateLimit("public-sign:get")]`. Answers 429 with Retry-After past the limit, and
 * every answer carries the RateLimit fields of the bucket (policy = the bucket's name), as authenticated answers carry
 * the credential's. Counted per client IP unless `keyOf` names another subject (an organization's listing).
 */
export function rateLimit(
  bucket: RateBucket,
  keyOf: (c: Context<AppBindings>) => string = (c) => clientIp(c.req.header("cf-connecting-ip")),
) {
  const rule = RATE_LIMITS[bucket];
  return createMiddleware<AppBindings>(async (c, next) => {
    const decision = await c.get("rateLimiter").consume(`${bucket}:${keyOf(c)}`, rule);
    c.set("quota", [...(c.get("quota") ?? []), { rule, decision, policy: bucket }]);
    if (!decision.allowed) throw new RateLimited(decision.retryAfterSeconds);
    await next();
  });
}

/** The buckets counted per e-mail address rather than per client address. */
type AddressBucket =
  | "oauth-sign-in-mail:email"
  | "oauth-sign-in-code:email"
  | "invitation-mail:organization-email"
  | "invitation-mail:email"
  | "template-link-mail:email"
  | "template-link-code:email";

/** One request against a per-e-mail limit: the address lower-cased and hashed, so limiter keys hold no e-mail. */
export async function consumeForAddress(limiter: RateLimiter, bucket: AddressBucket, email: string): Promise<RateDecision> {
  return limiter.consume(`${bucket}:${await sha256Hex(email.toLowerCase())}`, RATE_LIMITS[bucket]);
}

/** The same, on a request: 429 with Retry-After when the address's window is spent. */
export async function admitForAddress(c: Context<AppBindings>, bucket: AddressBucket, email: string): Promise<void> {
  const decision = await consumeForAddress(c.get("rateLimiter"), bucket, email);
  if (!decision.allowed) throw new RateLimited(decision.retryAfterSeconds);
}

/**
 * The quota of each credential on the authenticated families and the MCP endpoint (docs/decisions/0027-per-credential-rate-limit.md):
 * a session, an API key and an OAuth access token each count in a window of their own, keyed by the SHA-256 of the
 * token, on the same Durable Object limiter as the per-address limits. The count is asked for beside the
 * authentication's directory read (platform/auth.ts), so it adds no round trip in sequence; it is used only once the
 * credential is found valid. Should the limiter fail, the request goes on uncounted (logged), as a cache miss would.
 */
export async function countCredential(
  c: Context<AppBindings>,
  tokenHash: string,
): Promise<{ rule: RateRule; decision: RateDecision } | undefined> {
  const rule = readConfig(c.env).CREDENTIAL_RATE_LIMIT;
  try {
    return { rule, decision: await c.get("credentialLimiter").consume(`credential:${tokenHash}`, rule) };
  } catch (err) {
    requestLog(c).warn("credential rate limiter unavailable; request not counted", { error: loggableError(err) });
    return undefined;
  }
}

/** After authentication: the credential's count, for the RateLimit fields; past the quota, 429 with Retry-After. */
export function admitCount(c: Context<AppBindings>, counted: { rule: RateRule; decision: RateDecision } | undefined): void {
  if (!counted) return;
  c.set("quota", [{ ...counted, policy: POLICY }]);
  if (!counted.decision.allowed) throw new RateLimited(counted.decision.retryAfterSeconds);
}

/** The policy's name in the fields: one quota for every credential kind, each credential in its own window. */
const POLICY = "default";

/**
 * `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers, structured fields) on every answer to an
 * authenticated caller, errors and 429s included: the quota (`q` requests per `w` seconds), what is left of it (`r`)
 * and the seconds until a unit comes back (`t`). Set on the final answer, as platform/response-headers.ts does, since
 * a lazily built group answers from its own context.
 */
export const rateLimitFields = createMiddleware<AppBindings>(async (c, next) => {
  await next();
  const quotas = c.get("quota");
  if (!quotas?.length) return;
  // Structured-field lists: one member per quota counted.
  const fields = {
    "RateLimit-Policy": quotas.map(({ rule, policy }) => `"${policy}";q=${rule.limit};w=${rule.windowSeconds}`).join(", "),
    RateLimit: quotas
      .map(
        ({ rule, decision, policy }) =>
          `"${policy}";r=${decision.remaining};t=${decision.resetSeconds ?? (decision.allowed ? rule.windowSeconds : decision.retryAfterSeconds)}`,
      )
      .join(", "),
  };
  for (const [name, value] of Object.entries(fields)) {
    try {
      c.res.headers.set(name, value);
    } catch {
      c.header(name, value); // immutable headers (a response from the cache): Hono copies the response first
    }
  }
});
