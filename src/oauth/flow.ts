import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { z } from "zod";
import { readConfig } from "../env";
import { loggableError } from "../lib/log";
import { mailerFor, type MailMessage } from "../mail/mailer";
import { sha256Hex } from "../lib/crypto";
import { resolveBearer } from "../platform/auth";
import { RATE_LIMITS } from "../platform/rate-limit";
import { openShardOf } from "../shards/tenants";
import type { AppBindings } from "../platform/context";
import { type AuthorizationQuery, type AuthorizationRequest, issueCode, readAuthorizationRequest, redirectBack } from "./authorize";
import { lockEndText, recordSignInFailure, SIGN_IN_FAILURES_BEFORE_LOCK, signInLockedUntil } from "./lockout";
import { codePage, consentPage, emailPage, errorPage, lockedPage, NO_STORE_HEADERS } from "./pages";
import { checkSignInCode, cookieHeader, cookieName, csrfTokenFor, csrfTokenMatches, endSignIn, findSignIn, membershipsOf, newCookieValue, type SignIn, startSignIn } from "./sign-in";

type Ctx = Context<AppBindings>;
export interface AuthorizeFormBody {
  csrf_token?: string;
  step?: string;
  email?: string;
  code?: string;
  decision?: string;
  organization_id?: string;
}

const clientNameOf = (request: AuthorizationRequest) => request.client.clientName ?? request.client.clientId;
/** Cookies are Secure (and `__Host-`) whenever the page is served over https; plain http is local development. */
const isSecure = (c: Ctx) => new URL(c.req.url).protocol === "https:";

function redirectTo(c: Ctx, location: string): Response {
  for (const [name, value] of Object.entries(NO_STORE_HEADERS)) c.header(name, value);
  return c.redirect(location, 302);
}

/** Verifies the request; answers what cannot go on (error page or redirect), or hands the verified request to `next`. */
async function withRequest(c: Ctx, query: AuthorizationQuery, next: (request: AuthorizationRequest, secret: string) => Promise<Response>): Promise<Response> {
  const config = readConfig(c.env);
  if (!config.JWT_SECRET) return errorPage(c, 503, "The authorization server is not configured on this deployment (JWT_SECRET is unset).");
  const outcome = await readAuthorizationRequest(c.get("directory"), config, query);
  if (outcome.kind === "refused") return errorPage(c, 400, outcome.message);
  if (outcome.kind === "redirect-error") return redirectTo(c, redirectBack(config, outcome.redirectUri, { error: outcome.error, error_description: outcome.description, state: outcome.state }));
  return next(outcome.request, config.JWT_SECRET);
}

async function approve(c: Ctx, request: AuthorizationRequest, who: { userId: string; organizationId: string }): Promise<Response> {
  const code = await issueCode(c.get("directory"), request, who);
  return redirectTo(c, redirectBack(readConfig(c.env), request.redirectUri, { code, state: request.state }));
}

async function showConsent(c: Ctx, request: AuthorizationRequest, signIn: SignIn, csrf: string, extra: { error?: string; setCookie?: string } = {}): Promise<Response> {
  const organizations = await membershipsOf(c.get("directory"), signIn.email);
  return consentPage(c, { csrf, clientName: clientNameOf(request), redirectUri: request.redirectUri, email: signIn.email, permissions: request.permissions, organizations, ...extra });
}

async function freshEmailPage(c: Ctx, request: AuthorizationRequest, secret: string, error?: string): Promise<Response> {
  const cookie = newCookieValue();
  return emailPage(c, { csrf: await csrfTokenFor(secret, cookie), clientName: clientNameOf(request), setCookie: cookieHeader(isSecure(c), cookie), ...(error ? { error } : {}) });
}

