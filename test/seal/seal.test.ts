import { env } from "cloudflare:workers";
import { PDFDocument, StandardFonts } from "@pdfme/pdf-lib";
import { beforeAll, describe, expect, it } from "vitest";
import { generateSealPair } from "../../scripts/seal-dev-cert.mjs";
import { ConfigError, type Env } from "../../src/env";
import { NotConfigured } from "../../src/lib/errors";
import { sealCertificateSha256, signBytes, verifyBytes } from "../../src/seal/keys";
import { sealPdf } from "../../src/seal/pades";
import { inspectSealedPdf, isPdf } from "../../src/seal/verify";

const withVars = (vars: Partial<Env>) => ({ ...env, ...vars }) as Env;
const latin1 = (bytes: Uint8Array) => new TextDecoder("latin1").decode(bytes);
const ascii = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0));
const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
};

async function agreement(): Promise<PDFDocument> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  pdf.addPage([595, 842]).drawText("Agreement of Purchase and Sale: every party has signed.", { x: 50, y: 780, size: 12, font });
  return pdf;
}

const seal = async (on: Env = env) =>
  sealPdf(on, await agreement(), { reason: "All parties signed (final)", name: "Maple & Pine Realty — 王小明", location: "Toronto" });

describe("the PDF seal", () => {
  let sealed: Uint8Array;
  let other: Env;
  beforeAll(async () => {
    sealed = await seal();
    other = withVars(await generateSealPair({ commonName: "Somebody else's seal" }));
  });

  it("verifies a sealed PDF and reads back what the signature covers", async () => {
    const before = Date.now();
    const result = await inspectSealedPdf(env, await seal());
    expect(result).toMatchObject({
      valid: true,
      reason: "All parties signed (final)",
      name: "Maple & Pine Realty — 王小明",
      coversWholeFile: true,
      certificateSha256: await sealCertificateSha256(env),
    });
    if (!result.valid) return;
    expect(result.digestSha256).toMatch(/^[0-9a-f]{64}$/);
    // /M has whole seconds.
    expect(Date.parse(result.signedAt!)).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(Date.parse(result.signedAt!)).toBeLessThanOrEqual(Date.now());
  });

  it("reports digest_mismatch when one signed byte changes", async () => {
    const changed = sealed.slice();
    changed[sealed.indexOf(0x0a) + 2]! ^= 0x01; // the binary comment on the header's second line
    expect(await inspectSealedPdf(env, changed)).toEqual({ valid: false, reason: "digest_mismatch" });
    const page = latin1(sealed).indexOf("/Type /Sig"); // and in the signature dictionary itself
    const dictionaryChanged = sealed.slice();
    dictionaryChanged[page + 7] = 0x73; // "/Type /sig"
    expect(await inspectSealedPdf(env, dictionaryChanged)).toEqual({ valid: false, reason: "digest_mismatch" });
  });

  it("reports signature_invalid when the signature value itself is changed", async () => {
    // The CMS ends with the signature value; past it, /Contents is zero padding.
    const text = latin1(sealed);
    const contentsEnd = text.indexOf(">", text.lastIndexOf("/Contents <"));
    const lastDigit = text.slice(0, contentsEnd).search(/0*$/) - 1;
    const changed = sealed.slice();
    changed[lastDigit] = text[lastDigit] === "1" ? 0x32 : 0x31;
    expect(await inspectSealedPdf(env, changed)).toEqual({ valid: false, reason: "signature_invalid" });
  });

  it("reports incomplete_coverage when an incremental update is appended", async () => {
    const update = ascii("\n7 0 obj\n<< /Type /Annot /Subtype /Text /Contents (changed later) >>\nendobj\ntrailer\n<< /Size 8 >>\n%%EOF\n");
    expect(await inspectSealedPdf(env, concat(sealed, update))).toEqual({ valid: false, reason: "incomplete_coverage" });
    expect(await inspectSealedPdf(env, concat(sealed, ascii("\n")))).toEqual({ valid: false, reason: "incomplete_coverage" });
  });

  it("reports not_our_seal for a PDF sealed with another key and certificate, and trusts it once listed (rotation)", async () => {
    const theirs = await seal(other);
    expect(await inspectSealedPdf(other, theirs)).toMatchObject({ valid: true });
    expect(await inspectSealedPdf(env, theirs)).toEqual({ valid: false, reason: "not_our_seal" });

    const rotated = withVars({
      SEAL_PRIVATE_KEY: other.SEAL_PRIVATE_KEY,
      SEAL_CERTIFICATE: `${other.SEAL_CERTIFICATE}\\n${env.SEAL_CERTIFICATE}`,
    });
    expect(await inspectSealedPdf(rotated, sealed)).toMatchObject({ valid: true, certificateSha256: await sealCertificateSha256(env) });
    expect(await inspectSealedPdf(rotated, theirs)).toMatchObject({ valid: true, certificateSha256: await sealCertificateSha256(other) });
  });

  it("seals with RSA and P-384 keys as well", async () => {
    for (const keyAlgorithm of ["RSA-2048", "P-384"] as const) {
      const pair = withVars(await generateSealPair({ keyAlgorithm }));
      expect(await inspectSealedPdf(pair, await seal(pair))).toMatchObject({ valid: true });
    }
  });

  it("reports not_signed for an unsigned PDF and malformed for anything that is not a PDF", async () => {
    expect(await inspectSealedPdf(env, await (await agreement()).save())).toEqual({ valid: false, reason: "not_signed" });
    for (const garbage of [new Uint8Array(), ascii("hello"), crypto.getRandomValues(new Uint8Array(4096)), sealed.subarray(1)]) {
      expect(isPdf(garbage)).toBe(false);
      expect(await inspectSealedPdf(env, garbage)).toEqual({ valid: false, reason: "malformed" });
    }
    expect(isPdf(sealed)).toBe(true);
    expect(await inspectSealedPdf(env, sealed.subarray(0, sealed.length - 10))).toEqual({ valid: false, reason: "malformed" });
    expect(await inspectSealedPdf(env, ascii("%PDF-1.7\n/ByteRange [0 /********** /********** /**********]"))).toEqual({
      valid: false,
      reason: "malformed",
    });
  });

  it("answers every damaged variant of a sealed PDF without throwing", async () => {
    const text = latin1(sealed);
    const hot = [text.lastIndexOf("/ByteRange"), text.lastIndexOf("/Contents <"), text.lastIndexOf("/M ("), text.lastIndexOf("/Name <")];
    // A damaged "/ByteRange" key leaves no signature to find: not_signed is the honest answer then.
    const reasons = new Set(["not_signed", "digest_mismatch", "signature_invalid", "not_our_seal", "incomplete_coverage", "malformed"]);
    for (let i = 0; i < 200; i++) {
      const damaged = sealed.slice();
      const around = hot[i % hot.length]! + Math.floor(Math.random() * 60);
      damaged[around] = Math.floor(Math.random() * 256);
      const result = await inspectSealedPdf(env, damaged);
      if (!result.valid) expect(reasons).toContain(result.reason);
    }
  });
});

