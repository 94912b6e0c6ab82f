import type { PDFDocument } from "@pdfme/pdf-lib";
import type { Signer as SignPdfSigner } from "@signpdf/signpdf";
import type { Env } from "../env";
import { loadSealKeys } from "./keys";

export interface SealFields {
  /** Why the document is sealed, e.g. "All parties signed"; shown by PDF readers as the signature's reason. */
  reason: string;
  /** Who seals it (the brokerage); shown as the signer's name. */
  name: string;
  location?: string;
  contactInfo?: string;
}

// Room for the CMS beyond the certificate: signature (≤ 512 bytes for RSA-4096), attributes and framing.
const CMS_OVERHEAD_BYTES = 2048;

/**
 * Seals `pdf` with the brokerage seal: a PAdES baseline B-B signature (SubFilter ETSI.CAdES.detached) over the whole
 * file, invisible, by the key and certificate of SEAL_PRIVATE_KEY / SEAL_CERTIFICATE. Adds the signature field to
 * `pdf` itself; returns the sealed bytes. Any later change to those bytes shows in `inspectSealedPdf`.
 */
export async function sealPdf(env: Env, pdf: PDFDocument, fields: SealFields): Promise<Uint8Array> {
  const keys = await loadSealKeys(env);
  const [{ SignPdf, Signer }, { buildCadesSignature }, { addSignaturePlaceholder }] = await Promise.all([
    import("@signpdf/signpdf"),
    import("./cms"),
    import("./placeholder"),
  ]);

  // @signpdf/signpdf computes the byte range, hands us the bytes it covers and writes our DER into /Contents (its
  // Buffer.from takes a Uint8Array as well).
  class SealSigner extends Signer {
    override sign(content: Uint8Array) {
      return buildCadesSignature(keys, content) as ReturnType<SignPdfSigner["sign"]>;
    }
  }
  addSignaturePlaceholder(pdf, { ...fields, signingTime: new Date(), contentsBytes: keys.certificateDer.length + CMS_OVERHEAD_BYTES });
  const sealed = await new SignPdf().sign(await pdf.save(), new SealSigner());
  return new Uint8Array(sealed.buffer, sealed.byteOffset, sealed.byteLength);
}
