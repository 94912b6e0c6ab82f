import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { embedFaces, loadFonts } from "../../src/files/pdf-fonts";
import { pdfLib } from "../../src/files/pdf-lib";
import { findTextTags, removeTextTags } from "../../src/files/pdf-tags";
import { extractPdfText } from "../../src/files/pdf-text";
import { pdfTool, placedWords } from "../helpers/pdf-tools";

// Issue 45 part 2, the finder and the rewriting on their own: tags written as PDF producers split them (across TJ
// strings with kerning between, across Tj operators, after ' and "), found whole and taken out of those operators
// with the text after them left where it stood.

const CONTENT = [
  "BT /F1 12 Tf 1 0 0 1 50 700 Tm [(Before {{sig) -20 (nature;ro) 15 (le=a}} after)] TJ ET",
  "BT /F1 12 Tf 14 TL 50 650 Td (Line one) Tj (next {{text;role=b}} later) ' 2 1 (quoted {{date;role=c}} tail) \" ET",
  "BT /F1 12 Tf 50 580 Td ({{) Tj (checkbox;role=d) Tj (}}) Tj ( after three) Tj ET",
  "BT /F1 12 Tf 110 Tz 50 540 Td <7b7b7261> Tj (dio;role=e;options=Yes|No}} scaled) Tj ET",
].join("\n");

async function splitTagsPdf() {
  const { PDFDocument, PDFName, StandardFonts } = await pdfLib();
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const page = pdf.addPage([612, 792]);
  page.node.setFontDictionary(PDFName.of("F1"), font.ref);
  page.node.set(PDFName.of("Contents"), pdf.context.register(pdf.context.flateStream(CONTENT)));
  return pdf.save();
}

const LETTER = [{ crop: [0, 0, 612, 792] as [number, number, number, number], rotation: 0 as const }];

describe("files/pdf-tags", () => {
  it("finds tags split over strings and operators, and takes them out leaving the rest in place", async () => {
    const original = await splitTagsPdf();
    const { PDFDocument } = await pdfLib();
    const pdf = await PDFDocument.load(original);
    const { tags, problems } = await findTextTags(pdf, LETTER);
    expect(problems).toEqual([]);
    expect(tags.map((t) => [t.text, t.field.type, t.field.role])).toEqual([
      ["{{signature;role=a}}", "signature", "a"],
      ["{{text;role=b}}", "text", "b"],
      ["{{date;role=c}}", "date", "c"],
      ["{{checkbox;role=d}}", "checkbox", "d"],
      ["{{radio;role=e;options=Yes|No}}", "radio", "e"],
    ]);
    expect(tags[4]!.field.options).toEqual(["Yes", "No"]);

    await removeTextTags(pdf, tags);
    const stored = await pdf.save();
    const text = await extractPdfText(await PDFDocument.load(stored), 10_000);
    expect(text).not.toContain("{{");
    const poppler = await pdfTool("pdftotext", stored, ["-enc", "UTF-8", "{in}", "-"]);
    expect(poppler.stdout).not.toMatch(/\{\{|\}\}|role=/);
    for (const kept of ["Before", "after", "Line one", "next", "later", "quoted", "tail", "three", "scaled"])
      expect(poppler.stdout).toContain(kept);
    // What followed a tag stands where it stood, to a hundredth of a point.
    const [was, is] = await Promise.all([placedWords(original), placedWords(stored)]);
    for (const word of ["after", "later", "tail", "three", "scaled"]) {
      const [a, b] = [was, is].map((words) => words.find((w) => w.text === word)!);
      expect(b, word).toBeDefined();
      expect(Math.abs(a!.xMin - b!.xMin) + Math.abs(a!.yMin - b!.yMin), word).toBeLessThan(0.01);
    }
    // Each tag's box: where poppler saw the tag's word in the original.
    for (const tag of tags) {
      const w = was.find((word) => word.text === tag.text);
      expect(w, tag.text).toBeDefined();
      expect(tag.field.x).toBeCloseTo((w!.xMin / 612) * 100, 0);
      expect(tag.field.y).toBeCloseTo((w!.yMin / 792) * 100, 0);
      expect(tag.field.x + tag.field.width).toBeCloseTo((w!.xMax / 612) * 100, 0);
    }
  });

  it("reads and removes tags in an embedded subset font (two-byte codes, /ToUnicode), as word processors write them", async () => {
    const { PDFDocument } = await pdfLib();
    const pdf = await PDFDocument.create();
    const font = (await embedFaces(pdf, await loadFonts(env), ["regular"])).get("regular")!;
    pdf.addPage([612, 792]).drawText("Ελένη signs {{signature;role=seller}} here", { x: 50, y: 700, size: 12, font });
    const original = await pdf.save();
    const loaded = await PDFDocument.load(original);
    const { tags, problems } = await findTextTags(loaded, LETTER);
    expect(problems).toEqual([]);
    expect(tags.map((t) => t.text)).toEqual(["{{signature;role=seller}}"]);
    await removeTextTags(loaded, tags);
    const stored = await loaded.save();
    const [was, is] = await Promise.all([placedWords(original), placedWords(stored)]);
    expect(is.map((w) => w.text)).toEqual(["Ελένη", "signs", "here"]);
    const here = (words: typeof was) => words.find((w) => w.text === "here")!;
    expect(Math.abs(here(is).xMin - here(was).xMin)).toBeLessThan(0.01);
    const tag = was.find((w) => w.text.startsWith("{{"))!;
    expect(tags[0]!.field.x).toBeCloseTo((tag.xMin / 612) * 100, 0);
    expect(tags[0]!.field.x + tags[0]!.field.width).toBeCloseTo((tag.xMax / 612) * 100, 0);
  });

  it("names what it cannot read and finds nothing in a PDF without tags", async () => {
    const { PDFDocument, StandardFonts } = await pdfLib();
    const pdf = await PDFDocument.create();
    const font = await pdf.embedFont(StandardFonts.Helvetica);
    pdf.addPage([612, 792]).drawText("No tags here, only {braces}.", { x: 50, y: 700, size: 12, font });
    const loaded = await PDFDocument.load(await pdf.save());
    expect(await findTextTags(loaded, LETTER)).toEqual({ tags: [], problems: [] });
  });
});
