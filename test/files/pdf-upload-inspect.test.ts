import { env } from "cloudflare:workers";
import { degrees, PDFDocument, StandardFonts } from "@pdfme/pdf-lib";
import { beforeAll, describe, expect, it } from "vitest";
import { md5, rc4 } from "../../src/files/pdf-decrypt";
import { fillAndFlatten } from "../../src/files/pdf-form";
import { inspectPdf, PdfRefused } from "../../src/files/pdf-inspect";
import { pdfTool, qpdfEncrypt } from "../helpers/pdf-tools";

const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
const ascii = (text: string) => new TextEncoder().encode(text);

/**
 * Three pages: A4 upright; US Letter with /Rotate 90; a 600×800 MediaBox whose CropBox is [50 100 550 700]. A text field
 * and a radio group on page 1, a checkbox on page 2, a dropdown on page 3, at known rectangles.
 */
async function formPdf(): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const one = pdf.addPage([595, 842]);
  one.drawText("Alpha disclosure", { x: 60, y: 780, size: 14, font });
  const two = pdf.addPage([612, 792]);
  two.setRotation(degrees(90));
  two.drawText("Bravo rotated", { x: 60, y: 300, size: 14, font });
  const three = pdf.addPage([600, 800]);
  three.setCropBox(50, 100, 500, 600);
  three.drawText("Charlie cropped", { x: 80, y: 600, size: 14, font });
  const form = pdf.getForm();
  form.createTextField("applicant.name").addToPage(one, { x: 100, y: 700, width: 200, height: 20, font, borderWidth: 0 });
  const choice = form.createRadioGroup("choice");
  choice.addOptionToPage("yes", one, { x: 100, y: 600, width: 15, height: 15, borderWidth: 0 });
  choice.addOptionToPage("no", one, { x: 150, y: 600, width: 15, height: 15, borderWidth: 0 });
  form.createCheckBox("agree").addToPage(two, { x: 100, y: 100, width: 20, height: 20, borderWidth: 0 });
  const color = form.createDropdown("color");
  color.addOptions(["Red", "Green"]);
  color.addToPage(three, { x: 100, y: 200, width: 150, height: 20, font, borderWidth: 0 });
  return pdf.save();
}

async function qpdf(pdf: Uint8Array, args: string[]): Promise<Uint8Array> {
  const r = await pdfTool("qpdf", pdf, [...args, "{in}", "{out}"]);
  expect(r.code, r.stderr).toBe(0);
  return r.out!;
}

