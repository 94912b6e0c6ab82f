/**
 * The signing page's viewer of an uploaded document (issue 44 part 4): the PDF's pages drawn by pdf.js into canvases as
 * wide as the screen, and this signer's fields laid over them as inputs at their percent boxes (of the page as
 * displayed, origin top-left; pdf.js draws pages with their /Rotate applied, so the boxes map straight onto the
 * canvas). Browser code, inlined by page.ts into its nonce'd script: `uploadViewer` is called by the page's flow.
 *
 * Pages are drawn when they come near the viewport and dropped when far from it, so a 100-page document does not hold
 * a hundred canvases in a phone's memory. Positions are set through the CSSOM (element.style), which the page's CSP
 * allows; style attributes in markup would need 'unsafe-inline'.
 */

export const VIEWER_STYLE = `
  #pages { display: grid; gap: 1rem; margin: 1rem 0; }
  .page { position: relative; width: 100%; background: #fff; color-scheme: light; color: #111;
    box-shadow: 0 1px 4px #0005; overflow: clip; }
  .page canvas { position: absolute; inset: 0; width: 100%; height: 100%; }
  .field { position: absolute; container-type: size; display: flex; align-items: stretch; background: #fde68acc;
    outline: 1px solid #b45309; }
  .field.readonly { background: #e5e7ebcc; outline-color: #6b7280; }
  .field.required::after { content: "*"; position: absolute; top: 0; right: 2px; color: #b91c1c; font: 700 12px/1 system-ui;
    pointer-events: none; }
  .field.invalid { outline: 2px solid #b91c1c; }
  .field input, .field select, .field button { flex: 1; min-width: 0; margin: 0; padding: 0 2px; border: 0; background: transparent;
    color: #111; font: inherit; font-size: clamp(8px, 62cqh, 18px); }
  .field input[type="checkbox"] { width: 100%; height: 100%; accent-color: #1d4ed8; }
  .field [role="radiogroup"] { display: flex; flex-wrap: wrap; align-items: center; gap: 0 .5em; overflow: auto;
    font-size: clamp(8px, 40cqh, 14px); }
  .field [role="radiogroup"] label { display: inline-flex; align-items: center; gap: .2em; white-space: nowrap; }
  .field [role="radiogroup"] input { flex: none; width: 1em; height: 1em; }
  .field button.sig { cursor: pointer; display: flex; align-items: center; justify-content: center; overflow: hidden;
    white-space: nowrap; font-size: clamp(8px, min(62cqh, 14cqw), 18px); }
  .field button.sig img { max-width: 100%; max-height: 100%; }
  .field :focus-visible, .field [role="radiogroup"] input:focus-visible { outline: 3px solid #2563eb; outline-offset: 1px; }
  .script { font-family: "Segoe Script", "Brush Script MT", "Snell Roundhand", cursive; font-style: italic; }
  .field-error { position: absolute; margin: 0; padding: .1rem .3rem; background: #fef2f2; color: #991b1b; font-size: .75rem;
    border: 1px solid #b91c1c; border-radius: .25rem; z-index: 1; }
  #missing { color: #991b1b; }
`;