/** GET /oauth/authorize. */
export function authorize(c: Ctx, query: AuthorizationQuery): Promise<Response> {
  return withRequest(c, query, async (request, secret) => {
    const authorization = c.req.header("authorization");
    if (authorization !== undefined) {
      // A programmatic caller with a session (spec table: the caller is that user): no page, the code at once.
      const session = await resolveBearer(c.get("directory"), authorization);
      if (!session) return errorPage(c, 401, "The bearer token presented is unknown, revoked or expired.");
      return approve(c, request, { userId: session.user.id, organizationId: session.organization.id });
    }
    const cookie = getCookie(c, cookieName(isSecure(c)));
    const signIn = await findSignIn(c.get("directory"), cookie);
    if (!signIn || !cookie) return freshEmailPage(c, request, secret);
    const csrf = await csrfTokenFor(secret, cookie);
    if (signIn.verifiedAt) return showConsent(c, request, signIn, csrf);
    return codePage(c, { csrf, email: signIn.email });
  });
}

const Email = z.email().max(254);

/** One request against a per-e-mail limit (the address lower-cased and hashed, so keys hold no e-mail). */
async function allowedFor(c: Ctx, bucket: "oauth-sign-in-mail:email" | "oauth-sign-in-code:email", email: string): Promise<boolean> {
  const decision = await c.get("rateLimiter").consume(`${bucket}:${await sha256Hex(email.toLowerCase())}`, RATE_LIMITS[bucket]);
  return decision.allowed;
}

/**
 * The code step of a sign-in not yet verified. A locked address is refused before anything is counted or compared; a
 * wrong code counts towards the lock (lockout.ts), and the try that starts it says so and mails the user.
 */
async function enterCode(c: Ctx, request: AuthorizationRequest, secret: string, signIn: SignIn, csrf: string, code: string): Promise<Response> {
  const db = c.get("directory");
  const locked = await signInLockedUntil(db, signIn.email);
  if (locked) return lockedPage(c, { csrf, until: lockEndText(locked) });
  // Across every browser and client address: a new code does not buy new guesses at this address.
  if (!(await allowedFor(c, "oauth-sign-in-code:email", signIn.email))) {
    return codePage(c, { csrf, email: signIn.email, error: "Too many codes were tried for this address. Wait 15 minutes, then try again." });
  }
  const check = await checkSignInCode(db, signIn, code);
  if (check.kind === "wrong") {
    const lock = await recordSignInFailure(db, signIn.email);
    if (lock) {
      mailLockNotice(c, signIn.email, lock.lockedUntil);
      return lockedPage(c, { csrf, until: lockEndText(lock.lockedUntil) });
    }
    if (check.attemptsLeft > 0) return codePage(c, { csrf, email: signIn.email, error: `That code is not right. ${check.attemptsLeft} attempt${check.attemptsLeft === 1 ? "" : "s"} left.` });
  }
  if (check.kind !== "accepted") return emailPage(c, { csrf, clientName: clientNameOf(request), error: "That code has expired or was tried too many times. Enter your e-mail to get a new one." });
  const verified = { ...signIn, verifiedAt: new Date().toISOString() };
  return showConsent(c, request, verified, await csrfTokenFor(secret, check.cookie), { setCookie: cookieHeader(isSecure(c), check.cookie) });
}

