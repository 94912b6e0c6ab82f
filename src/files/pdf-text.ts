import type { PDFDict, PDFDocument, PDFObject, PDFPageLeaf } from "@pdfme/pdf-lib";
import { pdfLib } from "./pdf-lib";

/**
 * A PDF's text, read with the pdf-lib the Worker already bundles (pdf.js would add ~500 KiB gzip and ~10 ms to every
 * isolate's cold start for one queue consumer): each page's content streams are tokenized and their text operators
 * followed (PDF 32000-1 §9.4), through form XObjects and annotation appearances, and each string's bytes are mapped to
 * Unicode by the font's /ToUnicode CMap, else its /Encoding and /Differences, else WinAnsi. Words and lines come from
 * where the glyphs land (widths from /Widths, /W or the standard-14 metrics), as pdftotext places them.
 *
 * Not read: Type3 glyph procedures (their /ToUnicode or /Differences are), CID fonts without /ToUnicode (except the
 * UCS-2 CMaps), predefined multi-byte CMaps other than Identity and UCS-2 (read as 2-byte codes), vertical writing.
 */

/** Tokens read per page, forms included: a page of drawing costs bounded time, whatever its streams hold. */
const MAX_PAGE_TOKENS = 2_000_000;
/** Decoded bytes kept of one stream: a deflate bomb costs at most this much memory. */
const MAX_STREAM_BYTES = 32 * 1024 * 1024;
/**
 * The whole document's budget (a few KB of forms that draw one another a thousand times each, or one 20 MB stream on
 * 500 pages, would otherwise cost hours of CPU): what is left unread is not indexed.
 */
const MAX_DOCUMENT_TOKENS = 20_000_000;
const MAX_DOCUMENT_DECODED = 256 * 1024 * 1024;
/** Form XObjects inside form XObjects. */
const MAX_FORM_DEPTH = 8;
/** A gap wider than this (in font sizes) along the line is a word break; pdftotext's is 0.1, a TJ kern of -100. */
const WORD_GAP = 0.15;
/** A move across the line wider than this (in font sizes) starts a new line; superscripts stay on theirs. */
const LINE_GAP = 0.5;

type Lib = Awaited<ReturnType<typeof pdfLib>>;
type StandardName = Parameters<Lib["StandardFontEmbedder"]["for"]>[0];

/**
 * The text of `pdf`'s pages in order, at most `maxChars`: a page's lines joined with "\n", whitespace collapsed within
 * each, pages with text joined with "\n\n". Reading stops at the cap. A content stream that fails to decode is skipped,
 * as is a page whose content cannot be read; a PDF without a text layer gives "".
 */
export async function extractPdfText(pdf: PDFDocument, maxChars: number): Promise<string> {
  const reader = new TextReader(await pdfLib(), maxChars);
  const pages: string[] = [];
  for (const page of pdf.getPages()) {
    if (reader.left <= 0) break;
    const text = reader.page(page.node);
    if (text) {
      pages.push(text);
      reader.left -= 2;
    }
  }
  return pages.join("\n\n").slice(0, maxChars).trimEnd();
}

// ---- Tokens (§7.2, §8.8) ----

/** A content-stream operand: a number, a name (as written, without "/"), a string's bytes, an array; null for the rest. */
export type Operand = number | string | Uint8Array | Operand[] | null;

const WHITE = 1;
const DELIM = 2;
const CLASS = new Uint8Array(256);
for (const c of [0, 9, 10, 12, 13, 32]) CLASS[c] = WHITE;
for (const c of "()<>[]{}/%") CLASS[c.charCodeAt(0)] = DELIM;

/**
 * Calls `onOp` with each operator, the operands before it and where they stand in `b` (from the first operand, or the
 * operator when it has none, to the operator's end) until the bytes end, `onOp` answers false or `budget` runs out.
 * Inline image data (BI … ID … EI) is skipped; a keyword inside an unclosed array drops the array.
 */
