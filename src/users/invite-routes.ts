import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { readConfig } from "../env";
import { Validation } from "../lib/errors";
import {
  codeSignInDeps,
  csrfTokenFor,
  csrfTokenMatches,
  endSignIn,
  enterSignInCode,
  findSignIn,
  newCookieValue,
  sendSignInCode,
  signInCookie,
} from "../oauth/service";
import { API, apiError } from "../platform/api-family";
import { type BotChallenge, ChallengeFailed, requireChallenge } from "../platform/bot-challenge";
import type { AppBindings } from "../platform/context";
import { rateLimit } from "../platform/rate-limit";
import { requestMeta } from "../platform/request-meta";
import { defineRoute } from "../platform/route";
import { findInvitation, type Invitation, redeemInvitation } from "./invitations";
import { deadInvitePage, inviteCodePage, inviteErrorPage, inviteLockedPage, invitePage, signedInPage } from "./invite-page";

type Ctx = Context<AppBindings>;
const tags = ["Users (public)"];
const html = (description: string) => ({ description, content: { "text/html": { schema: z.string() } } });
const DEAD = { 404: html("Unknown, used, expired or malformed link, alike (no reason given)") };
const NOT_CONFIGURED = { 503: html("Sign-in is not configured on this deployment (JWT_SECRET, the key of the sign-in forms, is unset)") };
const TokenParam = z.object({
  token: z
    .string()
    .max(200)
    .openapi({ param: { name: "token", in: "path" }, description: "The capability of the invitation mail" }),
});

const InviteForm = z.object({
  csrf_token: z.string().max(200).optional().openapi({ description: "The token of the page the form is on" }),
  step: z.string().max(20).optional().openapi({ description: "send (mail a code to the invited address) | code (check it)" }),
  code: z.string().max(20).optional().openapi({ description: "The 6-digit code mailed to the address" }),
  "cf-turnstile-response": z
    .string()
    .max(4096)
    .optional()
    .openapi({ description: "With the bot challenge configured: Turnstile's token, which its widget adds to the send form" }),
});

const open = defineRoute(API, {
  operationId: "openInvitation",
  security: [],
  method: "get",
  path: "/invite/{token}",
  tags,
  summary: "The page of an invitation link",
  description:
    "No authentication: the token is the capability. Shows whom the link invites where, with the button that mails them a sign-in code.",
  middleware: [rateLimit("public-invite:get")] as const,
  request: { params: TokenParam },
  responses: { 200: html("The page"), ...DEAD, 429: apiError("Too many requests from this address (rate_limited)"), ...NOT_CONFIGURED },
});

const step = defineRoute(API, {
  operationId: "submitInvitation",
  security: [],
  method: "post",
  path: "/invite/{token}",
  tags,
  summary: "A step of signing in with an invitation link",
  description:
    "The pages' forms post here. `send` mails a 6-digit code to the invited address (with the bot challenge configured, after Turnstile); `code` checks it, with the caps and the lock of the OAuth sign-in (5 tries a code, 10 a quarter hour and 20 a day per address). The right code spends the link and shows a new 30-day session token once.",
  middleware: [rateLimit("public-invite:post")] as const,
  request: { params: TokenParam, body: { required: true, content: { "application/x-www-form-urlencoded": { schema: InviteForm } } } },
  responses: {
    200: html("The next page (or the same one with what went wrong)"),
    400: html("An unknown step, or a form field over its bound"),
    403: html("The form's CSRF token does not belong to this browser's sign-in (expired or forged)"),
    ...DEAD,
    429: apiError("Too many requests from this address (rate_limited)"),
    ...NOT_CONFIGURED,
  },
});

const INVITE_COOKIE = signInCookie("invite_sign_in", "/invite");
/** Cookies are Secure (and `__Host-`) whenever the page is served over https; plain http is local development. */
const isSecure = (c: Ctx) => new URL(c.req.url).protocol === "https:";

/** The live invitation and the forms' key, or the page that says why not. */
async function withInvitation(
  c: Ctx,
  token: string,
  next: (invitation: Invitation, secret: string) => Promise<Response>,
): Promise<Response> {
  const secret = readConfig(c.env).JWT_SECRET;
  if (!secret) return inviteErrorPage(c, 503, "Signing in is not configured on this deployment.");
  const invitation = await findInvitation(c.get("directory"), token);
  return invitation ? next(invitation, secret) : deadInvitePage(c);
}

export interface InviteDeps {
  /** The bot challenge for a configured Turnstile secret (tests point the real client at a fake siteverify). */
  botChallenge: (secret: string) => BotChallenge;
}

