import type { Context } from "hono";
import { htmlDocument, newNonce, pageHeaders } from "../platform/html-page";
import { readConfig } from "../env";
import { SIGNATURE_PAD_MARKUP, SIGNATURE_PAD_SCRIPT, SIGNATURE_PAD_STYLE } from "./page-signature-pad";
import { VIEWER_SCRIPT, VIEWER_STYLE } from "./page-viewer";
import { PDFJS_PATH } from "./pdfjs-assets";
import { type PageSession, SESSION_SCRIPT, sessionAttributes, sessionMarkup } from "./page-session";

/**
 * The signing page (DESIGN.md contract 5: `{APP_URL}/sign/<token>`): one small, accessible HTML page that walks the
 * signer through the public API: open, confirm identity, consent to sign electronically, then sign or decline. An
 * uploaded document (issue 44) is drawn page by page with this signer's fields over it (page-viewer.ts, signatures in
 * page-signature-pad.ts); an approver approves or rejects instead of signing, and a viewer only reads.
 * The token stays in the path and is read by the script; the page is never cached and sends no referrer, so the
 * token does not leak to other sites. Scripts and styles run only with this response's nonce (CSP).
 */
const TURNSTILE = "https://challenges.cloudflare.com";

const STYLE = `
  *, *::before, *::after { box-sizing: border-box; }
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
  body { max-width: 44rem; margin: 2rem auto; padding: 0 1rem; }
  button { font: inherit; padding: .5rem 1rem; margin: .25rem .5rem .25rem 0; cursor: pointer; }
  button:focus-visible, input:focus-visible, textarea:focus-visible, select:focus-visible, a:focus-visible { outline: 3px solid #2563eb; outline-offset: 2px; }
  button:disabled { cursor: not-allowed; }
  .step[hidden], #code-entry[hidden] { display: none; }
  #status { min-height: 1.5rem; font-weight: 600; }
  textarea { width: 100%; font: inherit; }
  #code { font: inherit; font-size: 1.25rem; letter-spacing: .3em; width: 8ch; padding: .25rem .5rem; }
  #document { border: 1px solid #8884; border-radius: .5rem; padding: .5rem 1rem; max-height: 28rem; overflow: auto; }
  #document h3 { font-size: 1rem; margin: .75rem 0 .25rem; }
  #document p { margin: 0; }
  .hash { font-family: ui-monospace, monospace; font-size: .8rem; overflow-wrap: anywhere; }
  .upload #document { border: 0; padding: 0; max-height: none; overflow: visible; }
  #who { overflow-wrap: anywhere; }
${VIEWER_STYLE}${SIGNATURE_PAD_STYLE}`;