/** POST /oauth/authorize: one step of the browser's sign-in and consent. */
export function submitAuthorization(c: Ctx, query: AuthorizationQuery, form: AuthorizeFormBody): Promise<Response> {
  return withRequest(c, query, async (request, secret) => {
    const db = c.get("directory");
    const cookie = getCookie(c, cookieName(isSecure(c)));
    if (!cookie || !(await csrfTokenMatches(secret, cookie, form.csrf_token))) {
      return errorPage(c, 403, "This form has expired or was not sent from this browser. Go back to the application and start the sign-in again.");
    }
    const csrf = await csrfTokenFor(secret, cookie);
    const signIn = await findSignIn(db, cookie);
    switch (form.step) {
      case "email": {
        const email = Email.safeParse(form.email?.trim());
        if (!email.success) return emailPage(c, { csrf, clientName: clientNameOf(request), error: "Enter a valid e-mail address." });
        const locked = await signInLockedUntil(db, email.data);
        if (locked) return lockedPage(c, { csrf, until: lockEndText(locked) });
        if (!(await allowedFor(c, "oauth-sign-in-mail:email", email.data))) {
          return emailPage(c, { csrf, clientName: clientNameOf(request), error: "Too many codes were asked for this address. Wait 15 minutes, then try again." });
        }
        const { code } = await startSignIn(db, cookie, email.data);
        if (code) mailCode(c, email.data, code);
        return codePage(c, { csrf, email: email.data });
      }
      case "code":
        if (!signIn) return freshEmailPage(c, request, secret, "Your sign-in has expired; enter your e-mail again.");
        if (signIn.verifiedAt) return showConsent(c, request, signIn, csrf);
        return enterCode(c, request, secret, signIn, csrf, form.code ?? "");
      case "consent": {
        if (!signIn?.verifiedAt) return freshEmailPage(c, request, secret, "Sign in first.");
        if (form.decision === "deny") return redirectTo(c, redirectBack(readConfig(c.env), request.redirectUri, { error: "access_denied", error_description: "The user denied the request", state: request.state }));
        if (form.decision !== "approve") return showConsent(c, request, signIn, csrf, { error: "Choose Allow or Deny." });
        const memberships = await membershipsOf(db, signIn.email);
        const chosen = memberships.length === 1 && !form.organization_id ? memberships[0] : memberships.find((m) => m.organizationId === form.organization_id);
        if (!chosen) return showConsent(c, request, signIn, csrf, { error: "Choose one of your organizations." });
        return approve(c, request, chosen);
      }
      case "restart":
        if (signIn) await endSignIn(db, signIn);
        return freshEmailPage(c, request, secret);
      default:
        return errorPage(c, 400, "The form was not understood.");
    }
  });
}

/**
 * Mailed after the answer (waitUntil), so that an address with an account answers as fast as one without: the page
 * does not tell whether a user exists. `what` names the mail in the log, which never holds the address or the body.
 */
function mailAfterAnswer(c: Ctx, what: string, message: () => Promise<MailMessage | null>): void {
  const send = async () => {
    try {
      const mail = await message();
      // A sign-in code belongs to no organization: its mail is filed on the first shard.
      if (mail) await mailerFor(c.env, openShardOf(c.env, 0).db).send(mail);
    } catch (err) {
      console.error(JSON.stringify({ level: "error", requestId: c.get("requestId"), message: `${what} mail failed`, error: loggableError(err) }));
    }
  };
  c.executionCtx.waitUntil(send());
}

function mailCode(c: Ctx, to: string, code: string): void {
  mailAfterAnswer(c, "sign-in code", async () => ({
    to,
    subject: "Your sign-in code",
    // No client name here: a registered client chooses its own, and the mail must not carry a stranger's words.
    // The consent page names the client, after the code.
    text: `Your sign-in code is ${code}.\n\nType it on the sign-in page you opened; never tell it to anyone. It is valid for 10 minutes. If you did not ask for it, ignore this message: nothing happens without the code.`,
  }));
}

/**
 * The lock just started (once per lock): logged without the address or any code, and the user is told, when the
 * address has an account (an address without one gets no mail, as with codes).
 */
function mailLockNotice(c: Ctx, to: string, lockedUntil: string): void {
  mailAfterAnswer(c, "sign-in lock notice", async () => {
    const emailHash = await sha256Hex(to.toLowerCase());
    console.warn(JSON.stringify({ level: "warn", requestId: c.get("requestId"), message: "oauth sign-in locked after repeated wrong codes", emailHash, lockedUntil }));
    if ((await membershipsOf(c.get("directory"), to)).length === 0) return null;
    return {
      to,
      subject: "Sign-in to your account is locked for a day",
      text: `${SIGN_IN_FAILURES_BEFORE_LOCK} wrong sign-in codes were typed for your address within a day, so signing in with an e-mailed code is locked until ${lockEndText(lockedUntil)}. Nobody signed in with them. Until then no code is sent and none is accepted.\n\nIf it was you, wait until then and sign in again. If it was not, someone may be guessing codes for your address: the lock stops them, and nothing is needed from you.`,
    };
  });
}
