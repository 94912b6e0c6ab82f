import { env } from "cloudflare:workers";
import {
  concatTransformationMatrix,
  degrees,
  PDFDict,
  PDFDocument,
  PDFName,
  type PDFNumber,
  PDFRawStream,
  type PDFRef,
} from "@pdfme/pdf-lib";
import { describe, expect, it } from "vitest";
import { loadFonts, scriptRuns } from "../../src/files/pdf-fonts";
import { displayedSize, type PageGeometry, placeBox } from "../../src/files/pdf-geometry";
import { type StampField, stampFields } from "../../src/signatures/stamp";
import { pdfTool, placedWords } from "../helpers/pdf-tools";

/** The pages the fields land on: plain, rotated each way, and a CropBox offset inside a larger MediaBox. */
const PAGES: { media: [number, number]; crop?: [number, number, number, number]; rotation: PageGeometry["rotation"] }[] = [
  { media: [612, 792], rotation: 0 },
  { media: [612, 792], rotation: 0 },
  { media: [612, 792], rotation: 90 },
  { media: [800, 1000], crop: [100, 150, 700, 950], rotation: 0 },
  { media: [612, 792], crop: [30, 40, 580, 760], rotation: 270 },
  { media: [595, 842], rotation: 180 },
];

const geometry = (p: (typeof PAGES)[number]): PageGeometry => ({ crop: p.crop ?? [0, 0, ...p.media], rotation: p.rotation });

async function sourcePdf(): Promise<PDFDocument> {
  const pdf = await PDFDocument.create();
  for (const p of PAGES) {
    const page = pdf.addPage(p.media);
    if (p.crop) page.setCropBox(p.crop[0], p.crop[1], p.crop[2] - p.crop[0], p.crop[3] - p.crop[1]);
    page.setRotation(degrees(p.rotation));
    // Content that leaves its transformation in place (no q/Q): the stamp must not inherit it.
    page.pushOperators(concatTransformationMatrix(3, 0, 0, 3, 40, 40));
    page.drawRectangle({ x: 0, y: 0, width: 5, height: 5 });
  }
  // Read back, as the seal reads the envelope's PDF.
  return PDFDocument.load(await pdf.save());
}

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc32 = (bytes: Uint8Array) => {
  let c = 0xffffffff;
  for (const b of bytes) c = crcTable[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};
const deflate = async (bytes: Uint8Array) =>
  new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(new CompressionStream("deflate"))).arrayBuffer());
const inflate = async (bytes: Uint8Array) =>
  new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"))).arrayBuffer());

/** A drawn signature as the signing page sends it: an RGBA PNG, a dark stroke on transparency, twice as wide as high. */
async function signaturePng(width: number, height: number): Promise<Uint8Array> {
  const raw = new Uint8Array(height * (1 + width * 4));
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const at = y * (1 + width * 4) + 1 + x * 4;
      if (Math.abs(x / 2 - y) < 1.5) raw.set([20, 30, 120, 255], at);
    }
  const chunk = (type: string, data: Uint8Array) => {
    const body = new Uint8Array([...new TextEncoder().encode(type), ...data]);
    const out = new Uint8Array(12 + data.length);
    const view = new DataView(out.buffer);
    view.setUint32(0, data.length);
    out.set(body, 4);
    view.setUint32(8 + data.length, crc32(body));
    return out;
  };
  const ihdr = new Uint8Array(13);
  new DataView(ihdr.buffer).setUint32(0, width);
  new DataView(ihdr.buffer).setUint32(4, height);
  ihdr.set([8, 6, 0, 0, 0], 8);
  const parts = [
    new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk("IHDR", ihdr),
    chunk("IDAT", await deflate(raw)),
    chunk("IEND", new Uint8Array()),
  ];
  return new Uint8Array(parts.flatMap((p) => [...p]));
}

type Matrix = [number, number, number, number, number, number];
const times = (m: Matrix, n: Matrix): Matrix => [
  m[0] * n[0] + m[1] * n[2],
  m[0] * n[1] + m[1] * n[3],
  m[2] * n[0] + m[3] * n[2],
  m[2] * n[1] + m[3] * n[3],
  m[4] * n[0] + m[5] * n[2] + n[4],
  m[4] * n[1] + m[5] * n[3] + n[5],
];

