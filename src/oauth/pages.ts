import type { Context } from "hono";
import { escapeHtml, htmlDocument, newNonce, pageHeaders } from "../platform/html-page";
import { PERMISSIONS, type Permission } from "../platform/permissions";
import { REFRESH_TOKEN_TTL_SECONDS } from "./refresh";

/**
 * The authorization pages: plain server-rendered HTML, no script. Every answer is `no-store`, unframeable
 * (`frame-ancestors 'none'`, X-Frame-Options DENY: no clickjacking of the approve button), sends no referrer (the
 * address carries the client's state) and loads only its own nonce'd style. Forms post back to the same address,
 * so the authorization request travels in the query string and is verified again on every step.
 */
const STYLE = `
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
  body { max-width: 32rem; margin: 2rem auto; padding: 0 1rem; }
  label { display: block; margin: 1rem 0 .25rem; font-weight: 600; }
  input[type=email], input[type=text] { font: inherit; width: 100%; box-sizing: border-box; padding: .5rem; }
  button { font: inherit; padding: .5rem 1rem; margin: 1rem .5rem 0 0; cursor: pointer; }
  button:focus-visible, input:focus-visible { outline: 3px solid #2563eb; outline-offset: 2px; }
  .error { color: #b91c1c; font-weight: 600; }
  ul.permissions li { margin: .25rem 0; }
  .new { font-weight: 700; color: #b45309; }
  .held { color: #4b5563; }
  fieldset { border: 1px solid #8884; }
`;

/** Headers of every authorization answer, pages and redirects alike. */
export const NO_STORE_HEADERS = {
  "Cache-Control": "no-store",
  Pragma: "no-cache",
  "Referrer-Policy": "no-referrer",
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
} as const;

/**
 * `formAction`: where a form's answer may lead. Browsers apply CSP form-action to the redirect that follows a form
 * post, so the consent page must allow the client's redirect URI (its origin, or its scheme for a native app).
 */
