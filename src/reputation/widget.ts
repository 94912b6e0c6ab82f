/**
 * The embeddable reviews widget, served as `/widget/reviews.js`: a dependency-free script defining
 * `<reviews-widget agent="slug">`. It renders into a shadow root (no style leaks in or out), fetches the agent's public
 * feed from the origin that served the script, builds every node with textContent (review text is never parsed as
 * HTML), puts the schema.org JSON-LD into the page for search engines, and shows a plain fallback when the feed is
 * unreachable.
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
    connectedCallback() { this.load(); }
    attributeChangedCallback() { if (this.isConnected) this.load(); }
    async load() {
      const root = this.shadowRoot || this.attachShadow({ mode: "open" });
      const style = document.createElement("style");
      style.textContent = STYLE;
      const box = document.createElement("section");
      box.setAttribute("aria-label", "Client reviews");
      box.setAttribute("aria-busy", "true");
      box.append(text("p", "Loading reviews\\u2026", "fallback"));
      root.replaceChildren(style, box);
      const slug = this.getAttribute("agent") || "";
      try {
        const res = await fetch(apiOrigin + "/api/public/reviews/" + encodeURIComponent(slug), { headers: { accept: "application/json" } });
        if (!res.ok) throw new Error(String(res.status));
        this.render(box, await res.json());
      } catch (err) {
        box.replaceChildren(text("p", "Reviews are unavailable right now.", "fallback"));
      } finally {
        box.removeAttribute("aria-busy");
      }
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
        item.append(text("p", who || "Verified client", "author"));
        list.append(item);
      }
      if (!list.children.length) parts.push(text("p", "No reviews yet.", "fallback"));
      else parts.push(list);
      box.replaceChildren(...parts);
      // JSON-LD goes into the page itself: search engines read it there, not inside a shadow root.
      if (feed.jsonLd) {
        let ld = this.querySelector('script[type="application/ld+json"]');
        if (!ld) { ld = document.createElement("script"); ld.type = "application/ld+json"; this.append(ld); }
        ld.textContent = JSON.stringify(feed.jsonLd);
      }
    }
  }
  if (!customElements.get("reviews-widget")) customElements.define("reviews-widget", ReviewsWidget);
})();
`;
