import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { z } from "zod";
import { readConfig } from "../env";
import { resolveBearer } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { type AuthorizationQuery, type AuthorizationRequest, issueCode, readAuthorizationRequest, redirectBack } from "./authorize";
import type { ClientDocumentDeps } from "./client-documents";
import { grantedBefore } from "./consent";
import { codeSignInDeps, enterSignInCode, sendSignInCode } from "./email-code";
import { codePage, consentPage, emailPage, errorPage, lockedPage, NO_STORE_HEADERS } from "./pages";
import { csrfTokenFor, csrfTokenMatches, endSignIn, findSignIn, membershipsOf, newCookieValue, OAUTH_COOKIE, type SignIn } from "./sign-in";

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
async function withRequest(
  c: Ctx,
  query: AuthorizationQuery,
  documents: ClientDocumentDeps,
  next: (request: AuthorizationRequest, secret: string) => Promise<Response>,
): Promise<Response> {
  const config = readConfig(c.env);
  if (!config.JWT_SECRET) return errorPage(c, 503, "The authorization server is not configured on this deployment (JWT_SECRET is unset).");
  const outcome = await readAuthorizationRequest(c.get("directory"), config, documents, query);
  if (outcome.kind === "refused") return errorPage(c, 400, outcome.message);
  if (outcome.kind === "redirect-error")
    return redirectTo(
      c,
      redirectBack(config, outcome.redirectUri, { error: outcome.error, error_description: outcome.description, state: outcome.state }),
    );
  return next(outcome.request, config.JWT_SECRET);
}

async function approve(c: Ctx, request: AuthorizationRequest, who: { userId: string; organizationId: string }): Promise<Response> {
  const code = await issueCode(c.get("directory"), request, who);
  return redirectTo(c, redirectBack(readConfig(c.env), request.redirectUri, { code, state: request.state }));
}

async function showConsent(
  c: Ctx,
  request: AuthorizationRequest,
  signIn: SignIn,
  csrf: string,
  extra: { error?: string; setCookie?: string } = {},
): Promise<Response> {
  const db = c.get("directory");
  const organizations = await membershipsOf(db, signIn.email);
  return consentPage(c, {
    csrf,
    clientName: clientNameOf(request),
    ...(request.client.kind === "document" ? { documentUrl: request.client.clientId } : {}),
    redirectUri: request.redirectUri,
    email: signIn.email,
    permissions: request.permissions,
    organizations,
    granted: await grantedBefore(db, request.client.clientId, organizations),
    ...extra,
  });
}

async function freshEmailPage(c: Ctx, request: AuthorizationRequest, secret: string, error?: string): Promise<Response> {
  const cookie = newCookieValue();
  return emailPage(c, {
    csrf: await csrfTokenFor(secret, cookie),
    clientName: clientNameOf(request),
    setCookie: OAUTH_COOKIE.header(isSecure(c), cookie),
    ...(error ? { error } : {}),
  });
}

/** GET /oauth/authorize. */
export function authorize(c: Ctx, query: AuthorizationQuery, documents: ClientDocumentDeps): Promise<Response> {
  return withRequest(c, query, documents, async (request, secret) => {
    const authorization = c.req.header("authorization");
    if (authorization !== undefined) {
      // A programmatic caller with a session (spec table: the caller is that user): no page, the code at once.
      const session = await resolveBearer(c.get("directory"), authorization);
      if (!session) return errorPage(c, 401, "The bearer token presented is unknown, revoked or expired.");
      return approve(c, request, { userId: session.user.id, organizationId: session.organization.id });
    }
    const cookie = getCookie(c, OAUTH_COOKIE.name(isSecure(c)));
    const signIn = await findSignIn(c.get("directory"), cookie);
    if (!signIn || !cookie) return freshEmailPage(c, request, secret);
    const csrf = await csrfTokenFor(secret, cookie);
    if (signIn.verifiedAt) return showConsent(c, request, signIn, csrf);
    return codePage(c, { csrf, email: signIn.email });
  });
}

