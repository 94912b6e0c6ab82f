/**
 * TrueType fonts for PDFs: what pdf-lib asks of a font when it embeds one as a CIDFontType2 subset, read
 * from the font's tables, and the subset it embeds, written here. It replaces @pdf-lib/fontkit, which was ≈ 385 KiB
 * of the gzipped Worker for features these PDFs do not use: OpenType shaping (pdf-fonts.ts drew unshaped cmap glyphs
 * already), CFF, WOFF and WOFF2 (with the Brotli dictionary), and Unicode property tables.
 *
 * Supported: TrueType outlines (`glyf`), simple and composite glyphs, `cmap` formats 4 and 12. The subset has the
 * tables a PDF viewer draws a CIDFontType2 with (head, hhea, maxp, hmtx, loca, glyf, and cvt, fpgm, prep for
 * hinting), glyphs renumbered from 1 in the order they are first used, .notdef at 0.
 */

/** A glyph as pdf-lib reads it: its id in the font, its advance (font units) and what text it stands for. */
export interface Glyph {
  id: number;
  advanceWidth: number;
  codePoints: number[];
}

export interface TrueTypeSubset {
  /** The glyph's id in the subset (1, 2, …), including it on first use. */
  includeGlyph(glyph: Glyph): number;
  /** Always undefined: the subset is TrueType (pdf-lib embeds FontFile2). */
  readonly cff: undefined;
  /** The subset font file. */
  encode(): Uint8Array;
}

interface Table {
  offset: number;
  length: number;
}

const tag = (view: DataView, at: number) =>
  String.fromCharCode(view.getUint8(at), view.getUint8(at + 1), view.getUint8(at + 2), view.getUint8(at + 3));

/** Composite glyph component flags (OpenType `glyf`). */
const ARG_1_AND_2_ARE_WORDS = 0x0001;
const WE_HAVE_A_SCALE = 0x0008;
const MORE_COMPONENTS = 0x0020;
const WE_HAVE_AN_X_AND_Y_SCALE = 0x0040;
const WE_HAVE_A_TWO_BY_TWO = 0x0080;

export class TrueTypeFont {
  readonly unitsPerEm: number;
  readonly bbox: { minX: number; minY: number; maxX: number; maxY: number };
  readonly ascent: number;
  readonly descent: number;
  readonly capHeight: number;
  readonly xHeight: number;
  readonly italicAngle: number;
  readonly postscriptName: string;
  readonly head: { macStyle: { italic: boolean } };
  readonly post: { isFixedPitch: boolean };
  readonly "OS/2": { sFamilyClass: number };
  /** TrueType outlines only: pdf-lib embeds a CIDFontType2. */
  readonly cff = undefined;