function lex(
  b: Uint8Array,
  onOp: (op: string, args: Operand[], span: { start: number; end: number }) => boolean,
  budget: { tokens: number },
): void {
  let args: Operand[] = [];
  let opStart = -1;
  const open: { items: Operand[]; dict: boolean }[] = [];
  const push = (v: Operand) => (open.at(-1)?.items ?? args).push(v);
  let i = 0;
  while (i < b.length) {
    const c = b[i]!;
    if (CLASS[c] === WHITE) {
      i++;
      continue;
    }
    if (--budget.tokens < 0) return;
    if (opStart < 0 && c !== 0x25) opStart = i;
    if (c === 0x25) {
      while (i < b.length && b[i] !== 10 && b[i] !== 13) i++;
    } else if (c === 0x28) {
      const [s, next] = literalString(b, i + 1);
      push(s);
      i = next;
    } else if (c === 0x3c && b[i + 1] === 0x3c) {
      open.push({ items: [], dict: true });
      i += 2;
    } else if (c === 0x3c) {
      const end = b.indexOf(0x3e, i);
      push(hexBytes(b.subarray(i + 1, end < 0 ? b.length : end)));
      i = end < 0 ? b.length : end + 1;
    } else if (c === 0x3e) {
      if (b[i + 1] === 0x3e && open.at(-1)?.dict) {
        open.pop();
        push(null);
      }
      i += b[i + 1] === 0x3e ? 2 : 1;
    } else if (c === 0x5b) {
      open.push({ items: [], dict: false });
      i++;
    } else if (c === 0x5d) {
      const top = open.at(-1);
      if (top && !top.dict) {
        open.pop();
        push(top.items);
      }
      i++;
    } else if (c === 0x2f) {
      const start = ++i;
      while (i < b.length && CLASS[b[i]!] === 0) i++;
      push(latin1(b.subarray(start, i)));
    } else if (CLASS[c] === DELIM) {
      i++; // a stray ")" or "{" "}": nothing a text reader needs
    } else {
      const start = i;
      while (i < b.length && CLASS[b[i]!] === 0) i++;
      const word = latin1(b.subarray(start, i));
      if ((c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2d || c === 0x2e) push(Number.parseFloat(word) || 0);
      else if (word === "true" || word === "false" || word === "null") push(null);
      else if (word === "ID") {
        i = inlineImageEnd(b, i + 1);
        args = [];
        opStart = -1;
      } else {
        open.length = 0;
        if (!onOp(word, args, { start: opStart, end: i })) return;
        args = [];
        opStart = -1;
      }
    }
  }
}

/** Where an inline image's data ends: after the first "EI" that stands alone (whitespace before, whitespace or end after). */
function inlineImageEnd(b: Uint8Array, from: number): number {
  for (let i = from; i + 1 < b.length; i++)
    if (b[i] === 0x45 && b[i + 1] === 0x49 && CLASS[b[i - 1]!] === WHITE && (i + 2 >= b.length || CLASS[b[i + 2]!] !== 0)) return i + 2;
  return b.length;
}

const ESCAPES: Record<number, number> = { 110: 10, 114: 13, 116: 9, 98: 8, 102: 12 };

/** A literal string's bytes (§7.3.4.2: balanced parentheses, escapes, octal codes, line continuations), and where it ends. */
function literalString(b: Uint8Array, i: number): [Uint8Array, number] {
  const out: number[] = [];
  let depth = 1;
  while (i < b.length) {
    const c = b[i++]!;
    if (c === 0x5c && i < b.length) {
      const e = b[i++]!;
      if (e >= 0x30 && e <= 0x37) {
        let code = e - 0x30;
        for (let n = 0; n < 2 && b[i]! >= 0x30 && b[i]! <= 0x37; n++) code = code * 8 + b[i++]! - 0x30;
        out.push(code & 0xff);
      } else if (e === 13) {
        if (b[i] === 10) i++;
      } else if (e !== 10) out.push(ESCAPES[e] ?? e);
    } else if (c === 0x28) {
      depth++;
      out.push(c);
    } else if (c === 0x29) {
      if (--depth === 0) break;
      out.push(c);
    } else if (c === 13) {
      if (b[i] === 10) i++;
      out.push(10);
    } else out.push(c);
  }
  return [Uint8Array.from(out), i];
}

function hexBytes(hex: Uint8Array): Uint8Array {
  const digits = latin1(hex).replace(/[^0-9a-f]/gi, "");
  const even = digits.length % 2 ? `${digits}0` : digits;
  const out = new Uint8Array(even.length / 2);
  for (let k = 0; k < out.length; k++) out[k] = Number.parseInt(even.slice(2 * k, 2 * k + 2), 16);
  return out;
}

function latin1(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i += 0x2000) s += String.fromCharCode(...b.subarray(i, i + 0x2000));
  return s;
}

const int = (b: Uint8Array) => b.reduce((v, byte) => v * 256 + byte, 0);

// ---- Fonts: bytes to codes to Unicode (§9.6–9.10) ----

interface Codespace {
  len: number;
  lo: number;
  hi: number;
}

export interface Font {
  /** Codespace ranges of a multi-byte font; null: one byte a code. */
  spaces: Codespace[] | null;
  unicode(code: number): string;
  /** Advance in text space units per unit of font size. */
  width(code: number, text: string): number;
  /** How far glyphs reach above and below the baseline, per unit of font size (the descent is negative). */
  ascent: number;
  descent: number;
}

function splitCodes(s: Uint8Array, spaces: Codespace[] | null): { code: number; len: number }[] {
  if (!spaces) return Array.from(s, (code) => ({ code, len: 1 }));
  const out: { code: number; len: number }[] = [];
  const shortest = Math.min(...spaces.map((r) => r.len));
  for (let i = 0; i < s.length; ) {
    let found = 0;
    let value = 0;
    for (let len = 1; len <= 4 && i + len <= s.length && !found; len++) {
      value = value * 256 + s[i + len - 1]!;
      if (spaces.some((r) => r.len === len && value >= r.lo && value <= r.hi)) found = len;
    }
    const len = found || Math.min(shortest, s.length - i);
    out.push({ code: int(s.subarray(i, i + len)), len });
    i += len;
  }
  return out;
}