/** Where each image a page draws lands in user space (its unit square through the CTM at `Do`), by the content streams. */
async function imagesDrawn(pdf: PDFDocument, index: number) {
  const page = pdf.getPage(index);
  const contents = page.node.Contents();
  const refs = contents && "asArray" in contents ? contents.asArray() : [];
  const xobjects = page.node.Resources()?.lookupMaybe(PDFName.of("XObject"), PDFDict);
  const found: { name: string; width: number; height: number; box: { x0: number; y0: number; x1: number; y1: number } }[] = [];
  let ctm: Matrix = [1, 0, 0, 1, 0, 0];
  const stack: Matrix[] = [];
  for (const ref of refs) {
    const stream = pdf.context.lookup(ref as PDFRef) as PDFRawStream;
    const flate = stream.dict.get(PDFName.of("Filter")) === PDFName.of("FlateDecode");
    const text = new TextDecoder("latin1").decode(flate ? await inflate(stream.contents) : stream.contents);
    const operands: string[] = [];
    for (const token of text.match(/\/[^\s/[\]()<>]+|[^\s/[\]()<>]+/g) ?? []) {
      if (token === "q") stack.push(ctm);
      else if (token === "Q") ctm = stack.pop()!;
      else if (token === "cm") ctm = times(operands.slice(-6).map(Number) as Matrix, ctm);
      else if (token === "Do") {
        const name = operands.at(-1)!.slice(1);
        const image = xobjects?.lookup(PDFName.of(name));
        if (!(image instanceof PDFRawStream)) continue;
        if (image.dict.get(PDFName.of("Subtype")) !== PDFName.of("Image")) continue;
        const corners = [
          [0, 0],
          [1, 0],
          [0, 1],
          [1, 1],
        ].map(([u, v]) => [ctm[0] * u! + ctm[2] * v! + ctm[4], ctm[1] * u! + ctm[3] * v! + ctm[5]] as const);
        const xs = corners.map((c) => c[0]);
        const ys = corners.map((c) => c[1]);
        const size = (key: string) => (image.dict.get(PDFName.of(key)) as PDFNumber).asNumber();
        found.push({
          name,
          width: size("Width"),
          height: size("Height"),
          box: { x0: Math.min(...xs), y0: Math.min(...ys), x1: Math.max(...xs), y1: Math.max(...ys) },
        });
      }
      operands.push(token);
    }
  }
  return found;
}

/**
 * The PDF as a reader shows it, for pdftotext: a viewer shows the CropBox, pdftotext (without -cropbox) places words on
 * the MediaBox, so the copy read has its MediaBox cut to the CropBox (nothing drawn moves).
 */
async function asDisplayed(bytes: Uint8Array): Promise<Uint8Array> {
  const pdf = await PDFDocument.load(bytes);
  for (const page of pdf.getPages()) {
    const crop = page.getCropBox();
    page.setMediaBox(crop.x, crop.y, crop.width, crop.height);
  }
  return pdf.save();
}

const field = (id: string, page: number, box: [number, number, number, number], value: StampField["value"]): StampField => ({
  id,
  page,
  x: box[0],
  y: box[1],
  width: box[2],
  height: box[3],
  value,
});

