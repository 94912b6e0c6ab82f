import { expect } from "vitest";
import type { RoleField } from "../../src/db/documents";
import { pdfLib } from "../../src/files/pdf-lib";
import type { PlacedWord } from "./pdf-tools";

/**
 * PDFs with text tags (issue 45 part 2), written by pdf-lib in Helvetica where the test says, on pages rotated and
 * cropped as it says; and the check that a document's fields sit where `pdftotext -bbox` saw the tags' words.
 */
export interface TaggedPage {
  /** MediaBox size in points; Letter by default. */
  size?: [number, number];
  rotate?: 0 | 90 | 180 | 270;
  /** A CropBox [x, y, width, height] inside the MediaBox. */
  crop?: [number, number, number, number];
  /** Lines of text, each at its baseline's start in user space. */
  lines: { x: number; y: number; text: string; size?: number; rotate?: 90 }[];
}

export async function taggedPdf(pages: TaggedPage[]): Promise<Uint8Array> {
  const { PDFDocument, StandardFonts, degrees } = await pdfLib();
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const spec of pages) {
    const page = pdf.addPage(spec.size ?? [612, 792]);
    if (spec.crop) page.setCropBox(...spec.crop);
    for (const line of spec.lines)
      page.drawText(line.text, { x: line.x, y: line.y, size: line.size ?? 10, font, rotate: degrees(line.rotate ?? 0) });
    if (spec.rotate) page.setRotation(degrees(spec.rotate));
  }
  return pdf.save();
}

export type PlacedField = Pick<RoleField, "type" | "role" | "page" | "x" | "y" | "width" | "height">;

/**
 * Each tag word `pdftotext -bbox` found has a field of its page within `slack` percent on every side, and no more
 * fields. `pages`: the document's pages as displayed (pdftotext places words on the rotated page but states the
 * unrotated page's size).
 */
export function expectFieldsOnTags(fields: PlacedField[], words: PlacedWord[], pages: { width: number; height: number }[], slack = 1) {
  const tags = words.filter((w) => w.text.startsWith("{{"));
  expect(fields.length, "one field per tag").toBe(tags.length);
  for (const w of tags) {
    const { width, height } = pages[w.page - 1]!;
    const want = {
      x: (w.xMin / width) * 100,
      y: (w.yMin / height) * 100,
      right: (w.xMax / width) * 100,
      bottom: (w.yMax / height) * 100,
    };
    const near = fields.filter(
      (f) =>
        f.page === w.page &&
        Math.abs(f.x - want.x) <= slack &&
        Math.abs(f.y - want.y) <= slack &&
        Math.abs(f.x + f.width - want.right) <= slack &&
        Math.abs(f.y + f.height - want.bottom) <= slack,
    );
    expect(near.length, `a field on ${w.text} (page ${w.page}, ${JSON.stringify(want)}); fields: ${JSON.stringify(fields)}`).toBe(1);
  }
}
