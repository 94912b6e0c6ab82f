import { Hono } from "hono";
import { version as PDFJS_VERSION } from "pdfjs-dist/package.json";
import type { AppBindings } from "../platform/context";

/**
 * pdf.js's browser build for the signing page's viewer (issue 44 part 4), served from the Worker's own static assets
 * (assets/pdfjs, copied from pdfjs-dist as published): no CDN sees a signer's page. The assets are private
 * (wrangler.toml run_worker_first), so this route hands out exactly these two files and nothing else of the directory
 * (the fonts stay private). The version is in the path: a new pdf.js is a new URL, so each can be cached for good.
 */
export const PDFJS_PATH = `/static/pdfjs/${PDFJS_VERSION}`;
const FILES = new Set(["pdf.min.mjs", "pdf.worker.min.mjs"]);

export const pdfjsRoutes = new Hono<AppBindings>().get("/static/pdfjs/:version/:file", async (c) => {
  const { version, file } = c.req.param();
  if (version !== PDFJS_VERSION || !FILES.has(file)) return c.notFound();
  if (!c.env.ASSETS) throw new Error("The ASSETS binding (assets/pdfjs) is missing: the signing page cannot show PDFs");
  // The host is never looked up: an assets binding answers any URL from the assets directory by its path.
  const res = await c.env.ASSETS.fetch(`https://assets.invalid/pdfjs/${file}`);
  if (!res.ok) throw new Error(`pdf.js ${file} could not be read from ASSETS (HTTP ${res.status})`);
  const headers = new Headers({
    // A module script and a module worker must come as JavaScript (the browser refuses any other type for them).
    "Content-Type": "text/javascript; charset=utf-8",
    "Cache-Control": "public, max-age=31536000, immutable",
    // Only our own pages load it.
    "Cross-Origin-Resource-Policy": "same-origin",
  });
  for (const name of ["Content-Length", "ETag"]) {
    const value = res.headers.get(name);
    if (value) headers.set(name, value);
  }
  return new Response(res.body, { headers });
});
