/**
 * The embeddable reviews widget, served as `/widget/reviews.js`: a dependency-free script defining
 * `<reviews-widget agent="slug">`. It renders into a shadow root (no style leaks in or out), fetches the agent's public
 * feed from the origin that served the script, builds every node with textContent (review text is never parsed as
 * HTML), puts the schema.org JSON-LD into the page for search engines, and shows a plain fallback when the feed is
 * unreachable. On any host page: styled through a constructable stylesheet, which a host's CSP
 * (`style-src 'self'`) does not block as it does an inline <style>; one fetch per element and agent, whether the script
 * comes before or after the element; an answer older than the element's latest request is dropped; and the JSON-LD
 * leaves the page as soon as a new agent is asked for, so a slug that is not found leaves no other agent's data behind.
 */
export const WIDGET_SCRIPT = `(() => {
  "use strict";
  const script = document.currentScript;
  const apiOrigin = new URL(script && script.src ? script.src : location.href).origin;
  const STYLE = [
    ":host { display: block; font: 15px/1.5 system-ui, sans-serif; color: #1f2937; }",
    ".summary { display: flex; gap: .5rem; align-items: baseline; margin-bottom: .75rem; }",
    ".stars { color: #d97706; letter-spacing: .1em; }",
    ".average { font-weight: 700; font-size: 1.25rem; }",
    "ol { list-style: none; margin: 0; padding: 0; }",
    "li { border-top: 1px solid #e5e7eb; padding: .75rem 0; }",
    "h3 { font-size: 1rem; margin: .25rem 0; }",
    "p { margin: .25rem 0; }",
    ".author { color: #4b5563; font-size: .875rem; }",
    ".fallback { color: #4b5563; }",
  ].join("\\n");

  // One stylesheet for every widget of the page; an old browser without constructable sheets gets a <style>.
  let sheet = null;
  try { sheet = new CSSStyleSheet(); sheet.replaceSync(STYLE); } catch (err) { sheet = null; }
  function styled(root, box) {
    if (sheet && "adoptedStyleSheets" in root) { root.adoptedStyleSheets = [sheet]; root.replaceChildren(box); return; }
    const style = document.createElement("style");
    style.textContent = STYLE;
    root.replaceChildren(style, box);
  }

  function stars(rating) {
    const el = document.createElement("span");
    el.className = "stars";
    el.setAttribute("role", "img");
    el.setAttribute("aria-label", rating + " out of 5 stars");
    const full = Math.round(rating);
    el.textContent = "\\u2605".repeat(full) + "\\u2606".repeat(5 - full);
    return el;
  }
  function text(tag, value, className) {
    const el = document.createElement(tag);
    if (className) el.className = className;
    el.textContent = value;
    return el;
  }

  class ReviewsWidget extends HTMLElement {
    static get observedAttributes() { return ["agent"]; }
    // An element already in the page when the script runs gets attributeChangedCallback, then connectedCallback, on
    // upgrade: both ask for the agent, and only a new agent is fetched.
    connectedCallback() { this.request(); }
    attributeChangedCallback() { if (this.isConnected) this.request(); }
    request() {
      const slug = this.getAttribute("agent") || "";
      if (this.requested === slug) return;
      this.requested = slug;
      this.load(slug);
    }
    clearJsonLd() {
      for (const ld of this.querySelectorAll('script[type="application/ld+json"]')) ld.remove();
    }
    async load(slug) {
      const ticket = (this.ticket = (this.ticket || 0) + 1);
      this.clearJsonLd();
      const root = this.shadowRoot || this.attachShadow({ mode: "open" });
      const box = document.createElement("section");
      box.setAttribute("aria-label", "Client reviews");
      box.setAttribute("aria-busy", "true");
      box.append(text("p", "Loading reviews\\u2026", "fallback"));
      styled(root, box);
      let feed = null;
      try {
        const res = await fetch(apiOrigin + "/api/public/reviews/" + encodeURIComponent(slug), { headers: { accept: "application/json" } });
        if (!res.ok) throw new Error(String(res.status));
        feed = await res.json();
      } catch (err) {
        feed = null;
      }
      // A newer request for this element has started: its answer, not this one, is shown.
      if (ticket !== this.ticket) return;
      if (feed) this.render(box, feed);
      else box.replaceChildren(text("p", "Reviews are unavailable right now.", "fallback"));
      box.removeAttribute("aria-busy");
    }
    render(box, feed) {
      const parts = [];
      const agg = feed.aggregate || {};
      if (agg.totalReviews > 0) {
        const summary = document.createElement("p");
        summary.className = "summary";
        summary.append(text("span", String(agg.averageRating), "average"), stars(agg.averageRating), text("span", agg.totalReviews + (agg.totalReviews === 1 ? " review" : " reviews")));
        parts.push(summary);
      }
      const list = document.createElement("ol");
      for (const r of feed.reviews || []) {
        const item = document.createElement("li");
        item.append(stars(r.rating));
        if (r.headline) item.append(text("h3", r.headline));
        item.append(text("p", r.body));
        const who = [r.author && r.author.name, r.author && r.author.location].filter(Boolean).join(", ");
        // Nobody verified an anonymous author: they are a client, as the agent recorded them.
        item.append(text("p", who || "Client", "author"));
        list.append(item);
      }
      if (!list.children.length) parts.push(text("p", "No reviews yet.", "fallback"));
      else parts.push(list);
      box.replaceChildren(...parts);
      // JSON-LD goes into the page itself: search engines read it there, not inside a shadow root.
      this.clearJsonLd();
      if (feed.jsonLd) {
        const ld = document.createElement("script");
        ld.type = "application/ld+json";
        ld.textContent = JSON.stringify(feed.jsonLd);
        this.append(ld);
      }
    }
  }
  if (!customElements.get("reviews-widget")) customElements.define("reviews-widget", ReviewsWidget);
})();
`;