function render(
  c: Context,
  status: 200 | 400 | 401 | 403 | 503,
  title: string,
  body: string,
  formAction: string[] = [],
  setCookie?: string,
): Response {
  const nonce = newNonce();
  const csp = [
    "default-src 'none'",
    `style-src 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "base-uri 'none'",
    `form-action 'self'${formAction.map((s) => ` ${s}`).join("")}`,
    "frame-ancestors 'none'",
  ];
  const html = htmlDocument({ title, nonce, style: STYLE, body: `<main>\n<h1>${escapeHtml(title)}</h1>\n${body}\n</main>` });
  const headers: Record<string, string> = { ...pageHeaders(csp), Pragma: "no-cache" };
  if (setCookie) headers["Set-Cookie"] = setCookie;
  return c.html(html, status, headers) as unknown as Response;
}

const hidden = (name: string, value: string) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;
const errorLine = (error?: string) => (error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : "");

/** A request that cannot go back to the client (unknown client, unregistered redirect): shown here, never redirected. */
export function errorPage(c: Context, status: 400 | 401 | 403 | 503, message: string, setCookie?: string): Response {
  return render(
    c,
    status,
    "This sign-in request cannot continue",
    `<p>${escapeHtml(message)}</p><p>Go back to the application and start again.</p>`,
    [],
    setCookie,
  );
}

export function emailPage(c: Context, opts: { csrf: string; clientName: string; error?: string; setCookie?: string }): Response {
  return render(
    c,
    200,
    "Sign in",
    `<p><strong>${escapeHtml(opts.clientName)}</strong> asks to work with your brokerage account. Sign in with your work e-mail; we will send you a one-time code.</p>
${errorLine(opts.error)}
<form method="post">
${hidden("csrf_token", opts.csrf)}${hidden("step", "email")}
<label for="email">E-mail</label>
<input type="email" id="email" name="email" required maxlength="254" autocomplete="email" autofocus>
<button type="submit">Send me a code</button>
</form>`,
    [],
    opts.setCookie,
  );
}

export function codePage(c: Context, opts: { csrf: string; email: string; error?: string }): Response {
  return render(
    c,
    200,
    "Enter your code",
    `<p>If <strong>${escapeHtml(opts.email)}</strong> has an account here, we have sent it a 6-digit code. It is valid for 10 minutes.</p>
${errorLine(opts.error)}
<form method="post">
${hidden("csrf_token", opts.csrf)}${hidden("step", "code")}
<label for="code">Code</label>
<input type="text" id="code" name="code" required inputmode="numeric" pattern="[0-9 ]{6,8}" maxlength="8" autocomplete="one-time-code" autofocus>
<button type="submit">Continue</button>
</form>
<form method="post">${hidden("csrf_token", opts.csrf)}${hidden("step", "restart")}<button type="submit">Use another e-mail</button></form>`,
  );
}

/** The address's sign-in is locked (lockout.ts): no code is sent or checked until `until`, whatever is typed. */
export function lockedPage(c: Context, opts: { csrf: string; until: string }): Response {
  return render(
    c,
    200,
    "Sign-in is locked for this address",
    `<p class="error" role="alert">Too many wrong codes were typed for this address, so signing in with it is locked until <strong>${escapeHtml(opts.until)}</strong>. Until then no code is sent, and no code is accepted, not even a right one.</p>
<p>If it was not you typing them, someone may be guessing codes for your address; they cannot sign in while the lock lasts.</p>
<form method="post">${hidden("csrf_token", opts.csrf)}${hidden("step", "restart")}<button type="submit">Use another e-mail</button></form>`,
  );
}

/**
 * How long an approval lasts, as tokens.ts and refresh.ts make it: each access token an hour, but every refresh brings
 * a new one and a new refresh token valid 30 days, so access lasts until revoked, left unused 30 days, or the user leaves.
 */
const accessLasts = (clientName: string) =>
  `This access lasts until it is revoked, not for a set time: <strong>${escapeHtml(clientName)}</strong> renews it while in use. It ends when the application revokes it (signing out), after ${REFRESH_TOKEN_TTL_SECONDS / 86_400} days in which the application does not use it, or when you leave the organization.`;

export function consentPage(
  c: Context,
  opts: {
    csrf: string;
    clientName: string;
    /** A client identified by its metadata document (client-documents.ts): where that document is. */
    documentUrl?: string;
    redirectUri: string;
    email: string;
    permissions: Permission[];
    organizations: { organizationId: string; organizationName: string }[];
    /** Per organization, what the person already allowed this client (consent.ts). */
    granted: Record<string, Permission[]>;
    error?: string;
    setCookie?: string;
  },
): Response {
  const target = new URL(opts.redirectUri);
  const orgs = opts.organizations;
  const orgChoice =
    orgs.length === 1
      ? `<p>Organization: <strong>${escapeHtml(orgs[0]!.organizationName)}</strong></p>${hidden("organization_id", orgs[0]!.organizationId)}`
      : `<fieldset><legend>For which organization?</legend>${orgs
          .map(
            (o, i) =>
              `<label><input type="radio" name="organization_id" value="${escapeHtml(o.organizationId)}"${i === 0 ? " checked" : ""}> ${escapeHtml(o.organizationName)}</label>`,
          )
          .join("")}</fieldset>`;
  const name = escapeHtml(opts.clientName);
  const origin = target.origin === "null" ? target.protocol : target.origin;
  return render(
    c,
    200,
    `Allow ${opts.clientName}?`,
    `<p>Signed in as <strong>${escapeHtml(opts.email)}</strong>.</p>
${
  opts.documentUrl
    ? `<p>This application is identified by the document at <code>${escapeHtml(opts.documentUrl)}</code>: the name <strong>${name}</strong> is what that document says.</p>\n`
    : ""
}${permissionList(name, opts.permissions, orgs, opts.granted)}
<p>${accessLasts(opts.clientName)}</p>
<p>You will be returned to <code>${escapeHtml(origin)}</code>, which receives the answer.</p>
${errorLine(opts.error)}
<form method="post">
${hidden("csrf_token", opts.csrf)}${hidden("step", "consent")}
${orgChoice}
<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>
<form method="post">${hidden("csrf_token", opts.csrf)}${hidden("step", "restart")}<button type="submit">Sign in as someone else</button></form>`,
    [origin],
    opts.setCookie,
  );
}

/**
 * The permissions asked for. When the person already allowed this client something (a step-up: the client asks again
 * with what it holds plus what a tool needs), each is marked: "Newly requested", listed first, or "Already granted"
 * (naming the organizations when there is a choice, since a grant is per organization).
 */
function permissionList(
  name: string,
  permissions: Permission[],
  orgs: { organizationId: string; organizationName: string }[],
  granted: Record<string, Permission[]>,
): string {
  const holders = (p: Permission) => orgs.filter((o) => granted[o.organizationId]?.includes(p));
  const item = (p: Permission, mark = "") => `<li>${escapeHtml(PERMISSIONS[p])} <code>${p}</code>${mark}</li>`;
  if (!orgs.some((o) => (granted[o.organizationId]?.length ?? 0) > 0))
    return `<p><strong>${name}</strong> asks to act on your behalf. It will be able to:</p>
<ul class="permissions">${permissions.map((p) => item(p)).join("")}</ul>`;
  const added = permissions.filter((p) => holders(p).length === 0);
  const kept = permissions.filter((p) => holders(p).length > 0);
  const heldMark = (p: Permission) =>
    ` <span class="held">Already granted${
      orgs.length === 1
        ? ""
        : ` for ${holders(p)
            .map((o) => escapeHtml(o.organizationName))
            .join(", ")}`
    }</span>`;
  const intro =
    added.length > 0
      ? `You already allowed <strong>${name}</strong> some of this. It now asks for ${added.length === 1 ? "one more permission" : `${added.length} more permissions`}, marked <strong>Newly requested</strong>:`
      : `You already allowed <strong>${name}</strong> all of this. It asks again for:`;
  return `<p>${intro}</p>
<ul class="permissions">${[...added.map((p) => item(p, ' <strong class="new">Newly requested</strong>')), ...kept.map((p) => item(p, heldMark(p)))].join("")}</ul>`;
}
