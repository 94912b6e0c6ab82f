import type { Color, PDFDocument, PDFFont, PDFPage } from "@pdfme/pdf-lib";
import type { Env } from "../env";
import { embedFaces, type Face, type FontSet, loadFonts, splitRuns, widthOf } from "./pdf-fonts";

/** The standard PDF fonts encode WinAnsi only; anything else is shown as "?" (the JSON routes have every byte). */
export const printable = (text: string) => text.replace(/[^\x20-\x7e\u00a0-\u00ff]/g, "?");

export const PAGE = { width: 595, height: 842, margin: 50 } as const;

export interface LineOptions {
  size?: number;
  strong?: boolean;
  indent?: number;
  /** Grey instead of near-black: footers, secondary details. */
  muted?: boolean;
}

// What pdf-lib's rgb() builds, written out so that this module needs pdf-lib's types only: the library itself loads at
// the first PDF (src/files/pdf-lib.ts), not at Worker startup.
const INK = { type: "RGB", red: 0.1, green: 0.1, blue: 0.12 } as unknown as Color;
const MUTED = { type: "RGB", red: 0.42, green: 0.42, blue: 0.45 } as unknown as Color;

/**
 * A top-to-bottom text writer over A4 pages with Helvetica (property reports): `line` wraps long text
 * at the page edge, on a space where there is one, and starts a new page at the bottom; `space` reserves height for
 * a drawing (an image) and hands back the page and y where it goes.
 */
export async function pdfWriter(pdf: PDFDocument) {
  const font: PDFFont = await pdf.embedFont("Helvetica");
  const bold: PDFFont = await pdf.embedFont("Helvetica-Bold");
  const state: { page: PDFPage; y: number } = { page: pdf.addPage([PAGE.width, PAGE.height]), y: PAGE.height - 52 };
  const ensure = (height: number) => {
    if (state.y - height < PAGE.margin) {
      state.page = pdf.addPage([PAGE.width, PAGE.height]);
      state.y = PAGE.height - 52;
    }
  };
  const line = (text: string, { size = 10, strong = false, indent = 0, muted = false }: LineOptions = {}) => {
    const max = Math.floor((PAGE.width - 2 * PAGE.margin - indent) / (size * 0.52));
    let rest = printable(text);
    do {
      let cut = rest.length <= max ? rest.length : rest.lastIndexOf(" ", max);
      if (cut <= 0) cut = Math.min(max, rest.length);
      ensure(size + 5);
      state.page.drawText(rest.slice(0, cut), {
        x: PAGE.margin + indent,
        y: state.y,
        size,
        font: strong ? bold : font,
        color: muted ? MUTED : INK,
      });
      state.y -= size + 5;
      rest = rest.slice(cut).trimStart();
    } while (rest.length > 0);
  };
  const space = (height: number): { page: PDFPage; y: number } => {
    ensure(height);
    state.y -= height;
    return { page: state.page, y: state.y };
  };
  return { line, space };
}

/**
 * Break opportunities: after a run of spaces, and around every CJK character (CJK text has no spaces to break on),
 * except before closing punctuation, which never starts a line (Japanese kinsoku).
 */
const CJK = "\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}\\u3000-\\u303f\\uff00-\\uffef";
const CLOSING = "、。，．：；！？）」』】〕〉》";
const PIECES = new RegExp(`[${CJK}][${CLOSING}]*\\s*|[^\\s${CJK}]+\\s*|\\s+`, "gu");
/** Height of a line of `size` points: CJK glyphs stand taller than Latin ones. */
const leading = (size: number) => Math.round(size * 1.45);
const TOP = PAGE.height - 52;
/** Room kept under the text for the footer line. */
const FOOTER_Y = 28;

function textWidth(set: FontSet, text: string, size: number, strong: boolean): number {
  let width = 0;
  for (const run of splitRuns(set, text, strong)) width += widthOf(set, run, size);
  return width;
}

/** Greedy line filling with the real fonts' widths; a piece wider than a whole line is cut between characters. */
function wrap(set: FontSet, text: string, size: number, strong: boolean, max: number): string[] {
  const pieces = text.match(PIECES) ?? [];
  const rows: string[] = [];
  let row = "";
  let width = 0;
  for (let i = 0; i < pieces.length; i++) {
    const piece = pieces[i]!;
    const body = textWidth(set, piece.trimEnd(), size, strong);
    if (row && width + body > max) {
      rows.push(row.trimEnd());
      [row, width] = ["", 0];
      if (!piece.trim()) continue;
    }
    if (!row && body > max && [...piece].length > 1) {
      pieces.splice(i, 1, ...piece);
      i--;
      continue;
    }
    row += piece;
    width += textWidth(set, piece, size, strong);
  }
  return [...rows, row.trimEnd()];
}

interface Placed {
  page: PDFPage;
  x: number;
  y: number;
  size: number;
  face: Face;
  text: string;
  muted: boolean;
}

/**
 * The Unicode counterpart of `pdfWriter` (documents, signature pages, certificates): every script DejaVu Sans or
 * IPAGothic has prints as written. `line` lays text out at once (wrapping needs the real widths) but the drawing waits
 * for `finish`, which embeds only the fonts the text used, as subsets, and puts "page n of m" footers on this
 * writer's pages. Nothing is drawn until `finish` is awaited.
 */
export async function unicodeWriter(env: Env, pdf: PDFDocument) {
  const set = await loadFonts(env);
  const placed: Placed[] = [];
  const pages: PDFPage[] = [];
  const state = { page: null as PDFPage | null, y: TOP };
  const newPage = () => {
    state.page = pdf.addPage([PAGE.width, PAGE.height]);
    pages.push(state.page);
    state.y = TOP;
  };
  const place = (page: PDFPage, text: string, x: number, y: number, size: number, strong: boolean, muted: boolean) => {
    for (const run of splitRuns(set, text, strong)) {
      if (run.text.trim()) placed.push({ page, x, y, size, face: run.face, text: run.text, muted });
      x += widthOf(set, run, size);
    }
  };
  const line = (text: string, { size = 10, strong = false, indent = 0, muted = false }: LineOptions = {}) => {
    for (const paragraph of text.split("\n")) {
      for (const row of wrap(set, paragraph, size, strong, PAGE.width - 2 * PAGE.margin - indent)) {
        if (!state.page || state.y - leading(size) < PAGE.margin) newPage();
        place(state.page!, row, PAGE.margin + indent, state.y, size, strong, muted);
        state.y -= leading(size);
      }
    }
  };
  /** Vertical space, dropped at the top of a page. */
  const gap = (height: number) => {
    if (state.page && state.y < TOP) state.y -= height;
  };
  const finish = async (footer?: (page: number, pages: number) => string) => {
    if (footer) for (const [i, page] of pages.entries()) place(page, footer(i + 1, pages.length), PAGE.margin, FOOTER_Y, 8, false, true);
    const fonts = await embedFaces(
      pdf,
      set,
      placed.map((p) => p.face),
    );
    for (const p of placed)
      p.page.drawText(p.text, { x: p.x, y: p.y, size: p.size, font: fonts.get(p.face)!, color: p.muted ? MUTED : INK });
    placed.length = 0;
  };
  return { line, gap, newPage, finish };
}

export type UnicodeWriter = Awaited<ReturnType<typeof unicodeWriter>>;