  private readonly view: DataView;
  private readonly tables = new Map<string, Table>();
  private readonly numGlyphs: number;
  private readonly numberOfHMetrics: number;
  private readonly longLoca: boolean;
  private readonly glyphOf: (codePoint: number) => number;
  private characters: number[] | undefined;

  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const v = this.view;
    const version = v.getUint32(0);
    if (version !== 0x00010000 && tag(v, 0) !== "true") throw new Error("Not a TrueType font (only glyf outlines are supported)");
    for (let i = 0, n = v.getUint16(4); i < n; i++) {
      const at = 12 + i * 16;
      this.tables.set(tag(v, at), { offset: v.getUint32(at + 8), length: v.getUint32(at + 12) });
    }
    for (const required of ["head", "hhea", "maxp", "hmtx", "loca", "glyf"])
      if (!this.tables.has(required)) throw new Error(`The font has no ${required} table`);
    const head = this.table("head");
    this.unitsPerEm = v.getUint16(head + 18);
    this.bbox = { minX: v.getInt16(head + 36), minY: v.getInt16(head + 38), maxX: v.getInt16(head + 40), maxY: v.getInt16(head + 42) };
    this.head = { macStyle: { italic: (v.getUint16(head + 44) & 0x2) !== 0 } };
    this.longLoca = v.getInt16(head + 50) === 1;
    const hhea = this.table("hhea");
    this.ascent = v.getInt16(hhea + 4);
    this.descent = v.getInt16(hhea + 6);
    this.numberOfHMetrics = v.getUint16(hhea + 34);
    this.numGlyphs = v.getUint16(this.table("maxp") + 4);
    const os2 = this.tables.get("OS/2");
    const os2Version = os2 ? v.getUint16(os2.offset) : 0;
    this["OS/2"] = { sFamilyClass: os2 ? v.getInt16(os2.offset + 30) : 0 };
    this.capHeight = os2 && os2Version >= 2 ? v.getInt16(os2.offset + 88) : this.ascent;
    this.xHeight = os2 && os2Version >= 2 ? v.getInt16(os2.offset + 86) : 0;
    const post = this.tables.get("post");
    this.italicAngle = post ? v.getInt32(post.offset + 4) / 65536 : 0;
    this.post = { isFixedPitch: post ? v.getUint32(post.offset + 12) !== 0 : false };
    this.postscriptName = this.readPostscriptName() ?? "Font";
    this.glyphOf = this.readCmap();
  }

  private table(name: string): number {
    return this.tables.get(name)!.offset;
  }

  /** The glyph drawn for `codePoint` (id 0, .notdef, when the font has none). */
  glyphForCodePoint(codePoint: number): Glyph {
    const id = this.glyphOf(codePoint);
    return { id, advanceWidth: this.advanceOf(id), codePoints: [codePoint] };
  }

  hasGlyphForCodePoint(codePoint: number): boolean {
    return this.glyphOf(codePoint) !== 0;
  }

  /** The text's glyphs, one per code point, unshaped (see pdf-fonts.ts). */
  glyphsForString(text: string): Glyph[] {
    return Array.from(text, (ch) => this.glyphForCodePoint(ch.codePointAt(0)!));
  }

  /** What pdf-lib lays text out with: the unshaped glyphs. */
  layout(text: string): { glyphs: Glyph[] } {
    return { glyphs: this.glyphsForString(text) };
  }

  /** Every code point the font maps (pdf-lib reads it only when embedding a whole font, which these PDFs never do). */
  get characterSet(): number[] {
    if (!this.characters) {
      const out: number[] = [];
      for (let cp = 0; cp <= 0xffff; cp++) if (this.glyphOf(cp)) out.push(cp);
      this.characters = out;
    }
    return this.characters;
  }

  createSubset(): TrueTypeSubset {
    return new Subset(this);
  }

  advanceOf(glyphId: number): number {
    const hmtx = this.table("hmtx");
    return this.view.getUint16(hmtx + 4 * Math.min(glyphId, this.numberOfHMetrics - 1));
  }

  /** The left side bearing of a glyph (hmtx). */
  bearingOf(glyphId: number): number {
    const hmtx = this.table("hmtx");
    if (glyphId < this.numberOfHMetrics) return this.view.getInt16(hmtx + 4 * glyphId + 2);
    return this.view.getInt16(hmtx + 4 * this.numberOfHMetrics + 2 * (glyphId - this.numberOfHMetrics));
  }

  /** The bytes of a glyph's outline in `glyf` (empty for a glyph without one, a space). */
  glyphBytes(glyphId: number): Uint8Array {
    if (glyphId >= this.numGlyphs) return new Uint8Array(0);
    const loca = this.table("loca");
    const at = (i: number) => (this.longLoca ? this.view.getUint32(loca + 4 * i) : this.view.getUint16(loca + 2 * i) * 2);
    const start = at(glyphId);
    const end = at(glyphId + 1);
    const glyf = this.table("glyf");
    return this.bytes.subarray(glyf + start, glyf + Math.max(start, end));
  }

  tableBytes(name: string): Uint8Array | undefined {
    const t = this.tables.get(name);
    return t ? this.bytes.subarray(t.offset, t.offset + t.length) : undefined;
  }

  private readPostscriptName(): string | null {
    const name = this.tables.get("name");
    if (!name) return null;
    const v = this.view;
    const count = v.getUint16(name.offset + 2);
    const strings = name.offset + v.getUint16(name.offset + 4);
    for (let i = 0; i < count; i++) {
      const at = name.offset + 6 + i * 12;
      const [platform, , , nameId, length, offset] = [0, 2, 4, 6, 8, 10].map((o) => v.getUint16(at + o)) as [
        number,
        number,
        number,
        number,
        number,
        number,
      ];
      if (nameId !== 6) continue;
      const bytes = this.bytes.subarray(strings + offset, strings + offset + length);
      // Windows and Unicode names are UTF-16BE; Macintosh Roman is ASCII for a PostScript name.
      const text =
        platform === 1
          ? String.fromCharCode(...bytes)
          : String.fromCharCode(...Array.from({ length: length >> 1 }, (_, k) => (bytes[2 * k]! << 8) | bytes[2 * k + 1]!));
      const clean = text.replace(/[^\x21-\x7e]/g, "");
      if (clean) return clean;
    }
    return null;
  }

  /**
   * The code point → glyph lookup of the best Unicode cmap subtable: format 12 (full Unicode) over format 4 (BMP).
   * A font without a cmap (a subset this module wrote) maps nothing.
   */
  private readCmap(): (codePoint: number) => number {
    const v = this.view;
    if (!this.tables.has("cmap")) return () => 0;
    const cmap = this.table("cmap");
    let best: { offset: number; format: number } | null = null;
    for (let i = 0, n = v.getUint16(cmap + 2); i < n; i++) {
      const at = cmap + 4 + i * 8;
      const platform = v.getUint16(at);
      const encoding = v.getUint16(at + 2);
      const offset = cmap + v.getUint32(at + 4);
      const format = v.getUint16(offset);
      const unicode = platform === 0 || (platform === 3 && (encoding === 1 || encoding === 10));
      if (!unicode || (format !== 4 && format !== 12)) continue;
      if (!best || (format === 12 && best.format !== 12)) best = { offset, format };
    }
    if (!best) throw new Error("The font has no Unicode cmap (format 4 or 12)");
    return best.format === 12 ? this.format12(best.offset) : this.format4(best.offset);
  }

  private format4(at: number): (codePoint: number) => number {
    const v = this.view;
    const segments = v.getUint16(at + 6) >> 1;
    const ends = at + 14;
    const starts = ends + segments * 2 + 2;
    const deltas = starts + segments * 2;
    const ranges = deltas + segments * 2;
    return (cp) => {
      if (cp > 0xffff) return 0;
      let lo = 0;
      let hi = segments - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (v.getUint16(ends + mid * 2) < cp) lo = mid + 1;
        else hi = mid;
      }
      const start = v.getUint16(starts + lo * 2);
      if (cp < start || cp > v.getUint16(ends + lo * 2)) return 0;
      const delta = v.getInt16(deltas + lo * 2);
      const rangeOffset = v.getUint16(ranges + lo * 2);
      if (rangeOffset === 0) return (cp + delta) & 0xffff;
      const glyph = v.getUint16(ranges + lo * 2 + rangeOffset + (cp - start) * 2);
      return glyph === 0 ? 0 : (glyph + delta) & 0xffff;
    };
  }

  private format12(at: number): (codePoint: number) => number {
    const v = this.view;
    const groups = v.getUint32(at + 12);
    const first = at + 16;
    return (cp) => {
      let lo = 0;
      let hi = groups - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        const g = first + mid * 12;
        if (cp < v.getUint32(g)) hi = mid - 1;
        else if (cp > v.getUint32(g + 4)) lo = mid + 1;
        else return v.getUint32(g + 8) + (cp - v.getUint32(g));
      }
      return 0;
    };
  }
}

