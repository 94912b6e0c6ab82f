import { expect } from "vitest";
import { pdfLib } from "../../src/files/pdf-lib";
import { call, json } from "./client";
import { publicSign } from "./documents";

/**
 * PDFs the upload tests build themselves (issue 44) and the calls that upload, send and sign them.
 */
export interface PageSpec {
  /** MediaBox size in points; Letter by default. */
  size?: [number, number];
  rotate?: 0 | 90 | 180 | 270;
  /** A CropBox [x, y, width, height] inside the MediaBox. */
  crop?: [number, number, number, number];
  text?: string;
}

export interface FormSpec {
  text?: { name: string; page: number; rect: [number, number, number, number] }[];
  checkbox?: { name: string; page: number; rect: [number, number, number, number] }[];
}

/** A PDF of `pages`, each with its text near its top-left, and the AcroForm fields of `form`. */
export async function buildPdf(pages: PageSpec[], form: FormSpec = {}, title?: string): Promise<Uint8Array> {
  const { PDFDocument, StandardFonts, degrees } = await pdfLib();
  const pdf = await PDFDocument.create();
  if (title) pdf.setTitle(title);
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const [i, spec] of pages.entries()) {
    const [w, h] = spec.size ?? [612, 792];
    const page = pdf.addPage([w, h]);
    if (spec.crop) page.setCropBox(...spec.crop);
    const [cx, cy, , ch] = spec.crop ?? [0, 0, w, h];
    page.drawText(spec.text ?? `Page ${i + 1} of the test document`, { x: cx + 40, y: cy + ch - 60, size: 12, font });
    if (spec.rotate) page.setRotation(degrees(spec.rotate));
  }
  const acro = pdf.getForm();
  for (const t of form.text ?? []) {
    const f = acro.createTextField(t.name);
    const [x, y, width, height] = t.rect;
    f.addToPage(pdf.getPage(t.page - 1), { x, y, width, height, font });
  }
  for (const c of form.checkbox ?? []) {
    const f = acro.createCheckBox(c.name);
    const [x, y, width, height] = c.rect;
    f.addToPage(pdf.getPage(c.page - 1), { x, y, width, height });
  }
  return pdf.save();
}

export const upload = (token: string, bytes: Uint8Array, query = "title=Seller%20disclosure", contentType = "application/pdf") =>
  call("POST", `/api/documents/uploads?${query}`, { token, rawBody: bytes, headers: { "content-type": contentType } });

export interface UploadedDoc {
  id: string;
  status: string;
  source: string;
  title: string;
  sha256: string;
  pageCount: number;
  pages: { width: number; height: number; rotation: number }[];
  formFields: { name: string; type: string; page: number; x: number; y: number; width: number; height: number }[];
  restrictionsRemoved: boolean;
  textStatus: string;
}

export async function uploaded(token: string, bytes: Uint8Array, query?: string): Promise<UploadedDoc> {
  const res = await upload(token, bytes, query);
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body.document as UploadedDoc;
}

export interface SentUpload {
  envelopeId: string;
  envelope: { signers: { id: string; key?: string; role: string; order: number; status: string }[] };
  links: { signerId: string; key?: string; role: string; order: number; email: string; url: string }[];
}

export async function sendUpload(token: string, documentId: string, body: Record<string, unknown>): Promise<SentUpload> {
  const res = await call("POST", `/api/documents/${documentId}/signature`, { token, body });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(201);
  return payload as SentUpload;
}

/** A link's token, by the recipient's key. */
export const linkOf = (sent: SentUpload, key: string) => {
  const url = sent.links.find((l) => l.key === key)?.url;
  expect(url, `a link for ${key}`).toBeTruthy();
  return url!.slice(url!.lastIndexOf("/sign/") + 6);
};

/** Opens, attests, consents, then `action` (sign with `fields`, or approve): the answer of the last call. */
export async function act(token: string, action: "sign" | "approve", fields?: Record<string, unknown>): Promise<Response> {
  expect((await publicSign("GET", token)).status).toBe(200);
  expect((await publicSign("POST", token, { action: "authenticate", codeVerified: true })).status).toBe(200);
  expect((await publicSign("POST", token, { action: "consent" })).status).toBe(200);
  return publicSign("POST", token, { action, ...(fields ? { fields } : {}) });
}

/** The signer's field ids by name, from what their link shows. */
export async function fieldIds(token: string): Promise<Record<string, string>> {
  const view = await json(await publicSign("GET", token));
  return Object.fromEntries((view.fields as { id: string; name: string | null; type: string }[]).map((f) => [f.name ?? f.type, f.id]));
}

/** A 40×12 PNG of a stroke (a drawn signature's stand-in). */
export const DRAWN_PNG =
  "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAACgAAAAMCAIAAACfoWgaAAAAS0lEQVR4nGMQEan4PxCAAc6iswsYMIXo4wIsFtPHBfgspqkLiLKYFi5gAJo1IIg0H2MCssOAUovJdgHVLCbVBdS3mEgX0NBi/C4AAJ5DIiU5DbLBAAAAAElFTkSuQmCC";
