import type { Context } from "hono";
import { htmlDocument, newNonce, pageHeaders } from "../platform/html-page";
import { readConfig } from "../env";

/**
 * The signing page (DESIGN.md contract 5: `{APP_URL}/sign/<token>`): one small, accessible HTML page that walks the
 * signer through the public API: open, confirm identity, consent to sign electronically, then sign or decline.
 * The token stays in the path and is read by the script; the page is never cached and sends no referrer, so the
 * token does not leak to other sites. Scripts and styles run only with this response's nonce (CSP).
 */
const TURNSTILE = "https://challenges.cloudflare.com";

const STYLE = `
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
  body { max-width: 44rem; margin: 2rem auto; padding: 0 1rem; }
  button { font: inherit; padding: .5rem 1rem; margin: .25rem .5rem .25rem 0; cursor: pointer; }
  button:focus-visible, input:focus-visible, textarea:focus-visible, a:focus-visible { outline: 3px solid #2563eb; outline-offset: 2px; }
  .step[hidden], #code-entry[hidden] { display: none; }
  #status { min-height: 1.5rem; font-weight: 600; }
  textarea { width: 100%; font: inherit; }
  #code { font: inherit; font-size: 1.25rem; letter-spacing: .3em; width: 8ch; padding: .25rem .5rem; }
  #document { border: 1px solid #8884; border-radius: .5rem; padding: .5rem 1rem; max-height: 28rem; overflow: auto; }
  #document h3 { font-size: 1rem; margin: .75rem 0 .25rem; }
  #document p { margin: 0; }
  .hash { font-family: ui-monospace, monospace; font-size: .8rem; overflow-wrap: anywhere; }
`;

const SCRIPT = `
(() => {
  const token = decodeURIComponent(location.pathname.split("/").pop() || "");
  const api = "/api/public/sign/" + encodeURIComponent(token);
  const $ = (id) => document.getElementById(id);
  const status = $("status");
  const siteKey = document.body.dataset.sitekey || "";
  const show = (step) => {
    for (const el of document.querySelectorAll(".step")) el.hidden = el.id !== step;
    $("read").hidden = !["identify", "consent", "sign"].includes(step);
    const heading = $(step).querySelector("h2");
    if (heading) heading.focus();
  };
  const say = (text) => { status.textContent = text; };
  const challenge = () => (siteKey && window.turnstile ? window.turnstile.getResponse() : undefined);
  async function post(body) {
    const res = await fetch(api, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const json = await res.json().catch(() => ({}));
    if (res.status === 404) { show("gone"); say(""); return null; }
    if (!res.ok) { say(json.message || "Something went wrong (" + res.status + "); please try again."); return null; }
    return json;
  }
  function showDocument(doc) {
    const box = $("document");
    box.replaceChildren();
    $("sha256").textContent = doc.sha256 || "";
    if (!doc.text) {
      const note = document.createElement("p");
      note.textContent = "The document is shown once you have confirmed it is you with the code we e-mail you.";
      box.append(note);
      $("pdf").hidden = true;
      return;
    }
    const title = document.createElement("h2");
    title.id = "document-title";
    title.textContent = doc.text.title;
    box.append(title);
    for (const section of doc.text.sections) {
      const h = document.createElement("h3");
      h.textContent = section.heading;
      box.append(h);
      for (const line of section.lines) {
        const p = document.createElement("p");
        p.textContent = line;
        box.append(p);
      }
    }
    if (doc.pdfUrl) { $("pdf").href = doc.pdfUrl; $("pdf").hidden = false; }
  }
  async function load() {
    const res = await fetch(api);
    if (res.status === 404) { show("gone"); return null; }
    if (!res.ok) { say("This page could not be loaded (" + res.status + "); please try again."); return null; }
    const view = await res.json();
    $("who").textContent = view.signer.name + " (" + view.signer.role + ")";
    showDocument(view.document);
    return view;
  }
  async function start() {
    const view = await load();
    if (!view) return;
    const next = { opened: "identify", authenticated: "consent", consented: "sign" }[view.signer.status] || "identify";
    show(next);
  }
  $("send-code-button").addEventListener("click", async () => {
    const sent = await post({ action: "send_code" });
    if (sent) {
      $("sent-to").textContent = sent.sentTo;
      $("code-entry").hidden = false;
      $("send-code-button").textContent = "Send a new code";
      say("We sent a code to " + sent.sentTo + ". It works for " + Math.round(sent.expiresInSeconds / 60) + " minutes.");
      $("code").focus();
    }
  });
  $("identify-button").addEventListener("click", async () => {
    const code = $("code").value.replace(/\\s+/g, "");
    if (!/^[0-9]{6}$/.test(code)) return say("Please type the 6-digit code from the e-mail.");
    if (await post({ action: "authenticate", code })) {
      // Read again: a code envelope shows the document only now.
      if (await load()) { say("Identity confirmed. Please read the document before you agree."); show("consent"); }
    }
  });
  $("consent-button").addEventListener("click", async () => {
    if (!$("agree").checked) return say("Please agree to sign electronically first.");
    if (await post({ action: "consent" })) { say("Consent recorded."); show("sign"); }
  });
  $("sign-button").addEventListener("click", async () => {
    const done = await post({ action: "sign", challengeToken: challenge() });
    if (done) { show("signed"); say(done.completed ? "Signed. Every party has now signed." : "Signed. Thank you."); }
  });
  $("decline-button").addEventListener("click", async () => {
    const reason = $("reason").value.trim();
    const done = await post({ action: "decline", reason: reason || undefined, challengeToken: challenge() });
    if (done) { show("declined"); say("You declined to sign."); }
  });
  start().catch(() => say("This page could not be loaded; please check your connection."));
})();
`;