describe("signBytes and verifyBytes", () => {
  it("round-trip with the seal key and refuse a changed message or a foreign signature", async () => {
    const head = ascii("audit-chain-head:3f1c…");
    const signature = await signBytes(env, head);
    expect(await verifyBytes(env, head, signature)).toBe(true);
    const changed = head.slice();
    changed[0]! ^= 0x01;
    expect(await verifyBytes(env, changed, signature)).toBe(false);
    const other = withVars(await generateSealPair());
    expect(await verifyBytes(env, head, await signBytes(other, head))).toBe(false);
  });

  it("name the missing setting, and refuse a key that is not the certificate's", async () => {
    await expect(signBytes(withVars({ SEAL_PRIVATE_KEY: undefined }), new Uint8Array(1))).rejects.toThrow(
      new NotConfigured("SEAL_PRIVATE_KEY"),
    );
    await expect(inspectSealedPdf(withVars({ SEAL_CERTIFICATE: "" }), await seal())).rejects.toThrow(/SEAL_CERTIFICATE is not configured/);
    const other = await generateSealPair();
    await expect(signBytes(withVars({ SEAL_PRIVATE_KEY: other.SEAL_PRIVATE_KEY }), new Uint8Array(1))).rejects.toThrow(
      /does not belong to the first certificate/,
    );
    await expect(
      signBytes(withVars({ SEAL_CERTIFICATE: "-----BEGIN CERTIFICATE-----\\nnot base64!\\n-----END CERTIFICATE-----" }), new Uint8Array(1)),
    ).rejects.toThrow(ConfigError);
    await expect(signBytes(withVars({ SEAL_PRIVATE_KEY: "MIGHAgEAMBMGByqGSM49" }), new Uint8Array(1))).rejects.toThrow(
      /SEAL_PRIVATE_KEY: no PEM block/,
    );
  });
});