/** A CMap's codespace ranges and code → Unicode mappings (bfchar, bfrange in both forms); code → CID maps give ranges only. */
function parseCMap(bytes: Uint8Array): { spaces: Codespace[]; map: Map<number, string> } {
  const spaces: Codespace[] = [];
  const map = new Map<number, string>();
  const unicodeOf = (dst: Operand) => (dst instanceof Uint8Array ? utf16be(dst) : typeof dst === "string" ? glyphUnicode(dst) : "");
  lex(
    bytes,
    (op, args) => {
      if (op === "endcodespacerange") {
        for (let k = 0; k + 1 < args.length; k += 2) {
          const [lo, hi] = [args[k], args[k + 1]];
          if (lo instanceof Uint8Array && hi instanceof Uint8Array && lo.length > 0)
            spaces.push({ len: lo.length, lo: int(lo), hi: int(hi) });
        }
      } else if (op === "endbfchar") {
        for (let k = 0; k + 1 < args.length; k += 2) {
          const src = args[k];
          if (src instanceof Uint8Array) map.set(int(src), unicodeOf(args[k + 1]!));
        }
      } else if (op === "endbfrange") {
        for (let k = 0; k + 2 < args.length; k += 3) {
          const [lo, hi, dst] = [args[k], args[k + 1], args[k + 2]];
          if (!(lo instanceof Uint8Array && hi instanceof Uint8Array)) continue;
          const first = int(lo);
          const last = Math.min(int(hi), first + 0xffff);
          const base = dst instanceof Uint8Array ? utf16be(dst) : "";
          for (let code = first; code <= last && map.size < 0x40000; code++) {
            const n = code - first;
            if (Array.isArray(dst)) map.set(code, unicodeOf(dst[n] ?? null));
            else if (base) map.set(code, base.slice(0, -1) + String.fromCharCode(base.charCodeAt(base.length - 1) + n));
          }
        }
      }
      return true;
    },
    { tokens: MAX_PAGE_TOKENS },
  );
  return { spaces, map };
}

function utf16be(b: Uint8Array): string {
  if (b.length % 2) return latin1(b);
  let s = "";
  for (let i = 0; i < b.length; i += 2) s += String.fromCharCode((b[i]! << 8) | b[i + 1]!);
  return s;
}

/** Codes 0x80–0x9F of WinAnsiEncoding (0xA0–0xFF are Latin-1's); "\0": none. */
const WIN_ANSI_80 = "€\0‚ƒ„…†‡ˆ‰Š‹Œ\0Ž\0\0‘’“”•–—˜™š›œ\0žŸ";
/** Codes 0x80–0xFF of MacRomanEncoding (§D.2; 0xDB is the currency sign there, not the euro). */
const MAC_ROMAN_80 =
  "ÄÅÇÉÑÖÜáàâäãåçéèêëíìîïñóòôöõúùûü†°¢£§•¶ß®©™´¨≠ÆØ∞±≤≥¥µ∂∑∏π∫ªºΩæø¿¡¬√ƒ≈∆«»…\u00a0ÀÃÕŒœ–—“”‘’÷◊ÿŸ⁄¤‹›ﬁﬂ‡·‚„‰ÂÊÁËÈÍÎÏÌÓÔ\0ÒÚÛÙıˆ˜¯˘˙˚¸˝˛ˇ";
/** StandardEncoding's codes above 0x7F: two hex digits and the character. */
const STANDARD_HIGH =
  "a1¡a2¢a3£a4⁄a5¥a6ƒa7§a8¤a9'aa“ab«ac‹ad›aeﬁafﬂb1–b2†b3‡b4·b6¶b7•b8‚b9„ba”bb»bc…bd‰bf¿c1`c2´c3ˆc4˜c5¯c6˘c7˙c8¨ca˚cb¸cd˝ce˛cfˇd0—e1Æe3ªe8Łe9ØeaŒebºf1æf5ıf8łf9øfaœfbß";

type Table = string[];
const tables = new Map<string, Table>();

/** A base encoding's code → Unicode table, built at first use. */
function baseEncoding(name: string, lib: Lib): Table {
  const known = tables.get(name);
  if (known) return known;
  const t: Table = Array.from({ length: 256 }, (_, c) => (c >= 0x20 && c < 0x7f ? String.fromCharCode(c) : ""));
  if (name === "MacRomanEncoding") for (let c = 0x80; c < 0x100; c++) t[c] = MAC_ROMAN_80[c - 0x80]!;
  else if (name === "StandardEncoding") {
    [t[0x27], t[0x60]] = ["’", "‘"];
    for (const [, hex, ch] of STANDARD_HIGH.matchAll(/([0-9a-f]{2})(.)/g)) t[Number.parseInt(hex!, 16)] = ch!;
  } else if (name === "Symbol" || name === "ZapfDingbats") {
    // The two symbolic standard fonts' built-in encodings, from pdf-lib's own tables.
    t.fill("");
    const enc = lib.StandardFontEmbedder.for(name as StandardName).encoding;
    for (const cp of enc.supportedCodePoints) t[enc.encodeUnicodeCodePoint(cp).code] = String.fromCodePoint(cp);
  } else {
    for (let c = 0x80; c < 0xa0; c++) t[c] = WIN_ANSI_80[c - 0x80]!;
    for (let c = 0xa0; c < 0x100; c++) t[c] = String.fromCharCode(c);
  }
  for (let c = 0; c < 256; c++) if (t[c] === "\0") t[c] = "";
  tables.set(name, t);
  return t;
}

