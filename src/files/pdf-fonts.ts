import type { PDFDocument, PDFFont } from "@pdfme/pdf-lib";
import type { Env } from "../env";
import { TrueTypeFont } from "./truetype";

/**
 * The fonts Unicode PDFs are written with (DESIGN.md "Sealed PDFs"): DejaVu Sans covers Latin, Cyrillic and Greek,
 * IPAGothic the CJK it lacks; `script`, a handwriting face, draws adopted signatures on sealed copies (issue 44). The
 * files are static assets (assets/fonts/), outside the Worker script; they are read through the ASSETS binding at first
 * use and kept for the isolate's life, parsed by truetype.ts.
 */
export type Face = "regular" | "bold" | "cjk" | "hangul" | "script";

// IPAGothic has no Hangul: NanumGothic (SIL OFL) prints Korean names. The script face is dkg handwriting, oblique
// (SIL OFL): TrueType outlines, which truetype.ts subsets (the script fonts shipped as CFF .otf it cannot), basic Latin
// and Latin-1 only, so splitRuns never picks it: scriptRuns falls back from it word by word.
const FILES: Record<Face, string> = {
  regular: "DejaVuSans.ttf",
  bold: "DejaVuSans-Bold.ttf",
  cjk: "ipag.ttf",
  hangul: "NanumGothic.ttf",
  script: "DkgHandwriting-Oblique.ttf",
};

/** What `pdf.registerFontkit` takes: something that makes a font of the bytes given to `embedFont`. */
type FontFactory = { create(data: Uint8Array | ArrayBuffer): TrueTypeFont };

export interface FontSet {
  bytes: Record<Face, Uint8Array>;
  /** Parsed once per isolate: which font has a glyph, how wide a run is, and what pdf-lib embeds a subset of. */
  fonts: Record<Face, TrueTypeFont>;
  /**
   * Handed to `pdf.registerFontkit`: the parsed font of bytes it was given (a font keeps no state between PDFs; each
   * PDF's subset is its own). Its layout is the cmap's glyphs, unshaped: pdf-lib reads nothing of a layout but its
   * glyphs (it draws plain advance widths), and NFC text in the scripts these fonts cover needs no shaping.
   */
  fontkit: FontFactory;
}

let loaded: FontSet | null = null;

/**
 * The fonts, fetched and parsed on the first call of this isolate and kept. The parsed set is kept, never the pending
 * promise: a promise that settles in one request's I/O context cannot be awaited from another request (workerd
 * cancels it as hung), so requests racing the first load each load, and the first to finish is kept.
 */
export async function loadFonts(env: Env): Promise<FontSet> {
  if (loaded) return loaded;
  const set = await readFonts(env);
  loaded ??= set;
  return loaded;
}

async function readFonts(env: Env): Promise<FontSet> {
  const assets = env.ASSETS;
  if (!assets) throw new Error("The ASSETS binding (assets/fonts) is missing: Unicode PDFs cannot be written");
  const faces = Object.keys(FILES) as Face[];
  const files = await Promise.all(
    faces.map(async (face) => {
      // The host is never looked up: an assets binding answers any URL from the assets directory by its path.
      const res = await assets.fetch(`https://assets.invalid/fonts/${FILES[face]}`);
      if (!res.ok) throw new Error(`Font ${FILES[face]} could not be read from ASSETS (HTTP ${res.status})`);
      return res.arrayBuffer();
    }),
  );
  const bytes = Object.fromEntries(faces.map((f, i) => [f, new Uint8Array(files[i]!)])) as Record<Face, Uint8Array>;
  const fonts = Object.fromEntries(faces.map((f) => [f, new TrueTypeFont(bytes[f])])) as Record<Face, TrueTypeFont>;
  const byBytes = new Map(faces.map((f) => [bytes[f], fonts[f]]));
  const create = (data: Uint8Array | ArrayBuffer) =>
    byBytes.get(data as Uint8Array) ?? new TrueTypeFont(data instanceof Uint8Array ? data : new Uint8Array(data));
  return { bytes, fonts, fontkit: { create } };
}

/** A piece of text drawn with one font. */
export interface Run {
  face: Face;
  text: string;
}

/** Tabs read as spaces; control and invisible formatting characters (soft hyphen, zero-width space) have no place on a page. */
const clean = (text: string) =>
  text
    .normalize("NFC")
    .replace(/\t/g, " ")
    .replace(/[\p{Cc}\p{Default_Ignorable_Code_Point}]/gu, "");

const RTL =
  /[\p{Script=Hebrew}\p{Script=Arabic}](?:[\p{Script=Hebrew}\p{Script=Arabic}\p{M}\s]*[\p{Script=Hebrew}\p{Script=Arabic}\p{M}])?/gu;