/** The glyphs one PDF uses, renumbered, and the font file holding just them (with the components they are built of). */
class Subset implements TrueTypeSubset {
  readonly cff = undefined;
  /** Old glyph ids in subset order; .notdef first. */
  private readonly order: number[] = [0];
  private readonly index = new Map<number, number>([[0, 0]]);

  constructor(private readonly font: TrueTypeFont) {}

  includeGlyph(glyph: Glyph): number {
    return this.include(glyph.id);
  }

  private include(oldId: number): number {
    let id = this.index.get(oldId);
    if (id === undefined) {
      id = this.order.length;
      this.order.push(oldId);
      this.index.set(oldId, id);
    }
    return id;
  }

  encode(): Uint8Array {
    const font = this.font;
    const outlines: Uint8Array[] = [];
    // Composite glyphs name their components by id: those are included (appended to `order`, so the loop meets them)
    // and renumbered in the copy.
    for (let i = 0; i < this.order.length; i++) {
      const source = font.glyphBytes(this.order[i]!);
      const copy = source.slice();
      if (copy.length >= 10 && new DataView(copy.buffer).getInt16(0) < 0) {
        const view = new DataView(copy.buffer);
        let at = 10;
        for (;;) {
          const flags = view.getUint16(at);
          view.setUint16(at + 2, this.include(view.getUint16(at + 2)));
          at += 4 + (flags & ARG_1_AND_2_ARE_WORDS ? 4 : 2);
          if (flags & WE_HAVE_A_SCALE) at += 2;
          else if (flags & WE_HAVE_AN_X_AND_Y_SCALE) at += 4;
          else if (flags & WE_HAVE_A_TWO_BY_TWO) at += 8;
          if (!(flags & MORE_COMPONENTS)) break;
        }
      }
      outlines.push(copy);
    }
    const count = this.order.length;
    const padded = outlines.map((o) => o.length + ((4 - (o.length % 4)) % 4));
    const glyf = new Uint8Array(padded.reduce((a, b) => a + b, 0));
    const loca = new DataView(new ArrayBuffer(4 * (count + 1)));
    let offset = 0;
    outlines.forEach((o, i) => {
      loca.setUint32(4 * i, offset);
      glyf.set(o, offset);
      offset += padded[i]!;
    });
    loca.setUint32(4 * count, offset);
    const hmtx = new DataView(new ArrayBuffer(4 * count));
    this.order.forEach((oldId, i) => {
      hmtx.setUint16(4 * i, font.advanceOf(oldId));
      hmtx.setInt16(4 * i + 2, font.bearingOf(oldId));
    });
    const head = font.tableBytes("head")!.slice();
    new DataView(head.buffer).setUint32(8, 0); // checkSumAdjustment: recomputed below
    new DataView(head.buffer).setInt16(50, 1); // long loca
    const hhea = font.tableBytes("hhea")!.slice();
    new DataView(hhea.buffer).setUint16(34, count);
    const maxp = font.tableBytes("maxp")!.slice();
    new DataView(maxp.buffer).setUint16(4, count);
    const tables: [string, Uint8Array][] = [
      ["glyf", glyf],
      ["head", head],
      ["hhea", hhea],
      ["hmtx", new Uint8Array(hmtx.buffer)],
      ["loca", new Uint8Array(loca.buffer)],
      ["maxp", maxp],
    ];
    for (const hinting of ["cvt ", "fpgm", "prep"]) {
      const bytes = font.tableBytes(hinting);
      if (bytes) tables.push([hinting, bytes]);
    }
    return writeFont(tables);
  }
}