const ACCENTS: Record<string, string> = {
  acute: "\u0301",
  grave: "\u0300",
  circumflex: "\u0302",
  tilde: "\u0303",
  dieresis: "\u0308",
  ring: "\u030a",
  cedilla: "\u0327",
  caron: "\u030c",
  breve: "\u0306",
  macron: "\u0304",
  ogonek: "\u0328",
  dotaccent: "\u0307",
  hungarumlaut: "\u030b",
  commaaccent: "\u0326",
};
const GREEK = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega";
/** Adobe glyph names that are neither a letter, a letter and an accent, a Greek letter nor uniXXXX / uXXXX. */
const NAMED =
  "space  exclam ! quotedbl \" numbersign # dollar $ percent % ampersand & quotesingle ' quoteright ’ parenleft ( parenright ) " +
  "asterisk * plus + comma , hyphen - period . slash / zero 0 one 1 two 2 three 3 four 4 five 5 six 6 seven 7 eight 8 nine 9 " +
  "colon : semicolon ; less < equal = greater > question ? at @ bracketleft [ backslash \\ bracketright ] asciicircum ^ " +
  "underscore _ grave ` quoteleft ‘ braceleft { bar | braceright } asciitilde ~ exclamdown ¡ cent ¢ sterling £ fraction ⁄ " +
  "yen ¥ florin ƒ section § currency ¤ quotedblleft “ guillemotleft « guilsinglleft ‹ guilsinglright › fi ﬁ fl ﬂ ff ﬀ ffi ﬃ " +
  "ffl ﬄ endash – emdash — dagger † daggerdbl ‡ periodcentered · paragraph ¶ bullet • quotesinglbase ‚ quotedblbase „ " +
  "quotedblright ” guillemotright » ellipsis … perthousand ‰ questiondown ¿ acute ´ circumflex ˆ tilde ˜ macron ¯ breve ˘ " +
  "dotaccent ˙ dieresis ¨ ring ˚ cedilla ¸ hungarumlaut ˝ ogonek ˛ caron ˇ AE Æ ae æ OE Œ oe œ ordfeminine ª ordmasculine º " +
  "Lslash Ł lslash ł Oslash Ø oslash ø dotlessi ı germandbls ß Euro € trademark ™ copyright © registered ® degree ° " +
  "plusminus ± multiply × divide ÷ mu µ onehalf ½ onequarter ¼ threequarters ¾ onesuperior ¹ twosuperior ² threesuperior ³ " +
  "brokenbar ¦ logicalnot ¬ minus − Eth Ð eth ð Thorn Þ thorn þ Dcroat Đ dcroat đ IJ Ĳ ij ĳ Eng Ŋ eng ŋ notequal ≠ " +
  "lessequal ≤ greaterequal ≥ infinity ∞ partialdiff ∂ summation ∑ product ∏ radical √ integral ∫ approxequal ≈ lozenge ◊ " +
  "sfthyphen \u00ad nbspace \u00a0 nonbreakingspace \u00a0 numero №";
let named: Map<string, string> | null = null;

/** The Unicode of an Adobe glyph name (AGL specification: a suffix after "." goes, "_" joins ligature parts). */
function glyphUnicode(name: string): string {
  if (!named) {
    named = new Map();
    const parts = NAMED.split(" ");
    for (let k = 0; k + 1 < parts.length; k += 2) named.set(parts[k]!, parts[k + 1] || " ");
    for (const [n, greek] of GREEK.split(" ").entries()) {
      const offset = n >= 17 ? n + 1 : n; // final sigma sits between rho and sigma
      named.set(greek, String.fromCharCode(0x3b1 + offset));
      named.set(greek[0]!.toUpperCase() + greek.slice(1), String.fromCharCode(0x391 + offset));
    }
  }
  const base = name.split(".")[0]!;
  if (base.includes("_")) return base.split("_").map(glyphUnicode).join("");
  const known = named.get(base);
  if (known) return known;
  if (/^[A-Za-z]$/.test(base)) return base;
  let m = /^uni((?:[0-9A-F]{4})+)$/.exec(base);
  if (m)
    return m[1]!
      .match(/.{4}/g)!
      .map((h) => String.fromCharCode(Number.parseInt(h, 16)))
      .join("");
  m = /^u([0-9A-F]{4,6})$/.exec(base);
  if (m && Number.parseInt(m[1]!, 16) <= 0x10ffff) return String.fromCodePoint(Number.parseInt(m[1]!, 16));
  m = /^([A-Za-z])([a-z]+)$/.exec(base);
  const accent = m && ACCENTS[m[2]!];
  if (accent) {
    const composed = `${m![1]}${accent}`.normalize("NFC");
    // AGL's "commaaccent" letters are partly cedilla letters in Unicode (Gcommaaccent is U+0122).
    return composed.length === 1 || accent !== "\u0326" ? composed : `${m![1]}\u0327`.normalize("NFC");
  }
  return "";
}

const STANDARD_14 = new Set([
  ...["Courier", "Helvetica"].flatMap((family) => [family, `${family}-Bold`, `${family}-Oblique`, `${family}-BoldOblique`]),
  ...["Roman", "Bold", "Italic", "BoldItalic"].map((style) => `Times-${style}`),
  "Symbol",
  "ZapfDingbats",
]);

/** The standard-14 font whose metrics stand in for a font without /Widths (Arial is Helvetica's, as viewers take it). */
function standardFont(baseFont: string): string | null {
  const name = baseFont.replace(/^[A-Z]{6}\+/, "");
  if (STANDARD_14.has(name)) return name;
  const bold = /bold/i.test(name);
  const slanted = /italic|oblique/i.test(name);
  const style = (italic: string) => (bold || slanted ? `-${bold ? "Bold" : ""}${slanted ? italic : ""}` : "");
  if (/^(arial|helvetica)/i.test(name)) return `Helvetica${style("Oblique")}`;
  if (/^courier/i.test(name)) return `Courier${style("Oblique")}`;
  if (/^times/i.test(name)) return bold || slanted ? `Times${style("Italic")}` : "Times-Roman";
  return null;
}

// ---- Pages: the text operators (§9.3, §9.4), forms (§8.10) ----

