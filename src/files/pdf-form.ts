import type { PDFDocument, PDFField, PDFFont } from "@pdfme/pdf-lib";
import type { Env } from "../env";
import { type Face, type FontSet, loadFonts } from "./pdf-fonts";
import { pdfLib } from "./pdf-lib";

/**
 * An upload's own form filled by field name, then flattened (issue 44 part 2): every field, filled or not, becomes
 * part of its page, so nothing in the envelope's PDF stays editable. Appearances are drawn with our Unicode fonts:
 * pdf-lib's default, Helvetica, prints WinAnsi only, and a value must print as itself in any script.
 */

export interface FormIssue {
  /** The field's fully qualified name, as given. */
  name: string;
  message: string;
}

type Lib = Awaited<ReturnType<typeof pdfLib>>;
type Value = string | boolean;

const quoted = (options: string[]) => options.map((o) => JSON.stringify(o)).join(", ");

/** What is wrong with filling `field` with `value`, if anything. */
function issueOf(lib: Lib, name: string, field: PDFField | undefined, value: Value): string | null {
  if (!field) return `The PDF has no form field named ${JSON.stringify(name)}.`;
  if (field instanceof lib.PDFTextField) {
    if (typeof value !== "string") return "A text field takes a string.";
    const max = field.getMaxLength();
    return max !== undefined && value.length > max ? `This field holds at most ${max} characters.` : null;
  }
  if (field instanceof lib.PDFCheckBox) return typeof value === "boolean" ? null : "A checkbox takes true or false.";
  if (field instanceof lib.PDFRadioGroup || field instanceof lib.PDFDropdown || field instanceof lib.PDFOptionList) {
    const options = field.getOptions();
    return typeof value === "string" && options.includes(value) ? null : `Choose one of ${quoted(options)}.`;
  }
  if (field instanceof lib.PDFSignature) return "A signature field is signed, not filled.";
  return "This field cannot be filled.";
}

/** The face that has a glyph for most of `text`'s characters (DejaVu first): pdf-lib draws a field with one font. */
function faceFor(set: FontSet, text: string): Face {
  const chars = [...text.normalize("NFC")].map((ch) => ch.codePointAt(0)!);
  const covered = (face: Face) => chars.filter((cp) => set.fonts[face].hasGlyphForCodePoint(cp)).length;
  return (["cjk", "hangul"] as const).reduce<Face>((best, face) => (covered(face) > covered(best) ? face : best), "regular");
}

/** PDF 32000-1 9.6.4: a subset font's name starts with six capital letters and "+". */
const subsetTag = () => Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => String.fromCharCode(65 + (b % 26))).join("");

/**
 * Fills the PDF's own fields by fully qualified name (text: a string; checkbox: a boolean; radio, dropdown or list
 * box: one of its options) and flattens every field. Every unknown name and wrong value is listed, and then nothing
 * changes. A widget pdf-lib cannot flatten (no appearance) still leaves the page: no widget survives the flattening.
 */
export async function fillAndFlatten(env: Env, pdf: PDFDocument, formValues: Record<string, Value>): Promise<{ issues: FormIssue[] }> {
  const lib = await pdfLib();
  const hasForm = pdf.catalog.getAcroForm() !== undefined;
  const form = hasForm ? pdf.getForm() : undefined;
  const fields = new Map((form?.getFields() ?? []).map((field) => [field.getName(), field]));
  const issues = Object.entries(formValues).flatMap(([name, value]) => {
    const message = issueOf(lib, name, fields.get(name), value);
    return message ? [{ name, message }] : [];
  });
  if (issues.length || !form) return { issues };

  const set = await loadFonts(env);
  pdf.registerFontkit(set.fontkit as unknown as Parameters<PDFDocument["registerFontkit"]>[0]);
  const embedded = new Map<Face, PDFFont>();
  const fontFor = async (text: string) => {
    const face = faceFor(set, text);
    if (!embedded.has(face))
      embedded.set(
        face,
        await pdf.embedFont(set.bytes[face], { subset: true, customName: `${subsetTag()}+${set.fonts[face].postscriptName}` }),
      );
    return embedded.get(face)!;
  };
  for (const [name, value] of Object.entries(formValues)) {
    const field = fields.get(name)!;
    if (field instanceof lib.PDFTextField) field.setText(value as string);
    else if (field instanceof lib.PDFCheckBox) value ? field.check() : field.uncheck();
    else if (field instanceof lib.PDFRadioGroup || field instanceof lib.PDFDropdown || field instanceof lib.PDFOptionList)
      field.select(value as string);
  }
  // Appearances for what was filled, and for any field that has none: drawn with the face its text needs.
  for (const field of fields.values()) {
    if (!field.needsAppearancesUpdate()) continue;
    if (field instanceof lib.PDFTextField) field.updateAppearances(await fontFor(field.getText() ?? ""));
    else if (field instanceof lib.PDFDropdown || field instanceof lib.PDFOptionList)
      field.updateAppearances(await fontFor(field.getSelected().join(" ")));
    else if (field instanceof lib.PDFCheckBox || field instanceof lib.PDFRadioGroup) field.updateAppearances();
  }
  form.flatten({ updateFieldAppearances: false });
  removeWidgets(lib, pdf);
  return { issues: [] };
}

/** Every widget annotation left on a page, and the form itself: a widget with no field is still a box a reader may offer. */
function removeWidgets(lib: Lib, pdf: PDFDocument): void {
  for (const page of pdf.getPages()) {
    const annots = page.node.Annots();
    for (let i = (annots?.size() ?? 0) - 1; i >= 0; i--) {
      const annot = annots!.lookup(i);
      if (annot instanceof lib.PDFDict && annot.get(lib.PDFName.of("Subtype")) === lib.PDFName.of("Widget")) annots!.remove(i);
    }
  }
  pdf.catalog.delete(lib.PDFName.of("AcroForm"));
}
