import type { PDFDocument } from "@pdfme/pdf-lib";
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
 *
 * The saved file is signed where it lies (issue 44: a 100-page, 15 MB upload seals within a Worker's 128 MB): the
 * byte range and the signature are written into its placeholders in place, and the two signed ranges are hashed as
 * a stream where the runtime has one (workerd's DigestStream), so no copy of the file is made after pdf-lib's save.
 */
export async function sealPdf(env: Env, pdf: PDFDocument, fields: SealFields): Promise<Uint8Array> {
  const keys = await loadSealKeys(env);
  const [{ buildCadesSignature }, { addSignaturePlaceholder, BYTE_RANGE_PLACEHOLDER }] = await Promise.all([
    import("./cms"),
    import("./placeholder"),
  ]);
  addSignaturePlaceholder(pdf, { ...fields, signingTime: new Date(), contentsBytes: keys.certificateDer.length + CMS_OVERHEAD_BYTES });
  const bytes = await pdf.save();
  const { byteRange, contents } = writeByteRange(bytes, BYTE_RANGE_PLACEHOLDER);
  const der = await buildCadesSignature(keys, await rangesDigest(bytes, byteRange));
  const room = contents.end - contents.start - 2;
  if (der.length * 2 > room) throw new Error(`The seal's signature (${der.length} bytes) does not fit its placeholder (${room / 2})`);
  const hex = Array.from(der, (b) => b.toString(16).padStart(2, "0")).join("");
  for (let i = 0; i < hex.length; i++) bytes[contents.start + 1 + i] = hex.charCodeAt(i);
  return bytes;
}

const ascii = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));

/** The last position of `needle` in `bytes` at or before `from` (the signature dictionary is written near the end). */
function lastIndexOf(bytes: Uint8Array, needle: Uint8Array, from = bytes.length - needle.length): number {
  outer: for (let i = Math.min(from, bytes.length - needle.length); i >= 0; i--) {
    for (let j = 0; j < needle.length; j++) if (bytes[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

/**
 * Finds the signature dictionary's `/ByteRange [0 /*** /*** /***]` and its `/Contents <00…>`, writes the real byte
 * range over the placeholder (padded with spaces to the same length) and answers it, with where `<…>` lies.
 */
function writeByteRange(bytes: Uint8Array, placeholder: string) {
  const at = lastIndexOf(bytes, ascii(`/${placeholder}`));
  const start = at < 0 ? -1 : lastIndexOf(bytes, ascii("/ByteRange"), at);
  if (start < 0) throw new Error("No /ByteRange placeholder in the saved PDF");
  const close = bytes.indexOf(0x5d, start); // "]"
  const open = bytes.indexOf(0x3c, close); // "<" of /Contents, the next key
  const end = bytes.indexOf(0x3e, open) + 1; // after ">"
  if (close < 0 || open < 0 || end <= 0) throw new Error("The signature dictionary's /Contents was not found after /ByteRange");
  const byteRange = [0, open, end, bytes.length - end] as const;
  const written = `/ByteRange [${byteRange.join(" ")}]`;
  const span = close + 1 - start;
  if (written.length > span) throw new Error("The /ByteRange placeholder is too short for this file");
  bytes.set(ascii(written.padEnd(span, " ")), start);
  return { byteRange, contents: { start: open, end } };
}

/** SHA-256 of the two signed ranges, streamed where the runtime can (no copy), else over one joined copy. */
async function rangesDigest(bytes: Uint8Array, [a, b, c, d]: readonly [number, number, number, number]): Promise<Uint8Array> {
  const ranges = [bytes.subarray(a, a + b), bytes.subarray(c, c + d)];
  const Stream = (crypto as { DigestStream?: new (algorithm: string) => WritableStream<Uint8Array> & { digest: Promise<ArrayBuffer> } })
    .DigestStream;
  if (Stream) {
    const stream = new Stream("SHA-256");
    const writer = stream.getWriter();
    for (const r of ranges) await writer.write(r);
    await writer.close();
    return new Uint8Array(await stream.digest);
  }
  const joined = new Uint8Array(b + d);
  joined.set(ranges[0]!, 0);
  joined.set(ranges[1]!, b);
  return new Uint8Array(await crypto.subtle.digest("SHA-256", joined));
}
