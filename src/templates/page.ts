import type { Context } from "hono";
import { escapeHtml, htmlDocument, newNonce, pageHeaders } from "../platform/html-page";

/**
 * A template's public link (`{APP_URL}/t/<slug>`, issue 45): a visitor (at an open house, from a QR code) gives a name
 * and an e-mail, types the code mailed to it, and is taken to the signing page of the envelope made for them from the
 * template. The slug stays in the page's own address only: the page calls the public routes with it and sends no
 * referrer. Scripts and styles run only with this response's nonce; nobody may frame it.
 */
const STYLE = `
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
  body { max-width: 32rem; margin: 1.5rem auto; padding: 0 1rem; }
  label { display: block; margin-top: .75rem; font-weight: 600; }
  input { font: inherit; width: 100%; box-sizing: border-box; padding: .5rem; margin-top: .25rem; }
  button { font: inherit; padding: .6rem 1.2rem; margin-top: 1rem; cursor: pointer; min-height: 44px; }
  button:focus-visible, input:focus-visible { outline: 3px solid #2563eb; outline-offset: 2px; }
  #status { min-height: 1.5rem; font-weight: 600; }
  [hidden] { display: none !important; }
`;

const SCRIPT = `
(() => {
  const slug = document.querySelector("main").dataset.slug;
  const base = "/api/public/templates/" + encodeURIComponent(slug);
  const status = document.getElementById("status");
  const details = document.getElementById("details");
  const codeForm = document.getElementById("code-form");
  const say = (text) => { status.textContent = text; };
  const post = (path, body) => fetch(base + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const visitor = () => ({ name: document.getElementById("name").value.trim(), email: document.getElementById("email").value.trim() });
  const problem = async (res) => {
    if (res.status === 404) return "This link no longer works. Ask whoever gave it to you for a new one.";
    if (res.status === 429) return "Too many attempts; please wait a minute and try again.";
    try {
      const body = await res.json();
      if (body.issues && body.issues.length) return body.issues.map((i) => i.message).join(" ");
      if (body.message) return body.message;
    } catch {}
    return "Something went wrong (" + res.status + "); please try again.";
  };
  details.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = details.querySelector("button");
    button.disabled = true;
    say("Sending you a code…");
    try {
      const res = await post("/code", visitor());
      if (res.ok) {
        say("We sent a 6-digit code to " + visitor().email + ". Type it below.");
        codeForm.hidden = false;
        document.getElementById("code").focus();
      } else say(await problem(res));
    } catch { say("The code could not be sent; please check your connection and try again."); }
    button.disabled = false;
  });
  codeForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = codeForm.querySelector("button");
    button.disabled = true;
    say("Checking the code…");
    try {
      const res = await post("/start", { ...visitor(), code: document.getElementById("code").value.trim() });
      if (res.ok) {
        const body = await res.json();
        say("Opening your document…");
        location.assign(body.url);
        return;
      }
      say(await problem(res));
    } catch { say("The code could not be checked; please check your connection and try again."); }
    button.disabled = false;
  });
})();
`;

export function publicLinkPage(
  c: Context,
  slug: string,
  shown: { template: { name: string; title: string; pageCount: number }; role: { label: string } } | null,
): Response {
  const nonce = newNonce();
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "connect-src 'self'",
    // The document's empty icon (html-page.ts), so the browser asks for no favicon.
    "img-src data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ];
  const body = shown
    ? `<main data-slug="${escapeHtml(slug)}">
  <h1>${escapeHtml(shown.template.title)}</h1>
  <p>You are asked to sign this document (${shown.template.pageCount} page${shown.template.pageCount === 1 ? "" : "s"}) as <strong>${escapeHtml(shown.role.label)}</strong>. First tell us who you are; we mail you a code to check your address.</p>
  <form id="details">
    <label for="name">Your full name</label><input id="name" name="name" autocomplete="name" required maxlength="200">
    <label for="email">Your e-mail</label><input id="email" name="email" type="email" autocomplete="email" required maxlength="254">
    <button type="submit">Send me a code</button>
  </form>
  <form id="code-form" hidden>
    <label for="code">The code we mailed you</label><input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" required maxlength="6">
    <button type="submit">Continue to the document</button>
  </form>
  <p id="status" role="status" aria-live="polite"></p>
</main>
<script nonce="${nonce}">${SCRIPT}</script>`
    : `<main><h1>This link no longer works</h1><p>It may have been turned off. Ask whoever gave it to you for a new one.</p></main>`;
  const html = htmlDocument({ title: shown ? shown.template.title : "Link not available", nonce, style: STYLE, body });
  return c.html(html, shown ? 200 : 404, pageHeaders(csp)) as unknown as Response;
}