export function signingPage(c: Context): Response {
  const nonce = newNonce();
  const siteKey = (readConfig(c.env).BOT_CHALLENGE_SITE_KEY ?? "").replace(/[^A-Za-z0-9_-]/g, "");
  const turnstile = siteKey !== "";
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'${turnstile ? ` ${TURNSTILE}` : ""}`,
    `style-src 'nonce-${nonce}'`,
    "connect-src 'self'",
    ...(turnstile ? [`frame-src ${TURNSTILE}`] : []),
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ];
  const html = htmlDocument({
    title: "Sign a document",
    nonce,
    style: STYLE,
    head: turnstile ? `<script nonce="${nonce}" src="${TURNSTILE}/turnstile/v0/api.js" async defer></script>\n` : "",
    bodyAttributes: ` data-sitekey="${siteKey}"`,
    body: `<main>
  <h1>Sign a document</h1>
  <p>Signing as <strong id="who">…</strong></p>
  <p id="status" role="status" aria-live="polite"></p>
  <section id="read" aria-labelledby="document-title" hidden>
    <div id="document" tabindex="0"></div>
    <p><a id="pdf" href="#" target="_blank" rel="noopener" hidden>Open the document as a PDF</a></p>
    <p>Document fingerprint (SHA-256 of the PDF): <span class="hash" id="sha256"></span></p>
  </section>
  <section class="step" id="identify" hidden>
    <h2 tabindex="-1">1. Confirm it is you</h2>
    <p>We send a 6-digit code to your e-mail address; type it here.</p>
    <button type="button" id="send-code-button">Send me a code</button>
    <div id="code-entry" hidden>
      <p>Code sent to <strong id="sent-to"></strong>.</p>
      <p><label for="code">Code from the e-mail</label> <input id="code" inputmode="numeric" autocomplete="one-time-code" maxlength="6"></p>
      <button type="button" id="identify-button">Verify the code</button>
    </div>
  </section>
  <section class="step" id="consent" hidden>
    <h2 tabindex="-1">2. Agree to sign electronically</h2>
    <p><input type="checkbox" id="agree"> <label for="agree">I agree to sign this document electronically, and that my electronic signature is as binding as a handwritten one.</label></p>
    <button type="button" id="consent-button">Continue</button>
  </section>
  <section class="step" id="sign" hidden>
    <h2 tabindex="-1">3. Sign or decline</h2>
    ${turnstile ? `<div class="cf-turnstile" data-sitekey="${siteKey}"></div>` : ""}
    <button type="button" id="sign-button">Sign the document</button>
    <p><label for="reason">Reason for declining (optional)</label><br><textarea id="reason" rows="3" maxlength="1000"></textarea></p>
    <button type="button" id="decline-button">Decline to sign</button>
  </section>
  <section class="step" id="signed" hidden><h2 tabindex="-1">Thank you</h2><p>Your signature has been recorded. You can close this page.</p></section>
  <section class="step" id="declined" hidden><h2 tabindex="-1">Declined</h2><p>You declined to sign. The sender has been told.</p></section>
  <section class="step" id="gone" hidden><h2 tabindex="-1">This link is no longer valid</h2><p>It may have been used already, expired or been withdrawn. Ask the sender for a new one.</p></section>
</main>
<script nonce="${nonce}">${SCRIPT}</script>`,
  });
  return c.html(html, 200, pageHeaders(csp, { isolated: true })) as unknown as Response;
}