async function textOf(pdf: Uint8Array): Promise<string> {
  const r = await pdfTool("pdftotext", pdf, ["-enc", "UTF-8", "{in}", "-"]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

async function refusalOf(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PdfRefused);
  return (err as PdfRefused).code;
}

describe("Uploaded PDFs inspected (src/files/pdf-inspect.ts, issue 44 part 1)", () => {
  let original: Uint8Array;
  beforeAll(async () => {
    original = await formPdf();
  });

  it("MD5 and RC4 give their published test vectors", () => {
    expect(hex(md5(ascii("")))).toBe("d41d8cd98f00b204e9800998ecf8427e");
    expect(hex(md5(ascii("The quick brown fox jumps over the lazy dog")))).toBe("9e107d9d372bb6826bd81d3542a419d6");
    expect(hex(md5(ascii("12345678901234567890123456789012345678901234567890123456789012345678901234567890")))).toBe(
      "57edf4a22be3c955ac49da2e2107b67a",
    );
    expect(hex(rc4(ascii("Key"), ascii("Plaintext")))).toBe("bbf316e8d940af0ad3");
    expect(hex(rc4(ascii("Wiki"), ascii("pedia")))).toBe("1021bf0420");
  });

  it("reads each page as displayed and each form field's box in percent of it", async () => {
    const { pages, formFields, restrictionsRemoved } = await inspectPdf(original);
    expect(restrictionsRemoved).toBe(false);
    expect(pages).toEqual([
      { crop: [0, 0, 595, 842], rotation: 0, width: 595, height: 842 },
      { crop: [0, 0, 612, 792], rotation: 90, width: 792, height: 612 },
      { crop: [50, 100, 550, 700], rotation: 0, width: 500, height: 600 },
    ]);
    const byName = (name: string) => formFields.filter((f) => f.name === name);
    const near = (box: { x: number; y: number; width: number; height: number }) => ({
      x: expect.closeTo(box.x, 2),
      y: expect.closeTo(box.y, 2),
      width: expect.closeTo(box.width, 2),
      height: expect.closeTo(box.height, 2),
    });
    // A4: x 100/595, y (842 − 720)/842.
    expect(byName("applicant.name")).toEqual([
      { name: "applicant.name", type: "text", page: 1, ...near({ x: 16.807, y: 14.489, width: 33.613, height: 2.375 }) },
    ]);
    expect(byName("choice").map((f) => [f.type, f.page, f.x])).toEqual([
      ["radio", 1, expect.closeTo(16.807, 2)],
      ["radio", 1, expect.closeTo(25.21, 2)],
    ]);
    // Rotated 90° clockwise: the displayed x runs along user y, the displayed y along user x.
    expect(byName("agree")).toEqual([
      { name: "agree", type: "checkbox", page: 2, ...near({ x: 12.626, y: 16.34, width: 2.525, height: 3.268 }) },
    ]);
    // Cropped: x (100 − 50)/500, y (700 − 220)/600.
    expect(byName("color")).toEqual([{ name: "color", type: "dropdown", page: 3, ...near({ x: 10, y: 80, width: 30, height: 3.333 }) }]);
  });

  /** qpdf's owner-only copies: RC4 40 (V1 R2), RC4 128 (V2 R3), AES-128 (V4 R4), AES-256 (V5 R6, and the older R5). */
  const ownerOnly: [string, (pdf: Uint8Array) => Promise<Uint8Array>][] = [
    ["RC4 40-bit", (pdf) => qpdfEncrypt(pdf, { user: "", owner: "owner-secret", bits: 40 })],
    ["RC4 128-bit", (pdf) => qpdfEncrypt(pdf, { user: "", owner: "owner-secret", bits: 128 })],
    ["AES 128-bit", (pdf) => qpdf(pdf, ["--allow-weak-crypto", "--encrypt", "", "owner-secret", "128", "--use-aes=y", "--"])],
    ["AES 256-bit", (pdf) => qpdfEncrypt(pdf, { user: "", owner: "owner-secret", bits: 256 })],
    ["AES 256-bit R5", (pdf) => qpdf(pdf, ["--allow-weak-crypto", "--encrypt", "", "owner-secret", "256", "--force-R5", "--"])],
  ];
  for (const [kind, encrypt] of ownerOnly) {
    it(`accepts an owner-password-only PDF (${kind}) as an unencrypted re-import, text and form intact`, async () => {
      const locked = await encrypt(original);
      const { pdf, pages, formFields, restrictionsRemoved } = await inspectPdf(locked);
      expect(restrictionsRemoved).toBe(true);
      expect(pages.map((p) => [p.width, p.height, p.rotation])).toEqual([
        [595, 842, 0],
        [792, 612, 90],
        [500, 600, 0],
      ]);
      expect(formFields.map((f) => [f.name, f.type, f.page])).toEqual([
        ["applicant.name", "text", 1],
        ["choice", "radio", 1],
        ["choice", "radio", 1],
        ["agree", "checkbox", 2],
        ["color", "dropdown", 3],
      ]);
      const saved = await pdf.save();
      const check = await pdfTool("qpdf", saved, ["--check", "{in}"]);
      expect(check.code, check.stdout + check.stderr).toBe(0);
      expect(check.stdout).toContain("File is not encrypted");
      const text = await textOf(saved);
      for (const word of ["Alpha disclosure", "Bravo rotated", "Charlie cropped"]) expect(text).toContain(word);
      // Its form still works: filled and flattened like any upload.
      const reopened = await PDFDocument.load(saved);
      expect((await fillAndFlatten(env, reopened, { "applicant.name": "Owner Only", color: "Green" })).issues).toEqual([]);
      expect(await textOf(await reopened.save())).toContain("Owner Only");
    });
  }

  it("refuses a PDF that needs a password to open, garbage, a truncated file, and more pages than allowed", async () => {
    const locked = await qpdfEncrypt(original, { user: "user-secret", owner: "owner-secret", bits: 256 });
    expect(await refusalOf(inspectPdf(locked))).toBe("pdf_encrypted");
    const locked128 = await qpdfEncrypt(original, { user: "user-secret", owner: "owner-secret", bits: 128 });
    expect(await refusalOf(inspectPdf(locked128))).toBe("pdf_encrypted");
    expect(await refusalOf(inspectPdf(ascii("hello, this is not a PDF at all")))).toBe("pdf_invalid");
    expect(await refusalOf(inspectPdf(ascii("%PDF-1.7\n% nothing else\n")))).toBe("pdf_invalid");
    expect(await refusalOf(inspectPdf(original.subarray(0, Math.floor(original.length * 0.4))))).toBe("pdf_invalid");
    const long = await PDFDocument.create();
    for (let i = 0; i < 501; i++) long.addPage([200, 200]);
    const bytes = await long.save();
    expect(await refusalOf(inspectPdf(bytes, { maxPages: 500 }))).toBe("pdf_too_long");
    expect((await inspectPdf(bytes, { maxPages: 501 })).pages).toHaveLength(501);
  });
});

describe("Filling and flattening an upload's own form (src/files/pdf-form.ts, issue 44 part 2)", () => {
  it("fills text in any script and a checkbox, then flattens every field", async () => {
    const { pdf } = await inspectPdf(await formPdf());
    const { issues } = await fillAndFlatten(env, pdf, { "applicant.name": "山田太郎", agree: true, choice: "no" });
    expect(issues).toEqual([]);
    const saved = await pdf.save();
    expect(await textOf(saved)).toContain("山田太郎");
    const check = await pdfTool("qpdf", saved, ["--check", "{in}"]);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect((await PDFDocument.load(saved)).getForm().getFields()).toEqual([]);
    const greek = (await inspectPdf(await formPdf())).pdf;
    expect((await fillAndFlatten(env, greek, { "applicant.name": "Ελένη" })).issues).toEqual([]);
    const greekSaved = await greek.save();
    expect(await textOf(greekSaved)).toContain("Ελένη");
    const fonts = await pdfTool("pdffonts", greekSaved, ["{in}"]);
    expect(fonts.stdout).toMatch(/[A-Z]{6}\+DejaVuSans/);
  });

  it("lists every unknown name and wrong-typed value, and then changes nothing", async () => {
    const { pdf } = await inspectPdf(await formPdf());
    const { issues } = await fillAndFlatten(env, pdf, {
      "applicant.nam": "typo",
      "applicant.name": true,
      agree: "yes",
      choice: "maybe",
      color: "Blue",
    });
    expect(issues.map((i) => i.name).sort()).toEqual(["agree", "applicant.nam", "applicant.name", "choice", "color"]);
    expect(issues.find((i) => i.name === "color")!.message).toContain("Red");
    expect(pdf.getForm().getFields()).toHaveLength(4);
  });
});