export type Matrix = [number, number, number, number, number, number];
export const IDENTITY: Matrix = [1, 0, 0, 1, 0, 0];
export const multiply = (m: Matrix, n: Matrix): Matrix => [
  m[0] * n[0] + m[1] * n[2],
  m[0] * n[1] + m[1] * n[3],
  m[2] * n[0] + m[3] * n[2],
  m[2] * n[1] + m[3] * n[3],
  m[4] * n[0] + m[5] * n[2] + n[4],
  m[4] * n[1] + m[5] * n[3] + n[5],
];

export interface GState {
  ctm: Matrix;
  font: Font | null;
  size: number;
  charSpace: number;
  wordSpace: number;
  scale: number;
  leading: number;
}

/** The graphics state a page's (or an annotation's) content starts from. */
export const startState = (ctm: Matrix = IDENTITY): GState => ({
  ctm,
  font: null,
  size: 0,
  charSpace: 0,
  wordSpace: 0,
  scale: 1,
  leading: 0,
});

/** A text-showing operator as written: its operands, and its bytes in the content (from its first operand to its end). */
export interface Shown {
  op: "Tj" | "TJ" | "'" | '"';
  args: Operand[];
  start: number;
  end: number;
}

/** One glyph a text-showing operator paints, with where it lands and where its code sits in the content. */
export interface Glyph {
  /** Its Unicode text ("" when the font maps it to none). */
  text: string;
  /** Text space to user space at the glyph's origin, and at the end of its advance. */
  at: Matrix;
  next: Matrix;
  font: Font;
  size: number;
  /** Its advance along the line in text space before horizontal scaling: a TJ adjustment of -1000·advance/size moves as much. */
  advance: number;
  shown: Shown;
  /** Which of the operator's strings holds its code (0 but for TJ), and the code's bytes in that string. */
  item: number;
  from: number;
  to: number;
}

/** What a walk over content does with what it meets. */
export interface TextWalk {
  font(dict: PDFDict): Font;
  glyph(glyph: Glyph): void;
  /** A form XObject drawn with `gs`; not followed when absent. */
  form?(xobject: PDFObject, resources: PDFDict | undefined, gs: GState): void;
  /** Whether to read on after an operator. */
  more(): boolean;
}

/**
 * Follows one content stream's text operators from `start`, the graphics state it starts from, calling `walk` with
 * every glyph shown (§9.4) and every form drawn, until the bytes end, `walk.more()` answers false or `budget` runs out.
 */
export function walkText(
  lib: Lib,
  content: Uint8Array,
  resources: PDFDict | undefined,
  start: GState,
  walk: TextWalk,
  budget: { tokens: number },
): void {
  const { PDFDict, PDFName } = lib;
  const resource = (kind: string, name: Operand) => {
    const group = resources?.lookup(PDFName.of(kind));
    return group instanceof PDFDict && typeof name === "string" ? group.lookup(PDFName.of(name)) : undefined;
  };
  const stack: GState[] = [];
  let gs = { ...start };
  let tm: Matrix = IDENTITY;
  let tlm: Matrix = IDENTITY;
  const moveLine = (tx: number, ty: number) => {
    tlm = multiply([1, 0, 0, 1, tx, ty], tlm);
    tm = tlm;
  };
  // A new matrix each time: tm and tlm may be one array.
  const advance = (tx: number) => {
    tm = [tm[0], tm[1], tm[2], tm[3], tm[4] + tx * tm[0], tm[5] + tx * tm[1]];
  };
  const show = (s: Operand, shown: Shown, item: number) => {
    if (!(s instanceof Uint8Array)) return;
    const font = gs.font ?? FALLBACK_FONT;
    let from = 0;
    for (const { code, len } of splitCodes(s, font.spaces)) {
      const text = font.unicode(code);
      const at = multiply(tm, gs.ctm);
      const spacing = len === 1 && code === 32 ? gs.wordSpace : 0;
      const step = font.width(code, text) * gs.size + gs.charSpace + spacing;
      advance(step * gs.scale);
      walk.glyph({ text, at, next: multiply(tm, gs.ctm), font, size: gs.size, advance: step, shown, item, from, to: from + len });
      from += len;
    }
  };
  const num = (v: Operand | undefined) => (typeof v === "number" ? v : 0);
  lex(
    content,
    (op, a, span) => {
      switch (op) {
        case "q":
          if (stack.length < 64) stack.push({ ...gs });
          break;
        case "Q":
          gs = stack.pop() ?? gs;
          break;
        case "cm":
          if (a.length >= 6) gs.ctm = multiply(a.slice(-6).map(num) as Matrix, gs.ctm);
          break;
        case "BT":
          tm = tlm = IDENTITY;
          break;
        case "Tf": {
          const dict = resource("Font", a.at(-2) ?? null);
          gs.font = dict instanceof PDFDict ? walk.font(dict) : null;
          gs.size = num(a.at(-1));
          break;
        }
        case "Tc":
          gs.charSpace = num(a.at(-1));
          break;
        case "Tw":
          gs.wordSpace = num(a.at(-1));
          break;
        case "Tz":
          gs.scale = num(a.at(-1)) / 100;
          break;
        case "TL":
          gs.leading = num(a.at(-1));
          break;
        case "Td":
          moveLine(num(a.at(-2)), num(a.at(-1)));
          break;
        case "TD":
          gs.leading = -num(a.at(-1));
          moveLine(num(a.at(-2)), num(a.at(-1)));
          break;
        case "Tm":
          if (a.length >= 6) tm = tlm = a.slice(-6).map(num) as Matrix;
          break;
        case "T*":
          moveLine(0, -gs.leading);
          break;
        case "Tj":
          show(a.at(-1) ?? null, { op, args: a, ...span }, 0);
          break;
        case "'":
          moveLine(0, -gs.leading);
          show(a.at(-1) ?? null, { op, args: a, ...span }, 0);
          break;
        case '"':
          [gs.wordSpace, gs.charSpace] = [num(a.at(-3)), num(a.at(-2))];
          moveLine(0, -gs.leading);
          show(a.at(-1) ?? null, { op, args: a, ...span }, 0);
          break;
        case "TJ": {
          const shown: Shown = { op, args: a, ...span };
          for (const [item, part] of (Array.isArray(a.at(-1)) ? (a.at(-1) as Operand[]) : []).entries()) {
            if (typeof part === "number") advance((-part / 1000) * gs.size * gs.scale);
            else show(part, shown, item);
          }
          break;
        }
        case "Do": {
          const xobject = resource("XObject", a.at(-1) ?? null);
          const subtype = xobject instanceof lib.PDFStream ? xobject.dict.lookup(PDFName.of("Subtype")) : undefined;
          if (subtype === PDFName.of("Form")) walk.form?.(xobject!, resources, gs);
          break;
        }
      }
      return walk.more();
    },
    budget,
  );
}