/** The mail step: the bot challenge (when configured), then the e-mail-code sign-in's own checks. */
async function sendCode(
  c: Ctx,
  deps: InviteDeps,
  invitation: Invitation,
  cookie: string,
  csrf: string,
  challengeToken: string | undefined,
): Promise<Response> {
  const again = (error: string) => invitePage(c, { organization: invitation.organizationName, email: invitation.email, csrf, error });
  try {
    await requireChallenge(readConfig(c.env).BOT_CHALLENGE_SECRET, deps.botChallenge, challengeToken, requestMeta(c).ip, "to send a code");
  } catch (err) {
    if (err instanceof ChallengeFailed || err instanceof Validation) return again("Complete the check above, then ask for the code again.");
    throw err;
  }
  const sent = await sendSignInCode(codeSignInDeps(c), cookie, invitation.email);
  if (sent.kind === "locked") return inviteLockedPage(c, { until: sent.until });
  if (sent.kind === "too_many") return again("Too many codes were asked for this address. Wait 15 minutes, then try again.");
  return inviteCodePage(c, { email: invitation.email, csrf });
}

/** The code step: a right code spends the invitation and shows the session it mints. */
async function checkCode(c: Ctx, invitation: Invitation, cookie: string, csrf: string, code: string): Promise<Response> {
  const directory = c.get("directory");
  const signIn = await findSignIn(directory, cookie);
  if (!signIn || signIn.verifiedAt || signIn.email.toLowerCase() !== invitation.email.toLowerCase()) {
    return invitePage(c, { organization: invitation.organizationName, email: invitation.email, csrf, error: "Ask for a code first." });
  }
  const outcome = await enterSignInCode(codeSignInDeps(c), signIn, code);
  switch (outcome.kind) {
    case "locked":
      return inviteLockedPage(c, { until: outcome.until });
    case "too_many":
      return inviteCodePage(c, {
        email: invitation.email,
        csrf,
        error: "Too many codes were tried for this address. Wait 15 minutes, then try again.",
      });
    case "wrong":
      return inviteCodePage(c, {
        email: invitation.email,
        csrf,
        error: `That code is not right. ${outcome.attemptsLeft} attempt${outcome.attemptsLeft === 1 ? "" : "s"} left.`,
      });
    case "spent":
      return invitePage(c, {
        organization: invitation.organizationName,
        email: invitation.email,
        csrf,
        error: "That code has expired or was tried too many times. Ask for a new one.",
      });
    case "accepted": {
      const session = await redeemInvitation({ env: c.env, directory, defer: (work) => c.executionCtx.waitUntil(work) }, invitation);
      // The sign-in served only this: it ends either way (a link used meanwhile in another browser is spent).
      await endSignIn(directory, signIn);
      if (!session) return deadInvitePage(c);
      const clearCookie = INVITE_COOKIE.header(isSecure(c), "", 0);
      return signedInPage(c, {
        organization: invitation.organizationName,
        email: invitation.email,
        token: session.token,
        expiresAt: session.expiresAt,
        clearCookie,
      });
    }
  }
}

/** A link or form over its bounds gets a page, never a JSON body: a token that long is no token (404), a form a 400. */
const pageHook = (result: { success: boolean; target: string }, c: Ctx) => {
  if (!result.success) return result.target === "param" ? deadInvitePage(c) : inviteErrorPage(c, 400, "The form was not understood.");
};

/** GET and POST /invite/{token}: the page of the link mailed by POST /v1/users. */
export function createInviteRoutes(deps: InviteDeps) {
  return new OpenAPIHono<AppBindings>({ defaultHook: pageHook as never })
    .openapi(open, (c) =>
      withInvitation(c, c.req.valid("param").token, async (invitation, secret) => {
        const cookie = newCookieValue();
        const csrf = await csrfTokenFor(secret, cookie);
        return invitePage(c, {
          organization: invitation.organizationName,
          email: invitation.email,
          csrf,
          setCookie: INVITE_COOKIE.header(isSecure(c), cookie),
        });
      }),
    )
    .openapi(step, (c) =>
      withInvitation(c, c.req.valid("param").token, async (invitation, secret) => {
        const form = c.req.valid("form");
        const cookie = getCookie(c, INVITE_COOKIE.name(isSecure(c)));
        if (!cookie || !(await csrfTokenMatches(secret, cookie, form.csrf_token))) {
          return inviteErrorPage(c, 403, "This form has expired or was not sent from this browser. Open the link from your e-mail again.");
        }
        const csrf = await csrfTokenFor(secret, cookie);
        if (form.step === "send") return sendCode(c, deps, invitation, cookie, csrf, form["cf-turnstile-response"]);
        if (form.step === "code") return checkCode(c, invitation, cookie, csrf, form.code ?? "");
        return inviteErrorPage(c, 400, "The form was not understood.");
      }),
    );
}