const SCRIPT = `
(() => {
  // A signing session's page (issue 45) carries the signing link it opened; a link's page reads its own address.
  const token = document.body.dataset.token || decodeURIComponent(location.pathname.split("/").pop() || "");
  const api = "/api/public/sign/" + encodeURIComponent(token);
  const $ = (id) => document.getElementById(id);
  const status = $("status");
  const siteKey = document.body.dataset.sitekey || "";
  const WITH_DOCUMENT = ["identify", "consent", "sign", "viewed"];
  const show = (step) => {
    for (const el of document.querySelectorAll(".step")) el.hidden = el.id !== step;
    $("read").hidden = !WITH_DOCUMENT.includes(step);
    // An upload's fields are on the pages above its sign step: the signer starts at the document's top.
    const uploaded = document.body.classList.contains("upload") && step === "sign";
    const heading = uploaded ? $("document-title") : $(step).querySelector("h2");
    if (heading) heading.focus();
  };
  const say = (text) => { status.textContent = text; };
  const challenge = () => (siteKey && window.turnstile ? window.turnstile.getResponse() : undefined);
  // What happened, for a session page's script (page-session.ts): ready, signed, declined, error.
  const emit = (type) => document.dispatchEvent(new CustomEvent("signing-event", { detail: type }));
  ${SIGNATURE_PAD_SCRIPT}
  ${VIEWER_SCRIPT}
  let role = "signer";
  let viewer = null;
  // The API's refusals: {error: <code>, message, issues[{field: "fields.<id>", message}]} (issues on a 422 invalid_fields).
  const codeOf = (json) => json.error;
  const notYourTurn = () => {
    show("waiting");
    say("");
  };
  async function post(body) {
    const res = await fetch(api, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const json = await res.json().catch(() => ({}));
    if (res.status === 404) { show("gone"); say(""); return null; }
    if (res.status === 409 && codeOf(json) === "not_your_turn") { notYourTurn(); return null; }
    if (res.status === 422 && viewer) {
      const lines = viewer.showProblems(json.issues || []);
      if (lines.length) { say("Please check: " + lines.join("; ")); return null; }
    }
    if (!res.ok) { say(json.message || "Something went wrong (" + res.status + "); please try again."); return null; }
    return json;
  }
  function showText(doc) {
    const box = $("document");
    box.replaceChildren();
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
  // An uploaded document: its pages and this recipient's fields. Confirming identity and consenting come before it,
  // signing after it, in the order a reader scrolls.
  function showUpload(view) {
    const doc = view.document;
    document.body.classList.add("upload");
    $("main").insertBefore($("read"), $("sign"));
    $("main").insertBefore($("viewed"), $("read"));
    const box = $("document");
    box.replaceChildren();
    const title = document.createElement("h2");
    title.id = "document-title";
    title.tabIndex = -1;
    title.textContent = doc.title || "The document";
    const note = document.createElement("p");
    if (!doc.pdfUrl) note.textContent = "The document is shown once you have confirmed it is you with the code we e-mail you.";
    else if (role === "viewer") note.textContent = "You are sent this document to read: nothing more is asked of you.";
    else if (viewer && viewer.hasFields()) note.textContent = "Fill in the highlighted fields on the pages below; those marked * are required.";
    box.append(title, note);
    if (doc.pdfUrl) { $("pdf").href = doc.pdfUrl; $("pdf").hidden = false; } else $("pdf").hidden = true;
    viewer ??= uploadViewer({ pdfjsBase: document.body.dataset.pdfjs, onChange: refreshMissing, say });
    viewer.show(view).then(() => {
      if (doc.pdfUrl && role !== "viewer" && viewer.hasFields())
        note.textContent = "Fill in the highlighted fields on the pages below; those marked * are required.";
      refreshMissing();
    });
  }
  /** An upload's sign (or approve) waits for its required fields, and says which are missing. */
  function refreshMissing() {
    const missing = viewer ? viewer.missing() : [];
    $("missing").hidden = missing.length === 0;
    $("missing").textContent = missing.length ? "Before you sign, please fill in: " + missing.join(", ") + "." : "";
    $("sign-button").disabled = missing.length > 0;
    $("approve-button").disabled = missing.length > 0;
  }
  async function load() {
    const res = await fetch(api);
    if (res.status === 404) { show("gone"); emit("error"); return null; }
    if (res.status === 409) {
      const json = await res.json().catch(() => ({}));
      if (codeOf(json) === "not_your_turn") { notYourTurn(); return null; }
    }
    if (!res.ok) { say("This page could not be loaded (" + res.status + "); please try again."); emit("error"); return null; }
    const view = await res.json();
    role = view.signer.role;
    $("who").textContent = view.signer.name + " (" + role + ")";
    $("sha256").textContent = view.document.sha256 || "";
    const upload = Array.isArray(view.document.pages) || Array.isArray(view.fields);
    if (upload) showUpload(view);
    else showText(view.document);
    const approver = role === "approver";
    $("sign-heading").textContent = approver ? "3. Approve or reject" : "3. Sign or decline";
    $("sign-actions").hidden = approver;
    $("approve-actions").hidden = !approver;
    return view;
  }
  // A viewer is done once the document is visible to them: after the code, on an envelope that needs one.
  const viewerStep = (view) => (view.document.pdfUrl ? "viewed" : "identify");
  async function start() {
    const view = await load();
    if (!view) return;
    const next = { opened: "identify", authenticated: "consent", consented: "sign" }[view.signer.status] || "identify";
    show(role === "viewer" ? viewerStep(view) : next);
    emit("ready");
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
      const view = await load();
      if (view) {
        say(role === "viewer" ? "Identity confirmed." : "Identity confirmed. Please read the document before you agree.");
        show(role === "viewer" ? viewerStep(view) : "consent");
      }
    }
  });
  $("consent-button").addEventListener("click", async () => {
    if (!$("agree").checked) return say("Please agree to sign electronically first.");
    if (await post({ action: "consent" })) { say("Consent recorded."); show("sign"); }
  });
  const filled = () => (viewer ? { fields: viewer.values() } : {});
  $("sign-button").addEventListener("click", async () => {
    if (viewer) viewer.clearProblems();
    const done = await post({ action: "sign", challengeToken: challenge(), ...filled() });
    if (done) { show("signed"); say(done.completed ? "Signed. Every party has now signed." : "Signed. Thank you."); emit("signed"); }
  });
  $("decline-button").addEventListener("click", async () => {
    const reason = $("reason").value.trim();
    const done = await post({ action: "decline", reason: reason || undefined, challengeToken: challenge() });
    if (done) { show("declined"); say("You declined to sign."); emit("declined"); }
  });
  $("approve-button").addEventListener("click", async () => {
    if (viewer) viewer.clearProblems();
    const fields = viewer && viewer.hasFields() ? filled() : {};
    const done = await post({ action: "approve", challengeToken: challenge(), ...fields });
    if (done) { show("approved"); say("Approved. Thank you."); emit("signed"); }
  });
  $("reject-button").addEventListener("click", async () => {
    const reason = $("reject-reason").value.trim();
    if (!reason) { $("reject-reason").setAttribute("aria-invalid", "true"); $("reject-reason").focus(); return say("Please give a reason for rejecting."); }
    $("reject-reason").removeAttribute("aria-invalid");
    const done = await post({ action: "reject", reason, challengeToken: challenge() });
    if (done) { show("rejected"); say("You rejected the document."); emit("declined"); }
  });
  const begin = () => start().catch(() => { say("This page could not be loaded; please check your connection."); emit("error"); });
  // An in-person session (issue 45) first asks the host to hand the device to the signer.
  if ($("handover")) { show("handover"); $("handover-button").addEventListener("click", begin, { once: true }); }
  else begin();
})();
`;

