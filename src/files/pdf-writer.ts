import { type PDFDocument, type PDFFont, type PDFPage, rgb, StandardFonts } from "@pdfme/pdf-lib";

/** The standard PDF fonts encode WinAnsi only; anything else is shown as "?" (the JSON routes have every byte). */
export const printable = (text: string) => text.replace(/[^\x20-\x7e\u00a0-\u00ff]/g, "?");

export const PAGE = { width: 595, height: 842, margin: 50 } as const;

export interface LineOptions {
  size?: number;
  strong?: boolean;
  indent?: number;
}

/**
 * A top-to-bottom text writer over A4 pages with Helvetica (certificates, property reports): `line` wraps long text
 * at the page edge, on a space where there is one, and starts a new page at the bottom; `space` reserves height for
 * a drawing (an image) and hands back the page and y where it goes.
 */
export async function pdfWriter(pdf: PDFDocument) {
  const font: PDFFont = await pdf.embedFont(StandardFonts.Helvetica);
  const bold: PDFFont = await pdf.embedFont(StandardFonts.HelveticaBold);
  const state: { page: PDFPage; y: number } = { page: pdf.addPage([PAGE.width, PAGE.height]), y: PAGE.height - 52 };
  const ensure = (height: number) => {
    if (state.y - height < PAGE.margin) {
      state.page = pdf.addPage([PAGE.width, PAGE.height]);
      state.y = PAGE.height - 52;
    }
  };
  const line = (text: string, { size = 10, strong = false, indent = 0 }: LineOptions = {}) => {
    const max = Math.floor((PAGE.width - 2 * PAGE.margin - indent) / (size * 0.52));
    let rest = printable(text);
    do {
      let cut = rest.length <= max ? rest.length : rest.lastIndexOf(" ", max);
      if (cut <= 0) cut = Math.min(max, rest.length);
      ensure(size + 5);
      state.page.drawText(rest.slice(0, cut), { x: PAGE.margin + indent, y: state.y, size, font: strong ? bold : font, color: rgb(0.1, 0.1, 0.12) });
      state.y -= size + 5;
      rest = rest.slice(cut).trimStart();
    } while (rest.length > 0);
  };
  const space = (height: number): { page: PDFPage; y: number } => {
    ensure(height);
    state.y -= height;
    return { page: state.page, y: state.y };
  };
  return { line, space };
}
