import type { Env } from "../env";
import { sha256Hex, toHex } from "../lib/crypto";
import { loadSealKeys } from "./keys";
import { findLastSignature } from "./signature-dictionary";

export type SealInspection =
  | {
      valid: true;
      /** The claimed signing time (/M), ISO 8601 UTC; covered by the signature like every other byte but /Contents. */
      signedAt: string | null;
      reason: string | null;
      name: string | null;
      certificateSha256: string;
      coversWholeFile: true;
      /** SHA-256 (hex) of the signed bytes: the file without its /Contents hex string. */
      digestSha256: string;
    }
  | { valid: false; reason: "not_signed" | "digest_mismatch" | "signature_invalid" | "not_our_seal" | "incomplete_coverage" | "malformed" };

const PDF_HEADER = [0x25, 0x50, 0x44, 0x46, 0x2d]; // "%PDF-"

/** A cheap first check: the bytes start with "%PDF-". */
export const isPdf = (bytes: Uint8Array): boolean => bytes.length >= PDF_HEADER.length && PDF_HEADER.every((b, i) => bytes[i] === b);

/**
 * Checks that `bytes` is a PDF sealed by this deployment and unchanged since: the last signature's byte range covers
 * the whole file but its /Contents, the CMS messageDigest matches those bytes, the signer certificate is one of
 * SEAL_CERTIFICATE's and its signature holds. Any input gets an answer, never an exception (save NotConfigured).
 */
export async function inspectSealedPdf(env: Env, bytes: Uint8Array): Promise<SealInspection> {
  if (!isPdf(bytes)) return { valid: false, reason: "malformed" };
  const found = findLastSignature(bytes);
  if (found.kind === "none") return { valid: false, reason: "not_signed" };
  if (found.kind === "malformed") return { valid: false, reason: "malformed" };

  const [first, firstLength, second, secondLength] = found.byteRange;
  // The range must run from the first byte to the last; bytes appended after it (an incremental update) are unsigned.
  if (second + secondLength > bytes.length) return { valid: false, reason: "malformed" };
  if (first !== 0 || second + secondLength < bytes.length) return { valid: false, reason: "incomplete_coverage" };

  const signed = new Uint8Array(firstLength + secondLength);
  signed.set(bytes.subarray(0, firstLength), 0);
  signed.set(bytes.subarray(second, second + secondLength), firstLength);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", signed));

  const keys = await loadSealKeys(env);
  const { checkCadesSignature } = await import("./cms");
  const check = await checkCadesSignature(
    found.contents,
    signed,
    digest,
    keys.trusted.map((t) => t.der),
  );
  if (!check.ok) return { valid: false, reason: check.reason };
  return {
    valid: true,
    signedAt: found.signedAt,
    reason: found.reason,
    name: found.name,
    certificateSha256: await sha256Hex(check.certificateDer),
    coversWholeFile: true,
    digestSha256: toHex(digest),
  };
}