export function signingPage(c: Context, session?: PageSession): Response {
  const nonce = newNonce();
  const siteKey = (readConfig(c.env).BOT_CHALLENGE_SITE_KEY ?? "").replace(/[^A-Za-z0-9_-]/g, "");
  const turnstile = siteKey !== "";
  // pdf.js (a module the page imports, and its module worker) from this origin's /static/pdfjs/<version>/ and nothing
  // else of it; inline scripts still need the nonce. The PDF itself is fetched from this origin (connect-src).
  const pdfjs = `${new URL(c.req.url).origin}${PDFJS_PATH}/`;
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}' ${pdfjs}${turnstile ? ` ${TURNSTILE}` : ""}`,
    `worker-src ${pdfjs}`,
    `style-src 'nonce-${nonce}'`,
    "connect-src 'self'",
    ...(turnstile ? [`frame-src ${TURNSTILE}`] : []),
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${session?.frameAncestors.length ? session.frameAncestors.join(" ") : "'none'"}`,
  ];
  const html = htmlDocument({
    title: "Sign a document",
    nonce,
    style: STYLE,
    head: turnstile ? `<script nonce="${nonce}" src="${TURNSTILE}/turnstile/v0/api.js" async defer></script>\n` : "",
    bodyAttributes: ` data-sitekey="${siteKey}" data-pdfjs="${PDFJS_PATH}"${session ? sessionAttributes(session) : ""}`,
    body: `<main id="main">
  <h1>Sign a document</h1>
  <p>Signing as <strong id="who">…</strong></p>
  <p id="status" role="status" aria-live="polite"></p>
  ${session ? sessionMarkup(session) : ""}
  <section id="read" aria-labelledby="document-title" hidden>
    <div id="document" tabindex="0"></div>
    <div id="pages"></div>
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
    <h2 tabindex="-1" id="sign-heading">3. Sign or decline</h2>
    ${turnstile ? `<div class="cf-turnstile" data-sitekey="${siteKey}"></div>` : ""}
    <p id="missing" hidden></p>
    <div id="sign-actions">
      <button type="button" id="sign-button" aria-describedby="missing">Sign the document</button>
      <p><label for="reason">Reason for declining (optional)</label><br><textarea id="reason" rows="3" maxlength="1000"></textarea></p>
      <button type="button" id="decline-button">Decline to sign</button>
    </div>
    <div id="approve-actions" hidden>
      <button type="button" id="approve-button" aria-describedby="missing">Approve</button>
      <p><label for="reject-reason">Reason for rejecting (required)</label><br><textarea id="reject-reason" rows="3" maxlength="1000" aria-required="true"></textarea></p>
      <button type="button" id="reject-button">Reject</button>
    </div>
  </section>
  <section class="step" id="signed" hidden><h2 tabindex="-1">Thank you</h2><p>Your signature has been recorded. You can close this page.</p></section>
  <section class="step" id="declined" hidden><h2 tabindex="-1">Declined</h2><p>You declined to sign. The sender has been told.</p></section>
  <section class="step" id="approved" hidden><h2 tabindex="-1">Thank you</h2><p>Your approval has been recorded. You can close this page.</p></section>
  <section class="step" id="rejected" hidden><h2 tabindex="-1">Rejected</h2><p>You rejected the document. The sender has been told.</p></section>
  <section class="step" id="viewed" hidden><h2 tabindex="-1">Nothing more is asked of you</h2><p>You were sent this document to read. You can close this page once you have read it.</p></section>
  <section class="step" id="waiting" hidden><h2 tabindex="-1">Not your turn yet</h2><p>It is not your turn yet: you will receive an e-mail when the people before you have signed.</p></section>
  <section class="step" id="gone" hidden><h2 tabindex="-1">This link is no longer valid</h2><p>It may have been used already, expired or been withdrawn. Ask the sender for a new one.</p></section>
</main>
${SIGNATURE_PAD_MARKUP}
${session ? `<script nonce="${nonce}">${SESSION_SCRIPT}</script>\n` : ""}<script nonce="${nonce}">${SCRIPT}</script>`,
  });
  const framable = (session?.frameAncestors.length ?? 0) > 0;
  return c.html(html, 200, pageHeaders(csp, { isolated: true, framable })) as unknown as Response;
}