const Email = z.email().max(254);

/** The code step of a sign-in not yet verified (email-code.ts: the lock, the per-address limit, the tries of a code). */
async function enterCode(
  c: Ctx,
  request: AuthorizationRequest,
  secret: string,
  signIn: SignIn,
  csrf: string,
  code: string,
): Promise<Response> {
  const outcome = await enterSignInCode(codeSignInDeps(c), signIn, code);
  switch (outcome.kind) {
    case "locked":
      return lockedPage(c, { csrf, until: outcome.until });
    case "too_many":
      return codePage(c, {
        csrf,
        email: signIn.email,
        error: "Too many codes were tried for this address. Wait 15 minutes, then try again.",
      });
    case "wrong":
      return codePage(c, {
        csrf,
        email: signIn.email,
        error: `That code is not right. ${outcome.attemptsLeft} attempt${outcome.attemptsLeft === 1 ? "" : "s"} left.`,
      });
    case "spent":
      return emailPage(c, {
        csrf,
        clientName: clientNameOf(request),
        error: "That code has expired or was tried too many times. Enter your e-mail to get a new one.",
      });
    case "accepted": {
      const verified = { ...signIn, verifiedAt: new Date().toISOString() };
      return showConsent(c, request, verified, await csrfTokenFor(secret, outcome.cookie), {
        setCookie: OAUTH_COOKIE.header(isSecure(c), outcome.cookie),
      });
    }
  }
}

/** POST /oauth/authorize: one step of the browser's sign-in and consent. */
export function submitAuthorization(
  c: Ctx,
  query: AuthorizationQuery,
  form: AuthorizeFormBody,
  documents: ClientDocumentDeps,
): Promise<Response> {
  return withRequest(c, query, documents, async (request, secret) => {
    const db = c.get("directory");
    const cookie = getCookie(c, OAUTH_COOKIE.name(isSecure(c)));
    if (!cookie || !(await csrfTokenMatches(secret, cookie, form.csrf_token))) {
      return errorPage(
        c,
        403,
        "This form has expired or was not sent from this browser. Go back to the application and start the sign-in again.",
      );
    }
    const csrf = await csrfTokenFor(secret, cookie);
    const signIn = await findSignIn(db, cookie);
    switch (form.step) {
      case "email": {
        const email = Email.safeParse(form.email?.trim());
        if (!email.success) return emailPage(c, { csrf, clientName: clientNameOf(request), error: "Enter a valid e-mail address." });
        const sent = await sendSignInCode(codeSignInDeps(c), cookie, email.data);
        if (sent.kind === "locked") return lockedPage(c, { csrf, until: sent.until });
        if (sent.kind === "too_many")
          return emailPage(c, {
            csrf,
            clientName: clientNameOf(request),
            error: "Too many codes were asked for this address. Wait 15 minutes, then try again.",
          });
        return codePage(c, { csrf, email: email.data });
      }
      case "code":
        if (!signIn) return freshEmailPage(c, request, secret, "Your sign-in has expired; enter your e-mail again.");
        if (signIn.verifiedAt) return showConsent(c, request, signIn, csrf);
        return enterCode(c, request, secret, signIn, csrf, form.code ?? "");
      case "consent": {
        if (!signIn?.verifiedAt) return freshEmailPage(c, request, secret, "Sign in first.");
        if (form.decision === "deny")
          return redirectTo(
            c,
            redirectBack(readConfig(c.env), request.redirectUri, {
              error: "access_denied",
              error_description: "The user denied the request",
              state: request.state,
            }),
          );
        if (form.decision !== "approve") return showConsent(c, request, signIn, csrf, { error: "Choose Allow or Deny." });
        const memberships = await membershipsOf(db, signIn.email);
        const chosen =
          memberships.length === 1 && !form.organization_id
            ? memberships[0]
            : memberships.find((m) => m.organizationId === form.organization_id);
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
