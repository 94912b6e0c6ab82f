import type { Context } from "hono";
import { escapeHtml, htmlDocument, newNonce, pageHeaders } from "../platform/html-page";

/**
 * The signing page opened by a signing session (issue 45; page.ts draws the rest). An embedded view's page may be
 * framed only by the origins the sender named (page.ts sends them as frame-ancestors), tells the first of them what
 * happened with postMessage (to that origin only, never `*`, and never a token) and goes to the sender's returnUrl
 * with `?event=signing_complete|declined|cancel` when the signer is done. An in-person session's page first asks the
 * host to hand the device to the signer, and at the end to take it back.
 */
export interface PageSession {
  /** The signing link the session opened: the page's script calls the public signing API with it. */
  token: string;
  kind: "embedded" | "in_person";
  returnUrl: string | null;
  frameAncestors: string[];
  signerName: string;
}

export const sessionAttributes = (s: PageSession) =>
  ` data-token="${escapeHtml(s.token)}" data-session="${s.kind}"` +
  (s.kind === "embedded"
    ? ` data-parent-origin="${escapeHtml(s.frameAncestors[0] ?? "")}" data-return-url="${escapeHtml(s.returnUrl ?? "")}"`
    : "");

export function sessionMarkup(s: PageSession): string {
  const name = escapeHtml(s.signerName);
  if (s.kind === "embedded") return `<p><button type="button" id="cancel-button">Cancel and go back</button></p>`;
  return `<section class="step" id="handover" hidden>
    <h2 tabindex="-1">Please hand this device to ${name}</h2>
    <p>${name} is asked to sign a document on this device. Once it is in their hands, they continue here.</p>
    <button type="button" id="handover-button">I am ${name}: continue</button>
  </section>`;
}

export const SESSION_SCRIPT = `
(() => {
  const data = document.body.dataset;
  if (data.session === "in_person") {
    document.addEventListener("signing-event", (e) => {
      if (e.detail !== "signed" && e.detail !== "declined") return;
      for (const p of document.querySelectorAll("#signed p, #declined p, #approved p, #rejected p"))
        p.textContent += " Please hand the device back to your host.";
    });
    return;
  }
  const parentOrigin = data.parentOrigin || "";
  const tell = (type) => {
    if (parentOrigin && window.parent !== window) window.parent.postMessage({ type }, parentOrigin);
  };
  const back = (event) => {
    if (!data.returnUrl) return;
    const url = new URL(data.returnUrl);
    url.searchParams.set("event", event);
    location.assign(url.href);
  };
  const ENDS = { signed: "signing_complete", declined: "declined" };
  document.addEventListener("signing-event", (e) => {
    tell(e.detail);
    // A moment to read the confirmation, then back to the sender's application.
    if (ENDS[e.detail]) setTimeout(() => back(ENDS[e.detail]), 1200);
  });
  document.getElementById("cancel-button").addEventListener("click", () => back("cancel"));
})();
`;

/** A used, expired or unknown session: 410, a page that says so and nothing else (no frame may show it). */
export function sessionGonePage(c: Context): Response {
  const nonce = newNonce();
  const html = htmlDocument({
    title: "This signing link has been used",
    nonce,
    style: ":root { font-family: system-ui, sans-serif; } body { max-width: 40rem; margin: 2rem auto; padding: 0 1rem; }",
    body: `<main><h1>This signing link is no longer valid</h1><p>It works once, for a few minutes, and it has been used or has expired. Ask for a new one.</p></main>`,
  });
  const csp = ["default-src 'none'", `style-src 'nonce-${nonce}'`, "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"];
  return c.html(html, 410, pageHeaders(csp)) as unknown as Response;
}