/** Where the last glyph ended, in device space, with its line's direction and its size. */
interface Pen {
  x: number;
  y: number;
  ux: number;
  uy: number;
  size: number;
}

class TextReader {
  /** Characters still wanted (collapsed whitespace counts once). */
  left: number;
  private readonly fonts = new Map<PDFObject, Font>();
  private out: string[] = [];
  private pen: Pen | null = null;
  private spaced = true;
  private budget = { tokens: MAX_PAGE_TOKENS };
  /** What the whole document may cost, however its pages and forms repeat one another: tokens lexed, bytes decoded. */
  private documentTokens = MAX_DOCUMENT_TOKENS;
  private decoded = 0;

  constructor(
    private readonly lib: Lib,
    maxChars: number,
  ) {
    this.left = maxChars;
  }

  /** One page's text, or "" when it has none or cannot be read. */
  page(node: PDFPageLeaf): string {
    [this.out, this.pen, this.spaced, this.budget] = [[], null, true, { tokens: Math.min(MAX_PAGE_TOKENS, this.documentTokens) }];
    const before = this.left;
    const granted = this.budget.tokens;
    if (granted <= 0) return "";
    try {
      const contents = node.Contents();
      const parts = contents instanceof this.lib.PDFArray ? contents.asArray().map((p) => node.context.lookup(p)) : [contents];
      const bytes: Uint8Array[] = [];
      for (const part of parts) {
        try {
          const b = this.streamBytes(part);
          if (b) bytes.push(b, new Uint8Array([10]));
        } catch {
          // A part that does not decode (a broken filter, a bad deflate) is skipped; the page's other parts still count.
        }
      }
      const resources = node.Resources();
      this.run(concat(bytes), resources, startState(), 0, new Set());
      // Filled form fields and other annotations show their text through appearance streams, as pdftotext reads them.
      for (const annot of node.Annots()?.asArray() ?? []) this.annotation(node.context.lookup(annot));
    } catch {
      this.left = before;
      return "";
    } finally {
      this.documentTokens -= granted - Math.max(this.budget.tokens, 0);
    }
    return this.out
      .join("")
      .split("\n")
      .map((line) => line.replace(/\s+/g, " ").trim())
      .filter(Boolean)
      .join("\n");
  }

  private annotation(annot: PDFObject | undefined) {
    const { PDFDict, PDFName, PDFNumber } = this.lib;
    if (!(annot instanceof PDFDict) || this.left <= 0) return;
    const flags = annot.lookup(PDFName.of("F"));
    if (flags instanceof PDFNumber && flags.asNumber() & (2 | 32)) return; // Hidden, NoView: not on screen, not read
    let normal = annot.lookup(PDFName.of("AP"));
    normal = normal instanceof PDFDict ? normal.lookup(PDFName.of("N")) : undefined;
    if (normal instanceof PDFDict) {
      const shown = annot.lookup(PDFName.of("AS"));
      normal = shown instanceof PDFName ? normal.lookup(shown) : undefined;
    }
    if (!(normal instanceof this.lib.PDFStream)) return;
    this.newline();
    this.form(normal, undefined, startState(), 0, new Set());
  }

  private streamBytes(obj: PDFObject | undefined): Uint8Array | null {
    const { PDFRawStream, PDFFlateStream, decodePDFRawStream } = this.lib;
    if (obj instanceof PDFFlateStream) return obj.getUnencodedContents(); // made in this process, not parsed
    if (!(obj instanceof PDFRawStream)) return null;
    if (this.decoded >= MAX_DOCUMENT_DECODED) return null;
    const stream = decodePDFRawStream(obj);
    const chunks: Uint8Array[] = [];
    for (let total = 0; total < MAX_STREAM_BYTES && this.decoded < MAX_DOCUMENT_DECODED; ) {
      const chunk = stream.getBytes(0x10000);
      if (chunk.length === 0) break;
      chunks.push(Uint8Array.from(chunk));
      total += chunk.length;
      this.decoded += chunk.length;
    }
    return concat(chunks);
  }