const checksum = (bytes: Uint8Array): number => {
  const padded = new Uint8Array(bytes.length + ((4 - (bytes.length % 4)) % 4));
  padded.set(bytes);
  const view = new DataView(padded.buffer);
  let sum = 0;
  for (let at = 0; at < padded.length; at += 4) sum = (sum + view.getUint32(at)) >>> 0;
  return sum;
};

/** An sfnt file of `tables` (sorted by tag, 4-byte aligned, with checksums and head's checkSumAdjustment). */
function writeFont(tables: [string, Uint8Array][]): Uint8Array {
  tables.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const n = tables.length;
  const power = 2 ** Math.floor(Math.log2(n));
  let size = 12 + 16 * n;
  const offsets = tables.map(([, bytes]) => {
    const at = size;
    size += bytes.length + ((4 - (bytes.length % 4)) % 4);
    return at;
  });
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint32(0, 0x00010000);
  view.setUint16(4, n);
  view.setUint16(6, power * 16);
  view.setUint16(8, Math.log2(power));
  view.setUint16(10, n * 16 - power * 16);
  tables.forEach(([name, bytes], i) => {
    const at = 12 + 16 * i;
    for (let k = 0; k < 4; k++) view.setUint8(at + k, name.charCodeAt(k));
    view.setUint32(at + 4, checksum(bytes));
    view.setUint32(at + 8, offsets[i]!);
    view.setUint32(at + 12, bytes.length);
    out.set(bytes, offsets[i]!);
  });
  const headAt = offsets[tables.findIndex(([name]) => name === "head")]!;
  view.setUint32(headAt + 8, (0xb1b0afba - checksum(out)) >>> 0);
  return out;
}
