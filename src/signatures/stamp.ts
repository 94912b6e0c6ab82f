import type { PDFDocument, PDFImage, PDFPage } from "@pdfme/pdf-lib";
import type { Env } from "../env";
import { embedFaces, type Face, type FontSet, loadFonts, type Run, scriptRuns, splitRuns, widthOf } from "../files/pdf-fonts";
import { type PageGeometry, type PercentBox, type PlacedBox, placeBox } from "../files/pdf-geometry";
import { pdfLib } from "../files/pdf-lib";

/**
 * Recipients' values drawn into the sealed copy of an uploaded document (issue 44 part 5): each inside its field's box,
 * upright as the page is shown (any /Rotate, a CropBox anywhere), text real and selectable in embedded subset fonts.
 */

/** A value as the signer gave it (the envelope signer's `fieldValues`): dates arrive resolved, as text. */
export type StampValue = { text: string } | { checked: boolean } | { adopted: string } | { image: string };

/** A field (an `EnvelopeField` fits: its id, page from 1 and percent box) with the value to draw; null draws nothing. */
export interface StampField extends PercentBox {
  id: string;
  page: number;
  value: StampValue | null;
}

export interface StampOptions {
  /** The bytes of a drawn signature's PNG by its R2 key; null when there is none. */
  images: (key: string) => Promise<Uint8Array | null>;
  /** The fonts, when the caller has them already (else loaded here). */
  fonts?: FontSet;
}

/** A text value's size in a roomy box: a form's size, not the box's. It shrinks to fit a smaller one. */
const TEXT_SIZE = 11;
const CHECK = "\u2713";

/** One line of runs to draw in a box, laid out and waiting for the fonts to be embedded. */
interface Placed {
  page: PDFPage;
  box: PlacedBox;
  runs: Run[];
  /** Left end of the baseline, in the box's displayed frame (points from its bottom-left corner). */
  u: number;
  v: number;
  size: number;
}

/**
 * Draws every field's value on page `field.page` of `pdf`, whose pages `pages` describes (same indices). A drawn
 * signature whose PNG cannot be read fails the whole stamp: a sealed copy must never lack a signature a signer gave.
 */
export async function stampFields(
  env: Env,
  pdf: PDFDocument,
  pages: PageGeometry[],
  fields: StampField[],
  opts: StampOptions,
): Promise<void> {
  const { degrees, rgb } = await pdfLib();
  const ink = rgb(0.1, 0.1, 0.12);
  const set = opts.fonts ?? (await loadFonts(env));
  const placed: Placed[] = [];
  const images = new Map<string, PDFImage>();
  for (const field of fields) {
    const value = field.value;
    if (!value) continue;
    const geometry = pages[field.page - 1];
    if (!geometry || field.page > pdf.getPageCount())
      throw new Error(`Field ${field.id} is on page ${field.page}; the document has ${pdf.getPageCount()}`);
    const page = pdf.getPage(field.page - 1);
    const box = placeBox(geometry, field);
    if (!(box.width > 0 && box.height > 0)) continue;
    if ("image" in value) {
      let image = images.get(value.image);
      if (!image) {
        const bytes = await opts.images(value.image);
        if (!bytes) throw new Error(`The drawn signature of field ${field.id} (${value.image}) cannot be read`);
        image = await pdf.embedPng(bytes);
        images.set(value.image, image);
      }
      const scale = Math.min(box.width / image.width, box.height / image.height);
      const [width, height] = [image.width * scale, image.height * scale];
      const at = toUser(box, (box.width - width) / 2, (box.height - height) / 2);
      page.drawImage(image, { ...at, width, height, rotate: degrees(box.rotate) });
      continue;
    }
    const line =
      "checked" in value
        ? value.checked && layoutLine(set, [{ face: "regular", text: CHECK }], box, { inset: 0.15, max: Infinity, centre: true })
        : "adopted" in value
          ? layoutLine(set, scriptRuns(set, oneLine(value.adopted)), box, { inset: 0.06, max: Infinity, centre: true })
          : layoutLine(set, splitRuns(set, oneLine(value.text), false), box, { inset: 0.1, max: TEXT_SIZE, centre: false });
    if (line) placed.push({ page, box, ...line });
  }
  const fonts = await embedFaces(
    pdf,
    set,
    placed.flatMap((p) => p.runs.map((r) => r.face)),
  );
  for (const p of placed) {
    let u = p.u;
    for (const run of p.runs) {
      if (run.text.trim()) {
        const at = toUser(p.box, u, p.v);
        p.page.drawText(run.text, { ...at, size: p.size, font: fonts.get(run.face)!, color: ink, rotate: degrees(p.box.rotate) });
      }
      u += widthOf(set, run, p.size);
    }
  }
}

/** A field's value is one line: line breaks and runs of spaces read as one space. */
const oneLine = (text: string) => text.replace(/\s+/gu, " ").trim();

/** Where a point of the box's displayed frame (u right, v up from its displayed bottom-left corner) is in user space. */
function toUser(box: PlacedBox, u: number, v: number): { x: number; y: number } {
  const [cos, sin] = ({ 0: [1, 0], 90: [0, 1], 180: [-1, 0], 270: [0, -1] } as const)[box.rotate];
  return { x: box.origin.x + u * cos - v * sin, y: box.origin.y + u * sin + v * cos };
}

/**
 * The size and position that put the runs inside the box on one line: at most `max` points, shrunk until the line's
 * width and its fonts' ascent-to-descent height (what a reader, and `pdftotext -bbox`, take as the words' extent) fit
 * within the box less `inset` (a fraction of its height, at most 2 points) on every side; vertically centred. Null
 * for nothing to draw.
 */
function layoutLine(
  set: FontSet,
  runs: Run[],
  box: PlacedBox,
  { inset, max, centre }: { inset: number; max: number; centre: boolean },
): Omit<Placed, "page" | "box"> | null {
  if (!runs.some((r) => r.text.trim())) return null;
  const faces = [...new Set(runs.map((r) => r.face))];
  const em = (face: Face, metric: "ascent" | "descent") => Math.abs(set.fonts[face][metric]) / set.fonts[face].unitsPerEm;
  const ascent = Math.max(...faces.map((f) => em(f, "ascent")));
  const descent = Math.max(...faces.map((f) => em(f, "descent")));
  const width = runs.reduce((sum, run) => sum + widthOf(set, run, 1), 0);
  const pad = Math.min(2, box.height * inset);
  const size = Math.min(max, (box.width - 2 * pad) / width, (box.height - 2 * pad) / (ascent + descent));
  if (!(size > 0)) return null;
  return {
    runs,
    size,
    u: centre ? (box.width - width * size) / 2 : pad,
    v: (box.height - (ascent + descent) * size) / 2 + descent * size,
  };
}