/** Inlined inside page.ts's script (which defines `$`): defines `uploadViewer`. */
export const VIEWER_SCRIPT = `
  const TYPE_NAMES = { signature: "Signature", initials: "Initials", name: "Name", email: "E-mail", date: "Date", text: "Text",
    number: "Number", checkbox: "Checkbox", radio: "Choice", dropdown: "Choice" };

  function uploadViewer({ pdfjsBase, onChange, say }) {
    const pagesBox = $("pages");
    const entries = new Map();
    const pages = [];
    let signer = { name: "", email: null };
    let pdf = null;
    let laidOut = false;

    const labelOf = (f) => (f.name || TYPE_NAMES[f.type] || f.type) + " (page " + f.page + ")";
    const el = (tag, props) => Object.assign(document.createElement(tag), props || {});

    // pdf.js, from our own static assets, loaded the first time a document is shown.
    let library = null;
    const loadLibrary = () => (library ??= import(pdfjsBase + "/pdf.min.mjs").then((lib) => {
      lib.GlobalWorkerOptions.workerSrc = pdfjsBase + "/pdf.worker.min.mjs";
      return lib;
    }));

    function layOut(sizes, fields) {
      laidOut = true;
      pagesBox.replaceChildren();
      const byPage = new Map();
      for (const f of fields) byPage.set(f.page, [...(byPage.get(f.page) || []), f]);
      sizes.forEach((size, i) => {
        const n = i + 1;
        const box = el("div", { className: "page" });
        box.style.aspectRatio = size.width + " / " + size.height;
        box.setAttribute("role", "group");
        box.setAttribute("aria-label", "Page " + n + " of " + sizes.length);
        const canvas = el("canvas");
        canvas.setAttribute("role", "img");
        canvas.setAttribute("aria-label", "Page " + n + " of the document");
        box.append(canvas);
        // Top to bottom, then left to right: the order a reader and the Tab key go through them.
        const mine = (byPage.get(n) || []).sort((a, b) => a.y - b.y || a.x - b.x);
        for (const f of mine) box.append(fieldBox(f));
        pagesBox.append(box);
        pages.push({ n, box, canvas, width: 0, task: null, near: false });
      });
      for (const f of fields) if (f.page < 1 || f.page > sizes.length) console.warn("field " + f.id + " is on no page");
    }

    function fieldBox(f) {
      const box = el("div", { className: "field field-" + f.type });
      box.style.left = f.x + "%";
      box.style.top = f.y + "%";
      box.style.width = f.width + "%";
      box.style.height = f.height + "%";
      const label = labelOf(f);
      const entry = { field: f, label, box, focus: null, get: () => undefined };
      const readOnly = f.readOnly || f.type === "name" || f.type === "email";
      if (readOnly) box.classList.add("readonly");
      if (f.required && !readOnly) box.classList.add("required");
      const control = (input) => {
        input.setAttribute("aria-label", label);
        if (f.required && !readOnly) input.setAttribute("aria-required", "true");
        if (readOnly) input.disabled = true;
        input.addEventListener("input", changed);
        input.addEventListener("change", changed);
        entry.focus = input;
        box.append(input);
        return input;
      };
      const prefilled = f.value === null || f.value === undefined ? "" : String(f.value);
      if (f.type === "name" || f.type === "email") {
        // Filled by the server with the signer's own, never sent: shown as text the signer can read, not change.
        const input = control(el("input", { type: "text", readOnly: true }));
        input.disabled = false;
        input.value = f.type === "name" ? signer.name : signer.email || prefilled;
        if (!input.value) input.placeholder = "Your e-mail address";
      } else if (f.type === "text" || f.type === "number" || f.type === "date") {
        const input = control(el("input", { type: f.type, value: prefilled }));
        const v = f.validation || {};
        if (f.type === "text" && v.maxLength) input.maxLength = v.maxLength;
        if (f.type === "number") {
          input.step = "any";
          input.inputMode = "decimal";
          if (v.min !== undefined) input.min = String(v.min);
          if (v.max !== undefined) input.max = String(v.max);
        }
        entry.get = () => {
          if (f.type === "number") return input.value === "" ? undefined : Number(input.value);
          return input.value.trim() === "" ? undefined : input.value;
        };
      } else if (f.type === "checkbox") {
        const input = control(el("input", { type: "checkbox", checked: f.value === true }));
        entry.get = () => input.checked;
      } else if (f.type === "dropdown") {
        const select = control(el("select"));
        select.append(el("option", { value: "", textContent: "Choose…" }));
        for (const o of f.options || []) select.append(el("option", { value: o, textContent: o }));
        select.value = prefilled;
        entry.get = () => select.value || undefined;
      } else if (f.type === "radio") {
        const group = el("div");
        group.setAttribute("role", "radiogroup");
        group.setAttribute("aria-label", label);
        if (f.required && !readOnly) group.setAttribute("aria-required", "true");
        const radios = (f.options || []).map((o) => {
          const input = el("input", { type: "radio", name: "field-" + f.id, value: o, checked: o === prefilled, disabled: readOnly });
          input.addEventListener("change", changed);
          const option = el("label");
          option.append(input, o);
          group.append(option);
          return input;
        });
        box.append(group);
        entry.focus = radios[0] || null;
        entry.group = group;
        entry.get = () => radios.find((r) => r.checked)?.value;
      } else if (f.type === "signature" || f.type === "initials") {
        const button = el("button", { type: "button", className: "sig", disabled: readOnly });
        button.setAttribute("aria-haspopup", "dialog");
        entry.focus = button;
        entry.value = undefined;
        entry.show = () => {
          const done = entry.value !== undefined;
          button.replaceChildren();
          if (!done) button.textContent = f.type === "signature" ? "Sign here" : "Initial here";
          else if (entry.value === "adopted")
            button.append(el("span", { className: "script", textContent: f.type === "signature" ? signer.name : initialsOf(signer.name) }));
          else button.append(el("img", { src: entry.value, alt: "" }));
          button.setAttribute("aria-label", label + (f.required ? ", required" : "") + (done ? ": signed, press to change" : ""));
        };
        entry.show();
        button.addEventListener("click", () => sign(entry));
        box.append(button);
        entry.get = () => entry.value;
      }
      entries.set(f.id, entry);
      return box;
    }

    function changed() {
      onChange();
    }

    // The signature panel (page-signature-pad.ts): adopt the typed name (or its initials), or draw.
    const pad = signaturePad();
    async function sign(entry) {
      const value = await pad.open(entry.field.type, signer.name);
      if (value !== undefined) {
        entry.value = value;
        entry.show();
        onChange();
      }
      entry.focus.focus();
    }

    // Drawing the pages: each when it comes near the viewport, again when the page box changed width, dropped when far.
    async function paint(page) {
      const width = page.box.clientWidth;
      if (!pdf || !page.near || width === 0 || page.width === width) return;
      page.width = width;
      page.task?.cancel();
      const p = await pdf.getPage(page.n);
      const base = p.getViewport({ scale: 1 });
      let scale = (width / base.width) * Math.min(window.devicePixelRatio || 1, 2);
      // A canvas of more than ~16 million pixels fails on phones: draw coarser instead.
      scale = Math.min(scale, Math.sqrt(16e6 / (base.width * base.height)));
      const viewport = p.getViewport({ scale });
      const canvas = el("canvas", { width: Math.floor(viewport.width), height: Math.floor(viewport.height) });
      canvas.setAttribute("role", "img");
      canvas.setAttribute("aria-label", "Page " + page.n + " of the document");
      const task = p.render({ canvas, canvasContext: canvas.getContext("2d"), viewport });
      page.task = task;
      try {
        await task.promise;
        if (page.task === task) {
          page.canvas.replaceWith(canvas);
          page.canvas = canvas;
        }
      } catch (err) {
        if (err?.name !== "RenderingCancelledException") throw err;
      } finally {
        if (page.task === task) page.task = null;
      }
    }
    function drop(page) {
      page.task?.cancel();
      page.task = null;
      page.width = 0;
      page.canvas.width = 0;
      page.canvas.height = 0;
    }
    const failed = () => say("The document could not be drawn here: please open it as a PDF with the link below the pages.");
    const nearness = new IntersectionObserver(
      (seen) => {
        for (const s of seen) {
          const page = pages.find((p) => p.box === s.target);
          if (!page) continue;
          page.near = s.isIntersecting;
          if (page.near) paint(page).catch(failed);
          else drop(page);
        }
      },
      { rootMargin: "150% 0px" },
    );
    new ResizeObserver(() => {
      for (const page of pages) if (page.near) paint(page).catch(failed);
    }).observe(pagesBox);

    return {
      /** Shows the document of \`view\` (an uploaded one): its fields at once, its pages once pdf.js has read the PDF. */
      async show(view) {
        signer = { name: view.signer.name, email: view.signer.email || null };
        const sizes = view.document.pages || [];
        if (!laidOut && sizes.length) layOut(sizes, view.fields || []);
        if (pdf || !view.document.pdfUrl) return;
        try {
          const [lib, res] = await Promise.all([loadLibrary(), fetch(view.document.pdfUrl)]);
          if (!res.ok) throw new Error("the PDF answered " + res.status);
          const data = new Uint8Array(await res.arrayBuffer());
          // No eval of font programs: pdf.js then draws glyphs by interpreting their paths.
          pdf = await lib.getDocument({ data, isEvalSupported: false, enableXfa: false }).promise;
          if (!laidOut) {
            const found = [];
            for (let n = 1; n <= pdf.numPages; n++) found.push((await pdf.getPage(n)).getViewport({ scale: 1 }));
            layOut(found, view.fields || []);
          }
          for (const page of pages) nearness.observe(page.box);
        } catch (err) {
          console.warn(err);
          failed();
        }
      },
      /** The required fields still empty, by label (a required checkbox must be ticked). */
      missing() {
        const out = [];
        for (const e of entries.values()) {
          const f = e.field;
          if (!f.required || f.readOnly || f.type === "name" || f.type === "email") continue;
          const v = e.get();
          if (v === undefined || v === false || (typeof v === "number" && Number.isNaN(v))) out.push(e.label);
        }
        return out;
      },
      /** What the sign action sends: every field the signer can fill and did (a checkbox always), by id. */
      values() {
        const out = {};
        for (const [id, e] of entries) {
          const f = e.field;
          if (f.readOnly || f.type === "name" || f.type === "email") continue;
          const v = e.get();
          if (v !== undefined) out[id] = v;
        }
        return out;
      },
      /** Marks the fields a 422 names (\`fields.<id>\`) with its message beside each; answers the lines it placed. */
      showProblems(details) {
        this.clearProblems();
        const lines = [];
        let first = null;
        for (const d of details) {
          const id = String(d.field || "").replace(/^fields\\./, "");
          const e = entries.get(id);
          if (!e) continue;
          const f = e.field;
          const note = el("p", { className: "field-error", id: "error-" + id, textContent: d.message || "Please check this field." });
          note.style.left = f.x + "%";
          note.style.maxWidth = 100 - f.x + "%";
          if (f.y + f.height > 90) note.style.bottom = 100 - f.y + "%";
          else note.style.top = f.y + f.height + "%";
          e.box.classList.add("invalid");
          e.box.after(note);
          const target = e.group || e.focus;
          if (target) {
            target.setAttribute("aria-invalid", "true");
            target.setAttribute("aria-describedby", note.id);
          }
          first ??= e.focus;
          lines.push(e.label + ": " + note.textContent);
        }
        first?.focus();
        return lines;
      },
      clearProblems() {
        for (const note of pagesBox.querySelectorAll(".field-error")) note.remove();
        for (const e of entries.values()) {
          e.box.classList.remove("invalid");
          for (const t of [e.group, e.focus]) {
            t?.removeAttribute("aria-invalid");
            t?.removeAttribute("aria-describedby");
          }
        }
      },
      hasFields: () => entries.size > 0,
    };
  }
`;
