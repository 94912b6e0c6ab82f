import type { PDFAcroTerminal, PDFArray, PDFDict, PDFDocument, PDFNumber, PDFObject, PDFPage, PDFPageLeaf } from "@pdfme/pdf-lib";
import { decryptPdf } from "./pdf-decrypt";
import { type PageGeometry, displayedSize, normalizeRotation, percentBoxOf } from "./pdf-geometry";
import { pdfLib } from "./pdf-lib";

/**
 * What an uploaded PDF is (issue 44 part 1): its pages as displayed, its own form fields and where they sit, or why
 * it is refused. A PDF with only an owner password (edit restrictions, no password to open) is accepted: decrypted,
 * and its pages re-imported into a document without encryption.
 */

export type PdfRefusal = "pdf_invalid" | "pdf_encrypted" | "pdf_too_long";

/** Why an upload is refused, with a message its sender can act on; the route answers 422 with `code`. */
export class PdfRefused extends Error {
  constructor(
    readonly code: PdfRefusal,
    message: string,
  ) {
    super(message);
    this.name = "PdfRefused";
  }
}

export type FormFieldType = "text" | "checkbox" | "radio" | "dropdown" | "signature";

/** One widget of one of the PDF's own form fields: its fully qualified name, its page (from 1) and its box in percent. */
export interface PdfFormField {
  name: string;
  type: FormFieldType;
  page: number;
  x: number;
  y: number;
  width: number;
  height: number;
}

/** A page: its size in points as displayed, and the geometry placing boxes on it needs. */
export type InspectedPage = PageGeometry & { width: number; height: number };

export interface InspectedPdf {
  pdf: PDFDocument;
  pages: InspectedPage[];
  formFields: PdfFormField[];
  /** The upload had an owner password: `pdf` is its unencrypted re-import. */
  restrictionsRemoved: boolean;
}

/** Issue 44 part 1: more pages than this is refused. */
export const MAX_PAGES = 500;

type Lib = Awaited<ReturnType<typeof pdfLib>>;

const DAMAGED = "This file is not a PDF, or it is damaged: it could not be read.";

/** Runs a step of reading the PDF; whatever pdf-lib throws there means the file is damaged. */
async function reading<T>(step: () => Promise<T> | T): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (err instanceof PdfRefused) throw err;
    throw new PdfRefused("pdf_invalid", DAMAGED);
  }
}

/** PDF 32000-1 7.5.2: the header; readers accept it within the first 1024 bytes. */
function hasHeader(bytes: Uint8Array): boolean {
  const head = new TextDecoder("latin1").decode(bytes.subarray(0, 1024));
  return head.includes("%PDF-");
}

/**
 * Reads an upload, or refuses it: not a PDF or damaged (no header, unparsable, no pages, a page whose content is
 * missing or does not decode) → pdf_invalid; needs a password to open → pdf_encrypted; over `maxPages` → pdf_too_long
 * (counted before any page is read or copied). The page count is checked before the owner-only re-import, the costly step.
 */
export async function inspectPdf(bytes: Uint8Array, opts: { maxPages?: number } = {}): Promise<InspectedPdf> {
  const maxPages = opts.maxPages ?? MAX_PAGES;
  if (!hasHeader(bytes)) throw new PdfRefused("pdf_invalid", "This file is not a PDF.");
  const lib = await pdfLib();
  const loaded = await reading(() => lib.PDFDocument.load(bytes, { ignoreEncryption: true, updateMetadata: false }));
  let pdf = loaded;
  if (loaded.isEncrypted) {
    const decrypted = await reading(() => decryptPdf(bytes, loaded));
    if (!decrypted) throw new PdfRefused("pdf_encrypted", "This PDF needs a password to open. Upload a copy without the password.");
    pdf = decrypted;
  }
  const count = await reading(() => pdf.getPageCount());
  if (count === 0) throw new PdfRefused("pdf_invalid", "This PDF has no pages.");
  if (count > maxPages) throw new PdfRefused("pdf_too_long", `This PDF has ${count} pages; at most ${maxPages} can be signed.`);
  if (loaded.isEncrypted) pdf = await reading(() => reimport(lib, pdf));
  return reading(() => {
    const pages = pdf.getPages().map((page, i) => inspectPage(lib, page, i + 1));
    return { pdf, pages, formFields: formFieldsOf(lib, pdf, pages), restrictionsRemoved: loaded.isEncrypted };
  });
}

/**
 * The decrypted pages copied into a new document, with the form: pages by reference, so that whatever points at a page
 * (a widget's /P, a link) lands on its copy, then the AcroForm through the same copier. /Encrypt, never referenced by
 * an object, stays behind. An XFA form stays behind too: readers would show it instead of the pages being signed.
 */
async function reimport(lib: Lib, source: PDFDocument): Promise<PDFDocument> {
  const target = await lib.PDFDocument.create({ updateMetadata: false });
  const copier = lib.PDFObjectCopier.for(source.context, target.context);
  for (const page of source.getPages()) {
    const ref = copier.copy(page.ref);
    target.addPage(lib.PDFPage.of(target.context.lookup(ref) as PDFPageLeaf, ref, target));
  }
  const acroForm = source.catalog.get(lib.PDFName.of("AcroForm"));
  if (acroForm) {
    const copy = target.context.lookup(copier.copy(acroForm));
    if (copy instanceof lib.PDFDict) {
      copy.delete(lib.PDFName.of("XFA"));
      target.catalog.set(lib.PDFName.of("AcroForm"), copy);
    }
  }
  return target;
}