  private form(xobject: PDFObject, parentResources: PDFDict | undefined, gs: GState, depth: number, active: Set<PDFObject>) {
    const { PDFArray, PDFDict, PDFName, PDFNumber, PDFStream } = this.lib;
    if (!(xobject instanceof PDFStream) || depth >= MAX_FORM_DEPTH || active.has(xobject)) return;
    const matrix = xobject.dict.lookup(PDFName.of("Matrix"));
    const m =
      matrix instanceof PDFArray && matrix.size() === 6 ? matrix.asArray().map((n) => (n instanceof PDFNumber ? n.asNumber() : 0)) : null;
    const own = xobject.dict.lookup(PDFName.of("Resources"));
    let bytes: Uint8Array | null = null;
    try {
      bytes = this.streamBytes(xobject);
    } catch {
      return; // a form that does not decode shows nothing, like a page part that does not
    }
    if (!bytes) return;
    active.add(xobject);
    const inner = { ...gs, ctm: m ? multiply(m as Matrix, gs.ctm) : gs.ctm };
    this.run(bytes, own instanceof PDFDict ? own : parentResources, inner, depth + 1, active);
    active.delete(xobject);
  }

  /** Follows one content stream's operators with `gs`, the graphics state it starts from. */
  private run(content: Uint8Array, resources: PDFDict | undefined, start: GState, depth: number, active: Set<PDFObject>) {
    const walk: TextWalk = {
      font: (dict) => this.font(dict),
      glyph: (g) => {
        if (!g.text) return;
        this.place(g.text, g.at, g.size);
        this.endAt(g.next);
      },
      form: (xobject, parentResources, gs) => this.form(xobject, parentResources, gs, depth, active),
      more: () => this.left > 0,
    };
    walkText(this.lib, content, resources, start, walk, this.budget);
  }

  /** Appends a glyph's text at the origin of `m` (text space to device), a space or a line break first where it lands apart. */
  private place(text: string, m: Matrix, fontSize: number) {
    const pen = this.pen;
    if (pen) {
      const [dx, dy] = [m[4] - pen.x, m[5] - pen.y];
      const along = dx * pen.ux + dy * pen.uy;
      const across = dy * pen.ux - dx * pen.uy;
      const size = Math.max(pen.size, Math.abs(fontSize) * Math.hypot(m[2], m[3]));
      if (Math.abs(across) > LINE_GAP * size) this.newline();
      else if (along > WORD_GAP * size || along < -LINE_GAP * size) this.append(" ");
    }
    this.append(text.replace(/[\t\n\v\f\r]/g, " ").replace(/[\0-\x1f\x7f]/g, ""));
    const norm = Math.hypot(m[0], m[1]) || 1;
    this.pen = { x: m[4], y: m[5], ux: m[0] / norm, uy: m[1] / norm, size: Math.abs(fontSize) * Math.hypot(m[2], m[3]) };
  }

  private endAt(m: Matrix) {
    if (this.pen) [this.pen.x, this.pen.y] = [m[4], m[5]];
  }

  private newline() {
    this.out.push("\n");
    this.spaced = true;
    this.left--;
  }

  private append(text: string) {
    for (const ch of text) {
      const space = /\s/.test(ch);
      if (!space || !this.spaced) this.left--;
      this.spaced = space;
    }
    this.out.push(text);
  }

  private font(dict: PDFDict): Font {
    let font = this.fonts.get(dict);
    if (!font) {
      try {
        font = loadFont(this.lib, dict, (s) => this.streamBytes(s));
      } catch {
        font = FALLBACK_FONT;
      }
      this.fonts.set(dict, font);
    }
    return font;
  }
}

