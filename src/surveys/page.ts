import type { Context } from "hono";
import { htmlDocument, newNonce, pageHeaders } from "../platform/html-page";

/**
 * The survey page (`{APP_URL}/survey/<token>`, the link of the survey e-mail): a static page whose script opens the
 * survey through the public API and renders its questions as a form (a fieldset per question, built with DOM calls:
 * the labels are the organization's text, never parsed as HTML). The API takes JSON only, so there is no path
 * without scripts. The token is a capability: it stays in the path, goes to the same-origin API only, the page is
 * never cached, sends no referrer and may not be framed. Scripts and styles run only with this response's nonce.
 */
const STYLE = `
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
  body { max-width: 40rem; margin: 2rem auto; padding: 0 1rem; }
  fieldset { border: 1px solid #8886; border-radius: .5rem; margin: 0 0 1.25rem; padding: .75rem 1rem; }
  legend { font-weight: 600; padding: 0 .25rem; }
  .help, .scale, .count { margin: .25rem 0; color: GrayText; font-size: .95em; }
  .help, #description { white-space: pre-line; }
  .choices { display: flex; flex-wrap: wrap; gap: .25rem 1rem; }
  .choices label { white-space: nowrap; padding: .25rem 0; }
  textarea { width: 100%; box-sizing: border-box; font: inherit; }
  .error { color: light-dark(#b91c1c, #fca5a5); font-weight: 600; margin: .25rem 0; }
  fieldset.invalid { border-color: light-dark(#b91c1c, #fca5a5); }
  button { font: inherit; padding: .5rem 1rem; cursor: pointer; }
  :is(button, input, textarea, a, h1, h2):focus-visible { outline: 3px solid #2563eb; outline-offset: 2px; }
  #summary { border: 2px solid light-dark(#b91c1c, #fca5a5); border-radius: .5rem; padding: .5rem 1rem; margin-bottom: 1rem; }
  #summary:empty { display: none; }
  #status { min-height: 1.5rem; font-weight: 600; }
`;

