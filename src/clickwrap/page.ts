import type { Context } from "hono";
import { escapeHtml, htmlDocument, newNonce, pageHeaders } from "../platform/html-page";

/**
 * The consent page (DESIGN.md contract 5, spec rule 6: `{APP_URL}/consent/<agreementId>`), made to be embedded in an
 * iframe on the customer's own site. It shows the current title and text (rendered here, so it reads without
 * scripts), an accept button, and posts the acceptance with the version hash it showed and `subjectRef` from its
 * query string; a 409 (a newer text was published meanwhile) reloads the page with the new text.
 *
 * Frame headers, deliberately: `frame-ancestors *` and no X-Frame-Options, so any site may embed it. Framing adds no
 * power to an attacker: the page holds no session or secret, and the public accept route it calls is open to anyone
 * anyway (subjectRef is the caller's claim, recorded with IP and user agent as evidence). Scripts and styles run only
 * with this response's nonce; the page connects only to its own origin and sends no referrer. When an acceptance is
 * recorded the page tells its parent window: `postMessage({type: "clickwrap:accepted", agreementId, versionHash,
 * subjectRef}, "*")`.
 */
const STYLE = `
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
  body { max-width: 44rem; margin: 1.5rem auto; padding: 0 1rem; }
  #text { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 60vh; overflow: auto; border: 1px solid #8884; padding: .75rem 1rem; }
  button { font: inherit; padding: .5rem 1rem; margin-top: 1rem; cursor: pointer; }
  button:focus-visible { outline: 3px solid #2563eb; outline-offset: 2px; }
  #status { min-height: 1.5rem; font-weight: 600; }
`;

const SCRIPT = `
(() => {
  const main = document.querySelector("main");
  const agreementId = main.dataset.agreement;
  const versionHash = main.dataset.version;
  // As the server read and checked it (trimmed), so the acceptance and the message to the parent name the same subject.
  const subjectRef = main.dataset.subject === undefined ? undefined : main.dataset.subject;
  const status = document.getElementById("status");
  const button = document.getElementById("accept");
  button.addEventListener("click", async () => {
    button.disabled = true;
    status.textContent = "Recording your acceptance…";
    try {
      const res = await fetch("/api/public/clickwrap/" + encodeURIComponent(agreementId), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ versionHash, subjectRef }),
      });
      if (res.ok) {
        status.textContent = "Thank you: your acceptance has been recorded.";
        button.hidden = true;
        if (window.parent !== window) window.parent.postMessage({ type: "clickwrap:accepted", agreementId, versionHash, subjectRef: subjectRef ?? null }, "*");
        return;
      }
      if (res.status === 409) { status.textContent = "The agreement has just been updated; showing the new text."; setTimeout(() => location.reload(), 1200); return; }
      if (res.status === 404) { status.textContent = "This agreement is no longer available."; return; }
      if (res.status === 429) status.textContent = "Too many attempts; please wait a minute and try again.";
      else status.textContent = "Your acceptance could not be recorded (" + res.status + "); please try again.";
    } catch {
      status.textContent = "Your acceptance could not be recorded; please check your connection and try again.";
    }
    button.disabled = false;
  });
})();
`;

export function consentPage(
  c: Context,
  agreement: { id: string; title: string; body: string; versionHash: string } | null,
  opts: { subjectRef?: string; invalidSubject?: boolean } = {},
): Response {
  const nonce = newNonce();
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors *",
  ];
  const content = agreement
    ? `<main data-agreement="${escapeHtml(agreement.id)}" data-version="${agreement.versionHash}"${opts.subjectRef === undefined ? "" : ` data-subject="${escapeHtml(opts.subjectRef)}"`}>
  <h1>${escapeHtml(agreement.title)}</h1>
  <div id="text" tabindex="0" aria-label="Agreement text">${escapeHtml(agreement.body)}</div>
  <button type="button" id="accept">I accept</button>
  <p id="status" role="status" aria-live="polite"></p>
</main>
<script nonce="${nonce}">${SCRIPT}</script>`
    : opts.invalidSubject
      ? `<main><h1>This page was opened with an invalid subject</h1><p>The subjectRef in its address must be one line of 1 to 200 visible characters. Ask the site that showed it to you.</p></main>`
      : `<main><h1>This agreement is no longer available</h1><p>It may have been withdrawn. Ask the site that showed it to you.</p></main>`;
  const title = agreement ? agreement.title : opts.invalidSubject ? "Invalid subject" : "Agreement not available";
  const html = htmlDocument({ title, nonce, style: STYLE, body: content });
  return c.html(html, opts.invalidSubject ? 400 : agreement ? 200 : 404, pageHeaders(csp, { framable: true })) as unknown as Response;
}
