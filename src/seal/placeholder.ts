import { PDFArray, type PDFDocument, PDFDict, PDFHexString, PDFInvalidObject, PDFName, PDFNumber, PDFString } from "@pdfme/pdf-lib";

/** What pades.ts finds and writes over: `/ByteRange [0 /********** /********** /**********]`. */
export const BYTE_RANGE_PLACEHOLDER = "**********";
const SIG_FLAGS_SIGNATURES_EXIST_APPEND_ONLY = 3;
const ANNOTATION_PRINT = 4;

export interface SignatureFields {
  reason: string;
  name: string;
  location?: string;
  contactInfo?: string;
  signingTime: Date;
  /** Room for the DER CMS, in bytes (the hex string holds twice as many digits). */
  contentsBytes: number;
}

/**
 * Adds an invisible signature field whose value is a PAdES signature dictionary with placeholders for /ByteRange and
 * /Contents (ISO 32000-1 section 12.8). Written here rather than with @signpdf/placeholder-pdf-lib: that one writes
 * /Reason and /Name as raw literal strings, so a "(" breaks the file and a CJK name comes out as garbage; text strings
 * here are UTF-16 hex strings.
 */
export function addSignaturePlaceholder(pdf: PDFDocument, fields: SignatureFields): void {
  const { context, catalog } = pdf;
  const placeholder = PDFName.of(BYTE_RANGE_PLACEHOLDER);
  const text = (value: string) => PDFHexString.fromText(value);
  const signature = context.obj({
    Type: "Sig",
    Filter: "Adobe.PPKLite",
    SubFilter: "ETSI.CAdES.detached",
    // pades.ts finds /Contents as the first "<" after /ByteRange, so the order of these two keys matters.
    ByteRange: context.obj([PDFNumber.of(0), placeholder, placeholder, placeholder]),
    Contents: PDFHexString.of("0".repeat(fields.contentsBytes * 2)),
    // The claimed signing time lives here, not in a CMS signing-time attribute (ETSI EN 319 142-1, table 1).
    M: PDFString.fromDate(fields.signingTime),
    Reason: text(fields.reason),
    Name: text(fields.name),
    ...(fields.location ? { Location: text(fields.location) } : {}),
    ...(fields.contactInfo ? { ContactInfo: text(fields.contactInfo) } : {}),
  });
  // Registered as raw bytes so the writer keeps it out of object streams: the byte range must point into the file.
  const bytes = new Uint8Array(signature.sizeInBytes());
  signature.copyBytesInto(bytes, 0);
  const signatureRef = context.register(PDFInvalidObject.of(bytes));

  const page = pdf.getPages()[0] ?? pdf.addPage();
  const form = catalog.lookupMaybe(PDFName.of("AcroForm"), PDFDict) ?? context.obj({ Fields: [] });
  if (!catalog.has(PDFName.of("AcroForm"))) catalog.set(PDFName.of("AcroForm"), context.register(form));
  const existing = form.lookupMaybe(PDFName.of("Fields"), PDFArray);
  const fieldsArray = existing ?? context.obj([]);
  if (!existing) form.set(PDFName.of("Fields"), fieldsArray);

  const widgetRef = context.register(
    context.obj({
      Type: "Annot",
      Subtype: "Widget",
      FT: "Sig",
      Rect: [0, 0, 0, 0],
      V: signatureRef,
      T: text(`Seal ${fieldsArray.size() + 1}`),
      F: ANNOTATION_PRINT,
      P: page.ref,
      // An empty appearance: PDF/A wants one on every widget, even an invisible one.
      AP: { N: context.register(context.formXObject([], { BBox: [0, 0, 0, 0], Resources: {} })) },
    }),
  );
  fieldsArray.push(widgetRef);
  const annots = page.node.lookupMaybe(PDFName.of("Annots"), PDFArray);
  if (annots) annots.push(widgetRef);
  else page.node.set(PDFName.of("Annots"), context.obj([widgetRef]));

  const flags = form.lookupMaybe(PDFName.of("SigFlags"), PDFNumber)?.asNumber() ?? 0;
  form.set(PDFName.of("SigFlags"), PDFNumber.of(flags | SIG_FLAGS_SIGNATURES_EXIST_APPEND_ONLY));
}