/** A rectangle's four numbers, ordered [x0, y0, x1, y1]; undefined when it is not one or has no area. */
function boxOf(lib: Lib, value: PDFObject | undefined, within?: PDFDict): [number, number, number, number] | undefined {
  const array = value && within ? within.context.lookup(value) : value;
  if (!(array instanceof lib.PDFArray) || array.size() !== 4) return undefined;
  const n = [0, 1, 2, 3].map((i) => array.lookup(i));
  if (!n.every((v) => v instanceof lib.PDFNumber)) return undefined;
  const [a, b, c, d] = n.map((v) => (v as PDFNumber).asNumber()) as [number, number, number, number];
  const box: [number, number, number, number] = [Math.min(a, c), Math.min(b, d), Math.max(a, c), Math.max(b, d)];
  return box[2] > box[0] && box[3] > box[1] ? box : undefined;
}

/** US Letter: what readers assume for a page without a MediaBox. */
const LETTER: [number, number, number, number] = [0, 0, 612, 792];

/**
 * A page's geometry (the CropBox clipped to the MediaBox, as readers show it) and a check that its content can be
 * read: every content stream must be there and decode.
 */
function inspectPage(lib: Lib, page: PDFPage, number: number): InspectedPage {
  const { node } = page;
  const media = boxOf(lib, node.getInheritableAttribute(lib.PDFName.of("MediaBox")), node) ?? LETTER;
  const cropped = boxOf(lib, node.getInheritableAttribute(lib.PDFName.of("CropBox")), node) ?? media;
  const clipped: [number, number, number, number] = [
    Math.max(cropped[0], media[0]),
    Math.max(cropped[1], media[1]),
    Math.min(cropped[2], media[2]),
    Math.min(cropped[3], media[3]),
  ];
  const crop = clipped[2] > clipped[0] && clipped[3] > clipped[1] ? clipped : media;
  const rotate = node.getInheritableAttribute(lib.PDFName.of("Rotate"));
  const rotation = normalizeRotation(rotate instanceof lib.PDFNumber ? rotate.asNumber() : 0);
  const contents = node.get(lib.PDFName.of("Contents"));
  if (contents) {
    const streams = node.context.lookup(contents);
    const parts = streams instanceof lib.PDFArray ? streams.asArray().map((part) => node.context.lookup(part)) : [streams];
    for (const part of parts) {
      if (!(part instanceof lib.PDFRawStream))
        throw new PdfRefused("pdf_invalid", `Page ${number} of this PDF is damaged: its content is missing.`);
      lib.decodePDFRawStream(part).decode();
    }
  }
  const geometry: PageGeometry = { crop, rotation };
  return { ...geometry, ...displayedSize(geometry) };
}

/** The kinds of field the API names; a push button or a non-terminal node is none of them. */
function fieldTypeOf(lib: Lib, field: unknown): FormFieldType | undefined {
  if (field instanceof lib.PDFAcroText) return "text";
  if (field instanceof lib.PDFAcroCheckBox) return "checkbox";
  if (field instanceof lib.PDFAcroRadioButton) return "radio";
  if (field instanceof lib.PDFAcroComboBox || field instanceof lib.PDFAcroListBox) return "dropdown";
  if (field instanceof lib.PDFAcroSignature) return "signature";
  return undefined;
}

/**
 * Every widget of every AcroForm field, on the page whose /Annots holds it (what a reader shows; /P when none does),
 * its /Rect as a box in percent of that page as displayed. Read through the AcroForm dictionary, not `pdf.getForm()`,
 * which would add a form to a PDF without one and drop an XFA form: inspecting changes nothing.
 */
function formFieldsOf(lib: Lib, pdf: PDFDocument, pages: InspectedPage[]): PdfFormField[] {
  const acroForm = pdf.catalog.getAcroForm();
  if (!acroForm) return [];
  const pageOfWidget = new Map<PDFObject, number>();
  const pageOfRef = new Map<PDFObject, number>();
  pdf.getPages().forEach((page, i) => {
    pageOfRef.set(page.ref, i);
    const annots: PDFArray | undefined = page.node.Annots();
    for (let j = 0; j < (annots?.size() ?? 0); j++) {
      const annot = annots!.lookup(j);
      if (annot && !pageOfWidget.has(annot)) pageOfWidget.set(annot, i);
    }
  });
  const fields: PdfFormField[] = [];
  for (const [field] of acroForm.getAllFields()) {
    const type = fieldTypeOf(lib, field);
    const name = type && field.getFullyQualifiedName();
    if (!type || !name) continue;
    for (const widget of (field as PDFAcroTerminal).getWidgets()) {
      const index = pageOfWidget.get(widget.dict) ?? pageOfRef.get(widget.P() as PDFObject);
      const rect = boxOf(lib, widget.Rect());
      if (index === undefined || !rect) continue;
      fields.push({ name, type, page: index + 1, ...percentBoxOf(pages[index]!, rect) });
    }
  }
  return fields;
}