/** What `pdftotext` must read inside each field's box, in order. */
const FIELDS: { field: StampField; reads: string }[] = [
  { field: field("price", 1, [10, 10, 30, 3], { text: "1 250 000" }), reads: "1 250 000" },
  { field: field("closing", 1, [50, 10, 20, 3], { text: "2026-12-06" }), reads: "2026-12-06" },
  { field: field("greek", 1, [10, 30, 45, 6], { adopted: "Ελένη Παπαδοπούλου" }), reads: "Ελένη Παπαδοπούλου" },
  { field: field("latin", 1, [60, 30, 30, 6], { adopted: "Jane Q. Doe-Smith" }), reads: "Jane Q. Doe-Smith" },
  {
    field: field("long", 1, [10, 50, 12, 2], { text: "A remark far too long for\nits narrow box, shrunk to fit" }),
    reads: "A remark far too long for its narrow box, shrunk to fit",
  },
  { field: field("empty", 1, [10, 70, 20, 3], null), reads: "" },
  { field: field("agreed", 2, [10, 20, 4, 3], { checked: true }), reads: "✓" },
  { field: field("declined", 2, [20, 20, 4, 3], { checked: false }), reads: "" },
  { field: field("kanji", 2, [10, 40, 25, 4], { text: "山田太郎" }), reads: "山田太郎" },
  { field: field("kanji-sig", 2, [40, 40, 30, 6], { adopted: "山田太郎" }), reads: "山田太郎" },
  { field: field("drawn", 2, [10, 60, 30, 8], { image: "sig/drawn.png" }), reads: "" },
  { field: field("rotated", 3, [15, 25, 40, 4], { text: "Rotated value" }), reads: "Rotated value" },
  { field: field("rotated-box", 3, [60, 25, 3, 3], { checked: true }), reads: "✓" },
  { field: field("rotated-sig", 3, [15, 50, 40, 8], { adopted: "Zoë Żółć" }), reads: "Zoë Żółć" },
  { field: field("initials", 3, [60, 50, 10, 10], { image: "sig/drawn.png" }), reads: "" },
  { field: field("cropped", 4, [5, 5, 40, 3], { text: "Cropped page value" }), reads: "Cropped page value" },
  { field: field("cropped-box", 4, [90, 90, 5, 4], { checked: true }), reads: "✓" },
  { field: field("cropped-sig", 4, [40, 70, 50, 8], { adopted: "Jane Q. Doe-Smith" }), reads: "Jane Q. Doe-Smith" },
  { field: field("turned", 5, [20, 10, 50, 4], { text: "Turned 270 and cropped" }), reads: "Turned 270 and cropped" },
  { field: field("turned-box", 5, [80, 80, 4, 4], { checked: true }), reads: "✓" },
  { field: field("upside", 6, [30, 80, 40, 3], { text: "Upside down page" }), reads: "Upside down page" },
  { field: field("upside-box", 6, [5, 5, 3, 3], { checked: true }), reads: "✓" },
];