const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/**
 * Hebrew and Arabic words in the order a reader's eye meets them: a PDF draws left to right, so each right-to-left
 * stretch is reversed (by grapheme, so marks stay on their letters). Arabic letters stay in their isolated forms: pdf-lib
 * does not shape, so they print unjoined but in the right order.
 */
const visualOrder = (text: string) =>
  text.replace(RTL, (stretch) =>
    Array.from(graphemes.segment(stretch), (g) => g.segment)
      .reverse()
      .join(""),
  );

/** What stands for characters no font has: their code points, so the page still says exactly who signed. */
const codePoints = (chars: string[]) =>
  `<${chars.map((ch) => `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`).join(" ")}>`;
const JOINS_PREVIOUS = /^[\s\p{M}]$/u;

/**
 * Splits text into runs by the font that has each character: DejaVu (regular or bold) first, IPAGothic for the CJK
 * DejaVu lacks, NanumGothic for Hangul. Characters no font has (Indic and Thai scripts, emoji) print as their code
 * points in DejaVu, `<U+0930 U+093E>`, never as "?": a signature page must still say exactly who signed. Spaces and
 * combining marks stay in the run before them when its font has them, so "山田 太郎" is one run and extracts as one
 * string.
 */
export function splitRuns(set: FontSet, text: string, strong: boolean): Run[] {
  const primary: Face = strong ? "bold" : "regular";
  const runs: Run[] = [];
  const missing: string[] = [];
  const push = (face: Face, chars: string) => {
    const last = runs.at(-1);
    if (last?.face === face) last.text += chars;
    else runs.push({ face, text: chars });
  };
  const flush = () => {
    if (missing.length) push(primary, codePoints(missing.splice(0)));
  };
  for (const ch of visualOrder(clean(text))) {
    const cp = ch.codePointAt(0)!;
    const last = runs.at(-1);
    let face: Face | null = ([primary, "cjk", "hangul"] as const).find((f) => set.fonts[f].hasGlyphForCodePoint(cp)) ?? null;
    if (!missing.length && last && last.face !== face && JOINS_PREVIOUS.test(ch) && set.fonts[last.face].hasGlyphForCodePoint(cp))
      face = last.face;
    // A combining mark or joiner of an unprintable character belongs to it.
    if (!face || (missing.length && /\p{M}/u.test(ch))) {
      missing.push(ch);
      continue;
    }
    flush();
    push(face, ch);
  }
  flush();
  return runs;
}

/**
 * An adopted signature's runs (issue 44 part 5): the words the script face draws whole are in it, the rest as splitRuns
 * prints them (a word is never half handwriting, half DejaVu: "Żółć" prints in DejaVu, "Jane" beside it in the script),
 * so 山田太郎 and Ελένη still print as themselves. The words come from splitRuns' visual order, so a right-to-left name
 * keeps it.
 */
export function scriptRuns(set: FontSet, text: string): Run[] {
  const script = set.fonts.script;
  const drawable = (piece: string) => Array.from(piece).every((ch) => script.hasGlyphForCodePoint(ch.codePointAt(0)!));
  const runs: Run[] = [];
  for (const run of splitRuns(set, text, false)) {
    for (const piece of run.text.match(/\s+|\S+/gu) ?? []) {
      const last = runs.at(-1);
      const face: Face = /^\s/u.test(piece)
        ? last && set.fonts[last.face].hasGlyphForCodePoint(piece.codePointAt(0)!)
          ? last.face
          : run.face
        : drawable(piece)
          ? "script"
          : run.face;
      if (last?.face === face) last.text += piece;
      else runs.push({ face, text: piece });
    }
  }
  return runs;
}

/** Width in points, as pdf-lib draws it: the sum of the glyphs' advance widths. */
export function widthOf(set: FontSet, run: Run, size: number): number {
  const font = set.fonts[run.face];
  let units = 0;
  for (const glyph of font.glyphsForString(run.text)) units += glyph.advanceWidth;
  return (units * size) / font.unitsPerEm;
}

/** PDF 32000-1 9.6.4: a subset font's name starts with six capital letters and "+", distinct per subset in a file. */
const subsetTag = () => Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => String.fromCharCode(65 + (b % 26))).join("");

/**
 * The faces embedded in `pdf` as subsets: pdf-lib collects the glyphs drawn with each and writes the subset when the PDF
 * is saved. Each call embeds subsets of its own (a second writer on the same PDF gets fonts distinctly named).
 */
export async function embedFaces(pdf: PDFDocument, set: FontSet, faces: Iterable<Face>): Promise<Map<Face, PDFFont>> {
  pdf.registerFontkit(set.fontkit as unknown as Parameters<PDFDocument["registerFontkit"]>[0]);
  const embed = (f: Face) => pdf.embedFont(set.bytes[f], { subset: true, customName: `${subsetTag()}+${set.fonts[f].postscriptName}` });
  return new Map(await Promise.all([...new Set(faces)].map(async (f) => [f, await embed(f)] as const)));
}
