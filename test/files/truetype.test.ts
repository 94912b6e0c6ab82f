import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { loadFonts } from "../../src/files/pdf-fonts";
import { TrueTypeFont } from "../../src/files/truetype";

/** The component glyph ids of a composite glyph's outline (empty for a simple one). */
function components(outline: Uint8Array): number[] {
  const view = new DataView(outline.buffer, outline.byteOffset, outline.byteLength);
  if (outline.length < 10 || view.getInt16(0) >= 0) return [];
  const ids: number[] = [];
  let at = 10;
  for (;;) {
    const flags = view.getUint16(at);
    ids.push(view.getUint16(at + 2));
    at += 4 + (flags & 1 ? 4 : 2) + (flags & 8 ? 2 : flags & 0x40 ? 4 : flags & 0x80 ? 8 : 0);
    if (!(flags & 0x20)) return ids;
  }
}

describe("TrueType fonts (src/files/truetype.ts)", () => {
  it("reads the metrics and cmap pdf-lib embeds with, for every font the PDFs use", async () => {
    const set = await loadFonts(env);
    const dejavu = set.fonts.regular;
    expect(dejavu.unitsPerEm).toBe(2048);
    expect(dejavu.postscriptName).toBe("DejaVuSans");
    expect(dejavu.ascent).toBeGreaterThan(0);
    expect(dejavu.descent).toBeLessThan(0);
    expect(dejavu.hasGlyphForCodePoint("Ż".codePointAt(0)!)).toBe(true);
    expect(dejavu.hasGlyphForCodePoint("山".codePointAt(0)!)).toBe(false);
    expect(set.fonts.cjk.hasGlyphForCodePoint("山".codePointAt(0)!)).toBe(true);
    expect(set.fonts.hangul.hasGlyphForCodePoint("김".codePointAt(0)!)).toBe(true);
    // Outside the BMP: DejaVu's format 12 cmap has U+1F600; a code point no font maps has no glyph (never a wrong one).
    expect(dejavu.glyphForCodePoint(0x1f600).id).toBeGreaterThan(0);
    expect(dejavu.glyphForCodePoint(0x10fffd).id).toBe(0);
    expect(set.fonts.cjk.glyphForCodePoint(0x10fffd).id).toBe(0);
    const [a, space] = dejavu.glyphsForString("A ");
    expect(a).toMatchObject({ codePoints: [0x41] });
    expect(a!.id).toBeGreaterThan(0);
    expect(space!.advanceWidth).toBeGreaterThan(0);
  });

  it("writes a subset that holds exactly the glyphs used, renumbered, with composite components included", async () => {
    const { fonts } = await loadFonts(env);
    const font = fonts.regular;
    const glyphs = font.glyphsForString("Żółć AAA");
    const subset = font.createSubset();
    const ids = glyphs.map((g) => subset.includeGlyph(g));
    // First use numbers them from 1; a repeat keeps its number.
    expect(ids).toEqual([1, 2, 3, 4, 5, 6, 6, 6]);
    const bytes = subset.encode();
    const written = new TrueTypeFont(bytes);
    expect(bytes.length).toBeLessThan(font.bytes.length / 20);
    const count = new DataView(written.tableBytes("maxp")!.buffer, written.tableBytes("maxp")!.byteOffset).getUint16(4);
    const used = new Set(glyphs.map((g) => g.id));
    expect(count).toBeGreaterThan(used.size);
    for (let id = 0; id < count; id++) {
      for (const component of components(written.glyphBytes(id))) expect(component).toBeLessThan(count);
    }
    glyphs.forEach((g, i) => {
      expect(written.advanceOf(ids[i]!)).toBe(g.advanceWidth);
      // Same outline, but a composite's component ids are renumbered.
      expect(written.glyphBytes(ids[i]!).length).toBeGreaterThanOrEqual(font.glyphBytes(g.id).length);
    });
    // "Ż" is built of components in DejaVu: they came along.
    expect(components(written.glyphBytes(1)).length).toBeGreaterThan(0);
  });

  it("refuses what is not a TrueType font", () => {
    expect(() => new TrueTypeFont(new TextEncoder().encode("%PDF-1.7 not a font at all, but long enough to have a header"))).toThrow(
      /TrueType/,
    );
  });
});
