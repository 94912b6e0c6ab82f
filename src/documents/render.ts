import { pdfLib } from "../files/pdf-lib";
import type { Env } from "../env";
import { unicodeWriter } from "../files/pdf-writer";
import { FORMS, type LeaseCanonical } from "./forms";
import type { DocumentText } from "./forms/definition";
import { dollars, longDate } from "./forms/parts";

/**
 * A document as its signers read it: one rendering of the canonical data into sections of text, shown as text on the
 * signing page and drawn into the PDF that is signed and sealed, so both say the same thing in the same words.
 */
export interface RenderableDocument {
  id: string;
  formKey: string;
  canonical: Record<string, unknown>;
  /** For an amendment: the canonical of the agreement it amends, which its wording names (documents/service.ts amendedCanonical). */
  amended?: Record<string, unknown> | null;
}

/** A section with an empty heading is text without a heading (the body of a free-form document). */
export type { DocumentText } from "./forms/definition";

function leaseText(canonical: LeaseCanonical): DocumentText {
  const { lease } = canonical;
  const { term, monthlyRent, deposit } = lease;
  const a = lease.property.address;
  const rent = dollars(monthlyRent.cents);
  const begins = longDate(term.commencement);
  return {
    title: FORMS["on/standard-lease"]!.title,
    sections: [
      {
        heading: "Parties",
        lines: [
          ...lease.landlords.map((p) => `Landlord: ${p.name} (${p.email})`),
          ...lease.tenants.map((p) => `Tenant: ${p.name} (${p.email})`),
        ],
      },
      { heading: "Rental unit", lines: [`${a.street}, ${a.city}, ${a.province}`] },
      {
        heading: "Term",
        lines: term.end
          ? [`Commences: ${begins}`, `Ends: ${longDate(term.end)}`]
          : [`Commences: ${begins}`, "Month to month, with no end date"],
      },
      { heading: "Rent", lines: [`${rent} a month, payable monthly`] },
      ...(deposit
        ? [
            {
              heading: "Deposit",
              lines: [`Amount: ${dollars(deposit.cents)}`, ...(deposit.dueDate ? [`Due: ${longDate(deposit.dueDate)}`] : [])],
            },
          ]
        : []),
      {
        heading: "Clauses",
        lines: [
          `1. The tenant pays rent of ${rent} each month, in advance, starting ${begins}.`,
          deposit
            ? `2. The tenant pays a deposit of ${dollars(deposit.cents)}${deposit.dueDate ? `, due on ${longDate(deposit.dueDate)}` : "; no due date is set"}.`
            : "2. This agreement sets no deposit.",
          term.end
            ? `3. The tenancy is for a fixed term from ${begins} to ${longDate(term.end)}.`
            : `3. The tenancy begins on ${begins} and continues from month to month.`,
          "This form is the Ontario Residential Tenancy Agreement (Standard Form of Lease); the parties' full rights are set out in it.",
        ],
      },
    ],
  };
}

function freeFormText(canonical: Record<string, unknown>): DocumentText {
  return { title: String(canonical.title), sections: [{ heading: "", lines: String(canonical.body).split(/\r?\n/) }] };
}

/** One renderer per form of FORMS; the canonical data was validated against the form's schema when stored. */
const RENDERERS: Record<string, (canonical: Record<string, unknown>, amended?: Record<string, unknown>) => DocumentText> = {
  "on/standard-lease": (c) => leaseText(c as LeaseCanonical),
  "generic/free-form": freeFormText,
};

export function renderDocumentText(document: RenderableDocument): DocumentText {
  const render = RENDERERS[document.formKey] ?? FORMS[document.formKey]?.text;
  if (!render) throw new Error(`No rendering for form ${document.formKey}`);
  return render(document.canonical, document.amended ?? undefined);
}

/** The document as an A4 PDF: title, sections, and a footer naming the document and the page on every page. */
export async function renderDocumentPdf(env: Env, document: RenderableDocument): Promise<Uint8Array> {
  const text = renderDocumentText(document);
  const { PDFDocument } = await pdfLib();
  const pdf = await PDFDocument.create();
  pdf.setTitle(text.title);
  pdf.setProducer("Brokerage Edge API");
  const w = await unicodeWriter(env, pdf);
  w.line(text.title, { size: 17, strong: true });
  for (const section of text.sections) {
    w.gap(10);
    if (section.heading) w.line(section.heading, { size: 12.5, strong: true });
    for (const line of section.lines) w.line(line, { size: 10.5 });
  }
  await w.finish((page, pages) => `Document ${document.id} · page ${page} of ${pages}`);
  return pdf.save();
}
