import type { Context } from "hono";
import { readConfig } from "../env";
import { TURNSTILE_ORIGIN } from "../platform/bot-challenge";
import { escapeHtml, htmlDocument, newNonce, pageHeaders } from "../platform/html-page";

/**
 * The invitation pages (`{APP_URL}/invite/<token>`, the link of the invitation mail): plain server-rendered forms, no
 * script of ours. The path holds a capability: every page is never cached, sends no referrer and may not be framed;
 * forms post back to the same address with the CSRF token of the page's sign-in cookie. With a Turnstile site key the
 * form that mails a code carries the widget (its script and frame are the only third-party content allowed).
 */
const STYLE = `
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
  body { max-width: 32rem; margin: 2rem auto; padding: 0 1rem; }
  label { display: block; margin: 1rem 0 .25rem; font-weight: 600; }
  input[type=text] { font: inherit; width: 100%; box-sizing: border-box; padding: .5rem; }
  button { font: inherit; padding: .5rem 1rem; margin: 1rem .5rem 0 0; cursor: pointer; }
  button:focus-visible, input:focus-visible { outline: 3px solid #2563eb; outline-offset: 2px; }
  .error { color: #b91c1c; font-weight: 600; }
  code#session-token { display: block; padding: .75rem; border: 1px solid #8886; word-break: break-all; user-select: all; }
`;

type Status = 200 | 400 | 403 | 404 | 503;

/** The Turnstile site key, or "" without one. It goes into markup: only the characters Turnstile keys are made of. */
const siteKeyOf = (c: Context) => (readConfig(c.env).BOT_CHALLENGE_SITE_KEY ?? "").replace(/[^A-Za-z0-9_-]/g, "");

function render(
  c: Context,
  status: Status,
  title: string,
  body: string,
  { setCookie, siteKey = "" }: { setCookie?: string; siteKey?: string } = {},
): Response {
  const nonce = newNonce();
  const csp = [
    "default-src 'none'",
    `style-src 'nonce-${nonce}'`,
    ...(siteKey ? [`script-src 'nonce-${nonce}' ${TURNSTILE_ORIGIN}`, `frame-src ${TURNSTILE_ORIGIN}`] : []),
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ];
  const html = htmlDocument({
    title,
    nonce,
    style: STYLE,
    head: siteKey ? `<script nonce="${nonce}" src="${TURNSTILE_ORIGIN}/turnstile/v0/api.js" async defer></script>\n` : "",
    body: `<main>\n<h1>${escapeHtml(title)}</h1>\n${body}\n</main>`,
  });
  const headers: Record<string, string> = { ...pageHeaders(csp, { isolated: true }), Pragma: "no-cache" };
  if (setCookie) headers["Set-Cookie"] = setCookie;
  return c.html(html, status, headers) as unknown as Response;
}

const hidden = (name: string, value: string) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;
const errorLine = (error?: string) => (error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : "");
/** The form that mails a code; with a site key it carries the widget, which adds its token to the form. */
const sendForm = (csrf: string, label: string, siteKey: string) => `<form method="post">
${hidden("csrf_token", csrf)}${hidden("step", "send")}
${siteKey ? `<div class="cf-turnstile" data-sitekey="${siteKey}"></div>\n` : ""}<button type="submit">${escapeHtml(label)}</button>
</form>`;

/** The link's first page: who is invited where, and the button that mails the code. */
export function invitePage(
  c: Context,
  opts: { organization: string; email: string; csrf: string; error?: string; setCookie?: string },
): Response {
  const siteKey = siteKeyOf(c);
  return render(
    c,
    200,
    `Join ${opts.organization}`,
    `<p>You have been invited to <strong>${escapeHtml(opts.organization)}</strong> as <strong>${escapeHtml(opts.email)}</strong>.</p>
<p>To sign in, we send a 6-digit code to that address.</p>
${errorLine(opts.error)}
${sendForm(opts.csrf, "Send me a code", siteKey)}`,
    { setCookie: opts.setCookie, siteKey },
  );
}

export function inviteCodePage(c: Context, opts: { email: string; csrf: string; error?: string }): Response {
  const siteKey = siteKeyOf(c);
  return render(
    c,
    200,
    "Enter your code",
    `<p>We have sent a 6-digit code to <strong>${escapeHtml(opts.email)}</strong>. It is valid for 10 minutes.</p>
${errorLine(opts.error)}
<form method="post">
${hidden("csrf_token", opts.csrf)}${hidden("step", "code")}
<label for="code">Code</label>
<input type="text" id="code" name="code" required inputmode="numeric" pattern="[0-9 ]{6,8}" maxlength="8" autocomplete="one-time-code" autofocus>
<button type="submit">Sign in</button>
</form>
${sendForm(opts.csrf, "Send a new code", siteKey)}`,
    { siteKey },
  );
}

/** The address's sign-in is locked (the OAuth sign-in's lock: the same address, the same lock). */
export function inviteLockedPage(c: Context, opts: { until: string }): Response {
  return render(
    c,
    200,
    "Sign-in is locked for this address",
    `<p class="error" role="alert">Too many wrong codes were typed for this address, so signing in with it is locked until <strong>${escapeHtml(opts.until)}</strong>. Until then no code is sent, and no code is accepted. Your invitation link still works after that, if it has not expired.</p>`,
  );
}

/** The session the link signed in with, shown once. */
export function signedInPage(
  c: Context,
  opts: { organization: string; email: string; token: string; expiresAt: string; clearCookie: string },
): Response {
  return render(
    c,
    200,
    "You are signed in",
    `<p>Welcome to <strong>${escapeHtml(opts.organization)}</strong>, ${escapeHtml(opts.email)}.</p>
<p>Your session token, valid until ${escapeHtml(opts.expiresAt.slice(0, 16).replace("T", " "))} UTC. Copy it now: it is shown only here, once, and your invitation link no longer works.</p>
<code id="session-token">${escapeHtml(opts.token)}</code>
<p>Send it to the API as <code>Authorization: Bearer &lt;token&gt;</code>.</p>`,
    { setCookie: opts.clearCookie },
  );
}

/** An unknown, used, expired or malformed link: one answer for all. */
export function deadInvitePage(c: Context): Response {
  return render(
    c,
    404,
    "This invitation link does not work",
    "<p>It may have been used already, have expired (links work for 7 days) or be incomplete. Ask the person who invited you to send you a new invitation.</p>",
  );
}

export function inviteErrorPage(c: Context, status: 400 | 403 | 503, message: string): Response {
  return render(c, status, "This invitation cannot continue", `<p>${escapeHtml(message)}</p>`);
}
