import { expect } from "vitest";
import { receiverUrl } from "./receiver";

/**
 * The PDF tools nobody here wrote (poppler's pdftotext, pdffonts, pdfsig, pdfinfo, and qpdf), run on a PDF by the Node
 * receiver (test/helpers/receiver-server.ts, POST /pdftool): workerd runs no programs.
 */
export interface ToolRun {
  code: number;
  stdout: string;
  stderr: string;
  /** What the tool wrote to `{out}`, when it did. */
  out: Uint8Array | null;
}

const base64 = (bytes: Uint8Array) => {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
};
const bytesOf = (b64: string) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));

/** Runs `tool` with `args` (`{in}`: the PDF's file, `{out}`: a file the tool may write). */
export async function pdfTool(
  tool: "pdftotext" | "pdffonts" | "pdfsig" | "pdfinfo" | "qpdf",
  pdf: Uint8Array,
  args: string[],
): Promise<ToolRun> {
  const res = await fetch(`${receiverUrl()}/pdftool`, { method: "POST", body: JSON.stringify({ tool, args, pdf: base64(pdf) }) });
  expect(res.status).toBe(200);
  const r = (await res.json()) as { code: number; stdout: string; stderr: string; out: string | null };
  return { ...r, out: r.out === null ? null : bytesOf(r.out) };
}

/** A copy encrypted by qpdf (AES-256): `user` "" makes a PDF anyone opens whose owner password restricts editing. */
export async function qpdfEncrypt(pdf: Uint8Array, opts: { user: string; owner: string; bits?: 40 | 128 | 256 }): Promise<Uint8Array> {
  const bits = String(opts.bits ?? 256);
  const restrictions = bits === "40" ? ["--modify=n", "--extract=n"] : ["--modify=none", "--extract=n"];
  const r = await pdfTool("qpdf", pdf, [
    ...(bits === "40" || bits === "128" ? ["--allow-weak-crypto"] : []),
    "--encrypt",
    opts.user,
    opts.owner,
    bits,
    ...restrictions,
    "--",
    "{in}",
    "{out}",
  ]);
  expect(r.code, r.stderr).toBe(0);
  return r.out!;
}

/** A word as `pdftotext -bbox` places it: points on the page as displayed, origin top-left. */
export interface PlacedWord {
  page: number;
  text: string;
  xMin: number;
  yMin: number;
  xMax: number;
  yMax: number;
  pageWidth: number;
  pageHeight: number;
}

const unescapeXml = (s: string) =>
  s.replace(/&(amp|lt|gt|quot|apos|#\d+|#x[0-9a-f]+);/gi, (_, e: string) =>
    e === "amp"
      ? "&"
      : e === "lt"
        ? "<"
        : e === "gt"
          ? ">"
          : e === "quot"
            ? '"'
            : e === "apos"
              ? "'"
              : String.fromCodePoint(e[1] === "x" || e[1] === "X" ? Number.parseInt(e.slice(2), 16) : Number(e.slice(1))),
  );

/** Every word of the PDF with its box, by `pdftotext -bbox`. */
export async function placedWords(pdf: Uint8Array): Promise<PlacedWord[]> {
  const r = await pdfTool("pdftotext", pdf, ["-bbox", "-cropbox", "-enc", "UTF-8", "{in}", "-"]);
  expect(r.code, r.stderr).toBe(0);
  const words: PlacedWord[] = [];
  let page = 0;
  let size = { w: 0, h: 0 };
  for (const line of r.stdout.split("\n")) {
    const p = /<page width="([\d.]+)" height="([\d.]+)">/.exec(line);
    if (p) {
      page++;
      size = { w: Number(p[1]), h: Number(p[2]) };
      continue;
    }
    const w = /<word xMin="([\d.-]+)" yMin="([\d.-]+)" xMax="([\d.-]+)" yMax="([\d.-]+)">(.*)<\/word>/.exec(line);
    if (w)
      words.push({
        page,
        text: unescapeXml(w[5]!),
        xMin: Number(w[1]),
        yMin: Number(w[2]),
        xMax: Number(w[3]),
        yMax: Number(w[4]),
        pageWidth: size.w,
        pageHeight: size.h,
      });
  }
  return words;
}
