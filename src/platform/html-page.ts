/**
 * The server-rendered pages (signing, consent, survey, OAuth sign-in and consent): one skeleton and one set of
 * security headers. Scripts and styles run only with the response's nonce; the page sends no referrer (its address
 * may hold a capability), is never cached, and asks for no powerful browser feature.
 */
export const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch]!);

/** A CSP nonce: 128 random bits, new for every response. */
export const newNonce = () => btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));

export interface PageParts {
  /** Plain text; escaped here. */
  title: string;
  nonce: string;
  style: string;
  /** Markup for the head after the style (a third-party script tag, say). */
  head?: string;
  /** Attributes of the body element, already escaped (` data-sitekey="…"`). */
  bodyAttributes?: string;
  body: string;
}

export const htmlDocument = (p: PageParts) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>${escapeHtml(p.title)}</title>
<style nonce="${p.nonce}">${p.style}</style>
${p.head ?? ""}</head>
<body${p.bodyAttributes ?? ""}>
${p.body}
</body>
</html>`;

/**
 * The headers of a page with `csp` (its directives). Unframeable (X-Frame-Options DENY; the CSP says
 * frame-ancestors) unless `framable`; `isolated` adds Cross-Origin-Opener-Policy same-origin, for pages that no
 * other window needs a handle on (not the OAuth pages: a client may have opened them as a popup).
 */
export function pageHeaders(csp: string[], { framable = false, isolated = false } = {}): Record<string, string> {
  return {
    "Content-Security-Policy": csp.join("; "),
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
    ...(framable ? {} : { "X-Frame-Options": "DENY" }),
    ...(isolated ? { "Cross-Origin-Opener-Policy": "same-origin" } : {}),
  };
}
