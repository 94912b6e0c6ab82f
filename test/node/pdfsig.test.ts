// The seal as an outside verifier sees it: sealPdf runs here in Node (the same code the Worker runs, over WebCrypto),
// and poppler's pdfsig, which checks PDF signatures with NSS, judges the result. pdfsig exits 0 whether or not a
// signature is valid, so the test reads what it prints.
import { execFile } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { PDFDocument, StandardFonts } from "@pdfme/pdf-lib";
import { beforeAll, describe, expect, it } from "vitest";
import { generateSealPair } from "../../scripts/seal-dev-cert.mjs";
import type { Env } from "../../src/env";
import { sealPdf } from "../../src/seal/pades";
import { inspectSealedPdf } from "../../src/seal/verify";
const run = promisify(execFile);

async function pdfsig(bytes: Uint8Array): Promise<string> {
  const file = join(mkdtempSync(join(tmpdir(), "pdfsig-")), "sealed.pdf");
  writeFileSync(file, bytes);
  const { stdout, stderr } = await run("pdfsig", [file]);
  return stdout + stderr;
}

async function letter(): Promise<PDFDocument> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  pdf.addPage([595, 842]).drawText("Agreement of Purchase and Sale: all parties signed.", { x: 50, y: 780, size: 12, font });
  return pdf;
}

describe.each(["P-256", "RSA-2048"] as const)("a %s seal checked by pdfsig", (keyAlgorithm) => {
  let env: Env;
  let sealed: Uint8Array;
  beforeAll(async () => {
    // Not production: a production config must name a real mailer (src/env.ts).
    env = { ...(await generateSealPair({ keyAlgorithm })), ENVIRONMENT: "test" } as Env;
    sealed = await sealPdf(env, await letter(), {
      reason: "All parties signed (Québec office)",
      name: "王小明 Realty",
      location: "Montréal",
    });
  });

  it("is a valid signature over the whole document", async () => {
    const out = await pdfsig(sealed);
    expect(out).toContain("Signature Validation: Signature is Valid.");
    expect(out).toContain("Total document signed");
    expect(out).toContain("Signer Certificate Common Name: Brokerage Edge development seal");
    expect(out).toContain("Signature Type: ETSI.CAdES.detached");
    expect(out).toContain("Signing Hash Algorithm: SHA-256");
    expect(await inspectSealedPdf(env, sealed)).toMatchObject({
      valid: true,
      name: "王小明 Realty",
      reason: "All parties signed (Québec office)",
    });
  });

  it("is no longer valid after one byte inside the signed range changes", async () => {
    // A byte of the binary comment on the header's second line: still a well-formed PDF, no longer the sealed one.
    const changed = sealed.slice();
    changed[sealed.indexOf(0x0a) + 2]! ^= 0x01;
    const out = await pdfsig(changed);
    expect(out).not.toContain("Signature is Valid");
    expect(out).toContain("Digest Mismatch");
  });
});

describe("the development seal pair", () => {
  it("is a certificate OpenSSL reads, every time (its serial is minimal DER)", async () => {
    for (let i = 0; i < 1000; i++) {
      const { SEAL_CERTIFICATE } = await generateSealPair();
      const cert = new X509Certificate(SEAL_CERTIFICATE.replaceAll("\\n", "\n"));
      expect(cert.subject).toContain("CN=Brokerage Edge development seal");
    }
  });
});
