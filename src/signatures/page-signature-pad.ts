/**
 * The signing page's signature panel (issue 44 part 4): a modal dialog where the signer adopts their typed name (or,
 * for initials, its initials) or draws with a finger or a mouse. A drawing is sent as a PNG data URL, cropped to its
 * strokes and made smaller until it is within the API's 100 KB. Browser code, inlined by page.ts into its nonce'd
 * script before the viewer (page-viewer.ts), which calls `signaturePad`. Typing is the keyboard's way to sign: the
 * drawing pad is for pointers only.
 */

export const SIGNATURE_PAD_STYLE = `
  #sig-dialog { width: min(32rem, calc(100vw - 2rem)); border: 1px solid #8886; border-radius: .5rem; }
  #sig-dialog::backdrop { background: #0006; }
  #sig-dialog h2 { margin-top: 0; font-size: 1.15rem; }
  #sig-adopted { font-size: 1.75rem; margin: .25rem 0; overflow-wrap: anywhere; }
  #sig-pad { display: block; width: 100%; height: 10rem; background: #fff; border: 1px dashed #888; border-radius: .25rem;
    touch-action: none; cursor: crosshair; }
`;

export const SIGNATURE_PAD_MARKUP = `<dialog id="sig-dialog" aria-labelledby="sig-title">
  <h2 id="sig-title">Your signature</h2>
  <p>Adopt your name as typed, or draw with your finger or mouse.</p>
  <p class="script" id="sig-adopted"></p>
  <button type="button" id="sig-adopt">Use my name</button>
  <button type="button" id="sig-again" hidden>Use the same as before</button>
  <p id="sig-pad-label">Or draw here:</p>
  <canvas id="sig-pad" role="img" aria-labelledby="sig-pad-label"></canvas>
  <p id="sig-note" role="status"></p>
  <button type="button" id="sig-use" disabled>Use the drawing</button>
  <button type="button" id="sig-clear">Clear</button>
  <button type="button" id="sig-cancel">Cancel</button>
</dialog>`;

/** Inlined inside page.ts's script (which defines `$`): defines `initialsOf` and `signaturePad`. */
export const SIGNATURE_PAD_SCRIPT = `
  const initialsOf = (name) => name.trim().split(/\\s+/).map((w) => Array.from(w)[0] || "").join("").toUpperCase();

  function signaturePad() {
    /** The longest data URL a drawing may be (the API takes a PNG data URL up to 100 KB). */
    const MAX_DRAWING = 100000;
    const dialog = $("sig-dialog");
    const pad = $("sig-pad");
    const last = {};
    let strokes = [];
    let current = null;
    let kind = "signature";
    let settle = null;

    function drawStrokes(ctx, scale, dx, dy) {
      ctx.clearRect(0, 0, ctx.canvas.width, ctx.canvas.height);
      ctx.lineWidth = 2.5 * scale;
      ctx.lineCap = "round";
      ctx.lineJoin = "round";
      ctx.strokeStyle = "#111";
      for (const s of strokes) {
        ctx.beginPath();
        s.forEach(([x, y], i) => (i ? ctx.lineTo((x - dx) * scale, (y - dy) * scale) : ctx.moveTo((x - dx) * scale, (y - dy) * scale)));
        // A tap leaves a dot.
        if (s.length === 1) ctx.lineTo((s[0][0] - dx) * scale + 0.1, (s[0][1] - dy) * scale);
        ctx.stroke();
      }
    }
    const redraw = () => drawStrokes(pad.getContext("2d"), window.devicePixelRatio || 1, 0, 0);
    function reset() {
      strokes = [];
      const ratio = window.devicePixelRatio || 1;
      pad.width = Math.round(pad.clientWidth * ratio);
      pad.height = Math.round(pad.clientHeight * ratio);
      redraw();
      $("sig-use").disabled = true;
    }
    const point = (e) => {
      const r = pad.getBoundingClientRect();
      return [e.clientX - r.left, e.clientY - r.top];
    };
    pad.addEventListener("pointerdown", (e) => {
      e.preventDefault();
      pad.setPointerCapture(e.pointerId);
      current = [point(e)];
      strokes.push(current);
      redraw();
    });
    pad.addEventListener("pointermove", (e) => {
      if (!current) return;
      current.push(point(e));
      redraw();
    });
    const lift = () => {
      current = null;
      $("sig-use").disabled = strokes.length === 0;
    };
    pad.addEventListener("pointerup", lift);
    pad.addEventListener("pointercancel", lift);

    /** The drawing cropped to its strokes as a PNG data URL, smaller each try until within MAX_DRAWING; null if never. */
    function drawing() {
      const points = strokes.flat();
      const margin = 4;
      const x0 = Math.min(...points.map((p) => p[0])) - margin;
      const y0 = Math.min(...points.map((p) => p[1])) - margin;
      const w = Math.max(...points.map((p) => p[0])) + margin - x0;
      const h = Math.max(...points.map((p) => p[1])) + margin - y0;
      let scale = Math.min(2, 800 / w);
      for (let i = 0; i < 12; i++) {
        const out = Object.assign(document.createElement("canvas"), {
          width: Math.max(1, Math.ceil(w * scale)),
          height: Math.max(1, Math.ceil(h * scale)),
        });
        drawStrokes(out.getContext("2d"), scale, x0, y0);
        const url = out.toDataURL("image/png");
        if (url.length <= MAX_DRAWING) return url;
        scale *= 0.7;
      }
      return null;
    }
    function finish(value) {
      if (value !== undefined) last[kind] = value;
      const done = settle;
      settle = null;
      if (dialog.open) dialog.close();
      done?.(value);
    }
    $("sig-adopt").addEventListener("click", () => finish("adopted"));
    $("sig-again").addEventListener("click", () => finish(last[kind]));
    $("sig-use").addEventListener("click", () => {
      const url = strokes.length ? drawing() : null;
      if (url) finish(url);
      else $("sig-note").textContent = "This drawing is too large to send; please clear it and draw again.";
    });
    $("sig-clear").addEventListener("click", reset);
    $("sig-cancel").addEventListener("click", () => finish(undefined));
    // Escape closes the dialog: the same as Cancel.
    dialog.addEventListener("close", () => finish(undefined));

    return {
      /** Asks for a signature or initials of \`name\`: "adopted", a PNG data URL, or undefined when cancelled. */
      open(type, name) {
        kind = type;
        const initials = type === "initials";
        $("sig-title").textContent = initials ? "Your initials" : "Your signature";
        $("sig-adopted").textContent = initials ? initialsOf(name) : name;
        $("sig-adopt").textContent = initials ? "Use my initials" : "Use my name";
        $("sig-again").hidden = last[type] === undefined;
        $("sig-note").textContent = "";
        dialog.showModal();
        reset();
        $("sig-adopt").focus();
        return new Promise((resolve) => (settle = resolve));
      },
    };
  }
`;