const SCRIPT = `
(() => {
  // A path that is not valid percent-encoding holds no token: the API then answers 404 and the page says gone.
  const token = (() => { try { return decodeURIComponent(location.pathname.split("/").pop() || ""); } catch { return "-"; } })();
  const api = "/api/public/survey/" + encodeURIComponent(token);
  const $ = (id) => document.getElementById(id);
  const form = $("survey"), button = $("send"), status = $("status"), summary = $("summary");
  const SCALES = { rating: [1, 5, "1 = poor", "5 = excellent"], nps: [0, 10, "0 = not at all likely", "10 = extremely likely"] };
  let questions = [];
  const say = (text) => { status.textContent = text; };
  const el = (tag, props = {}, ...children) => {
    const node = Object.assign(document.createElement(tag), props);
    node.append(...children);
    return node;
  };
  const show = (id) => {
    for (const section of document.querySelectorAll("main > section")) section.hidden = section.id !== id;
    const heading = $(id).querySelector("h1, h2");
    if (heading) heading.focus();
  };
  const describe = (node, ids) => (ids ? node.setAttribute("aria-describedby", ids) : node.removeAttribute("aria-describedby"));

  function choice(q, value, text, type) {
    const input = el("input", { type: "radio", name: "q-" + q.id, id: "q-" + q.id + "-" + value, value: String(value), required: q.required });
    input.dataset.type = type;
    return el("label", {}, input, " " + text);
  }

  function render(q) {
    const id = "q-" + q.id;
    const legend = el("legend", { id: id + "-label" }, q.label);
    if (q.required) legend.append(el("span", { className: "required" }, " (required)"));
    const box = el("fieldset", { id }, legend, el("p", { className: "error", id: id + "-error", hidden: true }));
    const notes = [];
    if (q.help) { box.append(el("p", { className: "help", id: id + "-help" }, q.help)); notes.push(id + "-help"); }
    if (q.type === "text") {
      const area = el("textarea", { id: id + "-input", name: id, rows: 5, maxLength: q.maxLength, required: q.required });
      const count = el("p", { className: "count", id: id + "-count" });
      const update = () => { count.textContent = area.value.length + " of " + q.maxLength + " characters"; };
      area.addEventListener("input", update);
      update();
      area.setAttribute("aria-labelledby", id + "-label");
      box.append(area, count);
      box.dataset.describes = [...notes, id + "-count"].join(" ");
    } else {
      const list = el("div", { className: "choices" });
      if (SCALES[q.type]) {
        const [min, max, low, high] = SCALES[q.type];
        for (let n = min; n <= max; n++) list.append(choice(q, n, String(n), "number"));
        box.append(el("p", { className: "scale", id: id + "-scale" }, low + ", " + high));
        notes.push(id + "-scale");
      } else if (q.type === "yes_no") {
        list.append(choice(q, "true", "Yes", "boolean"), choice(q, "false", "No", "boolean"));
      } else {
        q.options.forEach((option, i) => list.append(choice(q, i, option, "option")));
      }
      box.append(list);
      box.dataset.describes = notes.join(" ");
    }
    showError(box, null);
    return box;
  }

  // Where the aria-describedby of a question goes: the textarea, else the fieldset (the radio group).
  const target = (box) => box.querySelector("textarea") || box;
  function showError(box, message) {
    const error = box.querySelector(".error");
    error.textContent = message || "";
    error.hidden = !message;
    box.classList.toggle("invalid", !!message);
    for (const input of box.querySelectorAll("input, textarea")) {
      if (message) input.setAttribute("aria-invalid", "true");
      else input.removeAttribute("aria-invalid");
    }
    describe(target(box), [message ? error.id : "", box.dataset.describes].filter(Boolean).join(" "));
  }

  function answers() {
    const out = {};
    for (const q of questions) {
      if (q.type === "text") {
        const value = $("q-" + q.id + "-input").value;
        if (value.trim() !== "") out[q.id] = value;
        continue;
      }
      const checked = form.querySelector('input[name="q-' + q.id + '"]:checked');
      if (!checked) continue;
      const type = checked.dataset.type;
      out[q.id] = type === "number" ? Number(checked.value) : type === "boolean" ? checked.value === "true" : q.options[Number(checked.value)];
    }
    return out;
  }

  const MESSAGES = { Required: "Please answer this question." };
  function showIssues(issues) {
    const byQuestion = new Map();
    for (const issue of issues) {
      const qid = issue.path && issue.path[0] === "answers" ? String(issue.path[1]) : "";
      if (!byQuestion.has(qid)) byQuestion.set(qid, MESSAGES[issue.message] || issue.message);
    }
    const list = el("ul");
    let first = null;
    for (const q of questions) {
      if (!byQuestion.has(q.id)) continue;
      const box = $("q-" + q.id);
      const message = byQuestion.get(q.id);
      showError(box, message);
      const field = box.querySelector("textarea, input");
      first = first || field;
      const link = el("a", { href: "#q-" + q.id }, q.label + " – " + message);
      link.addEventListener("click", (e) => { e.preventDefault(); field.focus(); });
      list.append(el("li", {}, link));
      byQuestion.delete(q.id);
    }
    for (const message of byQuestion.values()) list.append(el("li", {}, message));
    summary.replaceChildren(el("p", {}, "Please check your answers:"), list);
    (first || summary).focus();
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    button.disabled = true;
    summary.replaceChildren();
    for (const box of form.querySelectorAll("fieldset")) showError(box, null);
    say("Sending your answers…");
    try {
      const res = await fetch(api, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ answers: answers() }) });
      const body = await res.json().catch(() => ({}));
      if (res.ok) { say(""); return show("thanks"); }
      if (res.status === 404) { say(""); return show("gone"); }
      if (res.status === 400 && Array.isArray(body.issues)) { say(""); showIssues(body.issues); }
      else if (res.status === 429) say("Too many attempts; please wait a minute and try again.");
      else if (res.status === 413) say("Your answers are too long to send; please shorten them.");
      else say("Your answers could not be sent (" + res.status + "); please try again.");
    } catch {
      say("Your answers could not be sent; please check your connection and try again.");
    }
    button.disabled = false;
  });

  async function start() {
    say("Loading the survey…");
    const res = await fetch(api);
    if (res.status === 404) { say(""); return show("gone"); }
    if (!res.ok) return say(res.status === 429 ? "Too many attempts; please wait a minute and reload the page." : "The survey could not be loaded (" + res.status + "); please reload the page.");
    const { survey, branding } = await res.json();
    questions = survey.questions;
    document.title = survey.title;
    $("title").textContent = survey.title;
    $("from").textContent = "From " + branding.brokerage;
    $("description").textContent = survey.description || "";
    $("questions").replaceChildren(...questions.map(render));
    say("");
    show("form");
  }
  start().catch(() => say("The survey could not be loaded; please check your connection and reload the page."));
})();
`;

export function surveyPage(c: Context): Response {
  const nonce = newNonce();
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "connect-src 'self'",
    "img-src data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ];
  const html = htmlDocument({
    title: "Survey",
    nonce,
    style: STYLE,
    body: `<main>
  <noscript><p>This survey needs JavaScript: please turn it on, or open the link in another browser.</p></noscript>
  <p id="status" role="status" aria-live="polite"></p>
  <section id="form" hidden>
    <h1 id="title" tabindex="-1"></h1>
    <p id="from"></p>
    <p id="description"></p>
    <div id="summary" role="alert" tabindex="-1"></div>
    <form id="survey" novalidate>
      <div id="questions"></div>
      <button type="submit" id="send">Send my answers</button>
    </form>
  </section>
  <section id="thanks" hidden><h1 tabindex="-1">Thank you</h1><p>Your answers have been recorded. You can close this page.</p></section>
  <section id="gone" hidden><h1 tabindex="-1">This survey is no longer available</h1><p>It may have been answered already, have expired or been withdrawn.</p></section>
</main>
<script nonce="${nonce}">${SCRIPT}</script>`,
  });
  return c.html(html, 200, pageHeaders(csp, { isolated: true })) as unknown as Response;
}