describe("stampFields: recipients' values drawn into the sealed copy (issue 44 part 5)", () => {
  it("draws every value inside its box, upright, on plain, rotated and cropped pages, in embedded subset fonts", async () => {
    const png = await signaturePng(40, 20);
    const pdf = await sourcePdf();
    const pages = PAGES.map(geometry);
    const asked: string[] = [];
    await stampFields(
      env,
      pdf,
      pages,
      FIELDS.map((f) => f.field),
      {
        images: async (key) => {
          asked.push(key);
          return key === "sig/drawn.png" ? png : null;
        },
      },
    );
    const bytes = await pdf.save();

    const words = await placedWords(await asDisplayed(bytes));
    for (const [i, g] of pages.entries()) {
      const onPage = words.filter((w) => w.page === i + 1);
      // pdftotext's words are on the page turned by /Rotate; the size it reports is the box's before turning.
      const size = displayedSize(g);
      expect(onPage[0]).toMatchObject({ pageWidth: g.crop[2] - g.crop[0], pageHeight: g.crop[3] - g.crop[1] });
      const expected = FIELDS.filter((f) => f.field.page === i + 1);
      const within = new Set<(typeof onPage)[number]>();
      for (const { field: f, reads } of expected) {
        const box = {
          x0: (f.x / 100) * size.width,
          y0: (f.y / 100) * size.height,
          x1: ((f.x + f.width) / 100) * size.width,
          y1: ((f.y + f.height) / 100) * size.height,
        };
        const inside = onPage.filter((w) => {
          const [cx, cy] = [(w.xMin + w.xMax) / 2, (w.yMin + w.yMax) / 2];
          return cx > box.x0 && cx < box.x1 && cy > box.y0 && cy < box.y1;
        });
        expect(inside.map((w) => w.text).join(" "), f.id).toBe(reads);
        for (const w of inside) {
          within.add(w);
          expect(w.xMin, `${f.id}: ${w.text}`).toBeGreaterThanOrEqual(box.x0 - 1);
          expect(w.xMax, `${f.id}: ${w.text}`).toBeLessThanOrEqual(box.x1 + 1);
          expect(w.yMin, `${f.id}: ${w.text}`).toBeGreaterThanOrEqual(box.y0 - 1);
          expect(w.yMax, `${f.id}: ${w.text}`).toBeLessThanOrEqual(box.y1 + 1);
          // Upright as displayed: a long word reads along the displayed page's width (a turned one would stand tall).
          if ([...w.text].length >= 6) expect(w.xMax - w.xMin, `${f.id}: ${w.text}`).toBeGreaterThan(w.yMax - w.yMin);
        }
      }
      // Nothing drawn outside the boxes.
      expect(onPage.filter((w) => !within.has(w))).toEqual([]);
    }

    // A roomy text box keeps a form's size; a long value in a narrow one shrinks (its words are lower).
    const height = (text: string) => words.find((w) => w.text === text)!;
    const price = height("250");
    const remark = height("remark");
    expect(price.yMax - price.yMin).toBeGreaterThan(2 * (remark.yMax - remark.yMin));

    const fonts = await pdfTool("pdffonts", bytes, ["{in}"]);
    expect(fonts.code, fonts.stderr).toBe(0);
    const rows = fonts.stdout
      .split("\n")
      .slice(2)
      .filter((l) => l.trim())
      .map((l) => /^(\S+)\s.*\s(yes|no)\s+(yes|no)\s+(yes|no)\s+\d+\s+\d+\s*$/.exec(l)!);
    const names = rows.map((r) => r[1]!.replace(/^[A-Z]{6}\+/, "")).sort();
    expect(names).toEqual(["DejaVuSans", "DkgHandwriting-Oblique", "IPAGothic"]);
    for (const r of rows) {
      expect(r[1], r[0]).toMatch(/^[A-Z]{6}\+/);
      expect([r[2], r[3], r[4]], r[0]).toEqual(["yes", "yes", "yes"]);
    }

    // The drawn signature: one image, embedded once, on pages 2 and 3, fitted into each box keeping its 2:1 aspect.
    expect(asked).toEqual(["sig/drawn.png"]);
    const saved = await PDFDocument.load(bytes);
    const drawn = FIELDS.filter((f) => f.field.value && "image" in f.field.value).map((f) => f.field);
    for (const f of drawn) {
      const [image, ...more] = await imagesDrawn(saved, f.page - 1);
      expect(more).toEqual([]);
      expect(image).toMatchObject({ width: 40, height: 20 });
      const placed = placeBox(pages[f.page - 1]!, f);
      const { x0, y0, x1, y1 } = image!.box;
      const rect = placed.rect;
      for (const [v, min, max] of [
        [x0, rect.x, rect.x + rect.width],
        [x1, rect.x, rect.x + rect.width],
        [y0, rect.y, rect.y + rect.height],
        [y1, rect.y, rect.y + rect.height],
      ] as const) {
        expect(v).toBeGreaterThanOrEqual(min - 0.01);
        expect(v).toBeLessThanOrEqual(max + 0.01);
      }
      // As displayed: twice as wide as high, as wide (or as high) as the box allows, centred.
      const turned = placed.rotate === 90 || placed.rotate === 270;
      const [w, h] = turned ? [y1 - y0, x1 - x0] : [x1 - x0, y1 - y0];
      expect(w / h).toBeCloseTo(2, 5);
      expect(Math.max(w / placed.width, h / placed.height)).toBeCloseTo(1, 5);
      expect((x0 + x1) / 2).toBeCloseTo(rect.x + rect.width / 2, 5);
      expect((y0 + y1) / 2).toBeCloseTo(rect.y + rect.height / 2, 5);
    }
    // Its alpha is the image's soft mask: two image objects in the file, one of them drawn.
    const images = saved.context
      .enumerateIndirectObjects()
      .filter(([, o]) => o instanceof PDFRawStream && o.dict.get(PDFName.of("Subtype")) === PDFName.of("Image"));
    const masks = images.flatMap(([, o]) => (o as PDFRawStream).dict.get(PDFName.of("SMask")) ?? []);
    expect(images).toHaveLength(2);
    expect(masks).toHaveLength(1);
  });

  it("refuses a drawn signature it cannot read, and a field beyond the document, rather than seal without it", async () => {
    const pdf = await sourcePdf();
    const pages = PAGES.map(geometry);
    const images = async () => null;
    await expect(stampFields(env, pdf, pages, [field("gone", 1, [10, 10, 20, 5], { image: "sig/gone.png" })], { images })).rejects.toThrow(
      /sig\/gone\.png/,
    );
    await expect(stampFields(env, pdf, pages, [field("far", 9, [10, 10, 20, 5], { text: "x" })], { images })).rejects.toThrow(/page 9/);
  });

  it("writes an adopted signature in the script face word by word, falling back to the Unicode fonts", async () => {
    const set = await loadFonts(env);
    expect(scriptRuns(set, "Jane Żółć 山田太郎 Ελένη")).toEqual([
      { face: "script", text: "Jane " },
      { face: "regular", text: "Żółć " },
      { face: "cjk", text: "山田太郎 " },
      { face: "regular", text: "Ελένη" },
    ]);
  });
});