/** `parts` one after another, in one array. */
export function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** How far a font without metrics reaches above and below its baseline (poppler's assumption too). */
const DEFAULT_EXTENT = { ascent: 0.95, descent: -0.35 };

/** A font descriptor's /Ascent and /Descent (thousandths of text space), when it gives usable ones. */
function extentOf(lib: Lib, descriptor: PDFObject | undefined): { ascent: number; descent: number } | null {
  const { PDFDict, PDFName, PDFNumber } = lib;
  if (!(descriptor instanceof PDFDict)) return null;
  const [a, d] = ["Ascent", "Descent"].map((k) => descriptor.lookup(PDFName.of(k)));
  const ascent = a instanceof PDFNumber ? a.asNumber() / 1000 : 0;
  const descent = d instanceof PDFNumber ? d.asNumber() / 1000 : 0;
  return ascent > 0 && ascent < 2 && descent <= 0 && descent > -2 ? { ascent, descent } : null;
}

/** A font the page does not define (a missing /Font entry): one byte a code, Latin-1, half an em wide. */
const FALLBACK_FONT: Font = {
  spaces: null,
  unicode: (code) => (code >= 0x20 ? String.fromCharCode(code) : ""),
  width: () => 0.5,
  ...DEFAULT_EXTENT,
};

/** A standard-14 font's extent from its AFM (Ascender and Descender, else its bounding box: Symbol, ZapfDingbats). */
function standardExtent(lib: Lib, name: string): { ascent: number; descent: number } {
  const { font } = lib.StandardFontEmbedder.for(name as StandardName);
  return { ascent: (font.Ascender || font.FontBBox[3]) / 1000, descent: (font.Descender || font.FontBBox[1]) / 1000 };
}

/** A font dictionary as the reader reads it; the fallback font when it cannot be read. */
export function readFont(lib: Lib, dict: PDFDict): Font {
  const bytesOf = (s: PDFObject | undefined) => {
    if (s instanceof lib.PDFFlateStream) return s.getUnencodedContents();
    return s instanceof lib.PDFRawStream ? Uint8Array.from(lib.decodePDFRawStream(s).getBytes(MAX_STREAM_BYTES)) : null;
  };
  try {
    return loadFont(lib, dict, bytesOf);
  } catch {
    return FALLBACK_FONT;
  }
}

function loadFont(lib: Lib, dict: PDFDict, bytesOf: (s: PDFObject | undefined) => Uint8Array | null): Font {
  const { PDFArray, PDFDict, PDFName, PDFNumber, PDFStream } = lib;
  const get = (d: PDFDict, key: string) => d.lookup(PDFName.of(key));
  const numberOf = (o: PDFObject | undefined, fallback: number) => (o instanceof PDFNumber ? o.asNumber() : fallback);
  const nameOf = (o: PDFObject | undefined) => (o instanceof PDFName ? o.decodeText() : "");
  const toUnicodeStream = get(dict, "ToUnicode");
  const toUnicode = toUnicodeStream instanceof PDFStream ? parseCMap(bytesOf(toUnicodeStream) ?? new Uint8Array()) : null;
  const encoding = get(dict, "Encoding");

  if (nameOf(get(dict, "Subtype")) === "Type0") {
    const cmapName = nameOf(encoding);
    const embedded = encoding instanceof PDFStream ? parseCMap(bytesOf(encoding) ?? new Uint8Array()).spaces : [];
    const spaces = embedded.length ? embedded : toUnicode?.spaces.length ? toUnicode.spaces : [{ len: 2, lo: 0, hi: 0xffff }];
    // The UCS-2 and UTF-16 CMaps' codes are Unicode itself (§9.7.5.2).
    const ucs2 = /^Uni.*-(UCS2|UTF16)-/.test(cmapName);
    const descendants = get(dict, "DescendantFonts");
    const cid = descendants instanceof PDFArray ? descendants.lookup(0) : undefined;
    const widths = new Map<number, number>();
    let dw = 1000;
    if (cid instanceof PDFDict) {
      dw = numberOf(get(cid, "DW"), 1000);
      const w = get(cid, "W");
      const items = w instanceof PDFArray ? w.asArray().map((o) => cid.context.lookup(o)) : [];
      for (let k = 0; k < items.length && widths.size < 0x20000; ) {
        const first = numberOf(items[k], 0);
        const next = items[k + 1];
        if (next instanceof PDFArray) {
          for (const [n, v] of next.asArray().entries()) widths.set(first + n, numberOf(cid.context.lookup(v), dw));
          k += 2;
        } else {
          const last = Math.min(numberOf(next, first), first + 0xffff);
          for (let c = first; c <= last; c++) widths.set(c, numberOf(items[k + 2], dw));
          k += 3;
        }
      }
    }
    return {
      spaces,
      ...(extentOf(lib, cid instanceof PDFDict ? get(cid, "FontDescriptor") : undefined) ?? DEFAULT_EXTENT),
      unicode: (code) => toUnicode?.map.get(code) ?? (ucs2 ? String.fromCharCode(code) : ""),
      // Identity CMaps map a code to the CID of the same number; for other CMaps this is an estimate.
      width: (code) => (widths.get(code) ?? dw) / 1000,
    };
  }

  const baseFont = nameOf(get(dict, "BaseFont"));
  const standard = standardFont(baseFont);
  const symbolic = standard === "Symbol" || standard === "ZapfDingbats";
  const baseName = encoding instanceof PDFDict ? nameOf(get(encoding, "BaseEncoding")) : nameOf(encoding);
  const table = [...baseEncoding(baseName || (symbolic ? standard! : "WinAnsiEncoding"), lib)];
  const differences = encoding instanceof PDFDict ? get(encoding, "Differences") : undefined;
  if (differences instanceof PDFArray) {
    let code = 0;
    for (const item of differences.asArray()) {
      if (item instanceof PDFNumber) code = item.asNumber();
      else if (item instanceof PDFName) {
        const text = glyphUnicode(item.decodeText());
        if (text && code >= 0 && code < 256) table[code] = text;
        code++;
      }
    }
  }

  // Widths in glyph space: thousandths of text space, except Type3's, which its /FontMatrix scales.
  const fontMatrix = get(dict, "FontMatrix");
  const unit = fontMatrix instanceof PDFArray ? numberOf(fontMatrix.lookup(0), 0.001) : 0.001;
  const firstChar = numberOf(get(dict, "FirstChar"), 0);
  const widthsArray = get(dict, "Widths");
  const widths = widthsArray instanceof PDFArray ? widthsArray.asArray().map((o) => numberOf(dict.context.lookup(o), 0)) : null;
  const descriptor = get(dict, "FontDescriptor");
  const missing = descriptor instanceof PDFDict ? numberOf(get(descriptor, "MissingWidth"), 0) : 0;
  const metrics = !widths && standard ? lib.StandardFontEmbedder.for(standard as StandardName) : null;
  return {
    spaces: null,
    ...(extentOf(lib, descriptor) ?? (standard ? standardExtent(lib, standard) : DEFAULT_EXTENT)),
    unicode: (code) => toUnicode?.map.get(code) ?? table[code] ?? "",
    width(code, text) {
      if (widths) return (widths[code - firstChar] ?? missing) * unit;
      if (!metrics) return 0.5;
      const cp = text.codePointAt(0) ?? 0;
      const glyph = metrics.encoding.canEncodeUnicodeCodePoint(cp) ? metrics.encoding.encodeUnicodeCodePoint(cp).name : null;
      return (glyph ? metrics.font.getWidthOfGlyph(glyph) || 250 : 500) / 1000;
    },
  };
}
