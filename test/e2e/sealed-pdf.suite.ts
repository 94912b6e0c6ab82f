// The sealed PDF of a completed envelope (issue 20), checked with tools from outside: an envelope is signed over HTTP
// against `npm run dev` (codes read back from its mail log), its sealed PDF downloaded and handed to Debian's pdfsig
// and pdftotext and to POST /api/public/verify; then one byte inside the signed range is changed and both must notice.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiClient } from "../../src/client";
import { mintToken } from "./helpers/local-state";
import { dev } from "./helpers/served";
import { clientAddress, downloadSealedDocument, poppler, signOverHttp, verifyPdf, waitForSealedDocument } from "./helpers/signing";

let dir = "";

beforeAll(async () => {
  // Links must point at this server: APP_URL is the API's own origin here (DESIGN.md contract 5).
  dir = mkdtempSync(join(tmpdir(), "sealed-pdf-"));
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const latin1 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");

/** The signature's /ByteRange [a b c d] and where its /Contents hex sits (between the two ranges). */
function signedRanges(bytes: Uint8Array) {
  const text = latin1(bytes);
  const all = [...text.matchAll(/\/ByteRange\s*\[\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\]/g)];
  expect(all).toHaveLength(1);
  const [a, b, c, d] = all[0]!.slice(1).map(Number) as [number, number, number, number];
  return {
    a,
    b,
    c,
    d,
    covers: (i: number) => (i >= a && i < a + b) || (i >= c && i < c + d),
    inContents: (i: number) => i >= a + b && i < c,
  };
}

/** A copy of `bytes` with the byte at `at` changed to `to` (which must differ). */
function withByte(bytes: Uint8Array, at: number, to: string) {
  const copy = new Uint8Array(bytes);
  expect(String.fromCharCode(copy[at]!)).not.toBe(to);
  copy[at] = to.charCodeAt(0);
  return copy;
}

const pdfsig = async (name: string, bytes: Uint8Array) => {
  const file = join(dir, name);
  writeFileSync(file, bytes);
  return poppler("pdfsig", [file]);
};

describe("the sealed PDF of a completed envelope", () => {
  const SIGNERS = [
    { name: "山田 太郎", role: "landlord" },
    { name: "Дмитрий Иванов", role: "tenant" },
    { name: "Łukasz Żółć", role: "tenant" },
  ];

  it("verifies with pdfsig and POST /api/public/verify, reads back in every script, and a changed byte breaks both", async () => {
    const stamp = `${Date.now()}.${Math.random().toString(36).slice(2, 8)}`;
    const emails = [`yamada.${stamp}@sealed.test`, `dmitry.${stamp}@sealed.test`, `lukasz.${stamp}@sealed.test`];
    const [landlord, ...tenants] = SIGNERS.map((s, i) => ({ name: s.name, email: emails[i]! }));
    const { token } = await mintToken(`Sealed Realty ${stamp}`, `agent.${stamp}@sealed.test`);
    const api = createApiClient(dev.base, token);
    const canonical = {
      schemaVersion: 1 as const,
      formKey: "on/standard-lease" as const,
      lease: {
        tenants,
        landlords: [landlord!],
        property: { address: { street: "7 Seal Ave", city: "Toronto", province: "ON" } },
        term: { commencement: { year: 2027, month: 6, day: 1 } },
        monthlyRent: { cents: 245_000 },
      },
      provenance: { aiDrafted: false },
    };
    const doc = await api.POST("/api/documents", { body: { formKey: "on/standard-lease", canonical } });
    expect(doc.response.status).toBe(201);
    const sent = await api.POST("/api/documents/{id}/signature", {
      params: { path: { id: doc.data!.id } },
      body: { signerVerification: "code" },
    });
    expect(sent.response.status).toBe(201);
    const { envelopeId, links } = sent.data!;
    expect(links.map((l) => [l.name, l.role])).toEqual(SIGNERS.map((s) => [s.name, s.role]));

    // Every signer, one after another, each from an address of their own, over HTTP with the code from their mail; the
    // last one completes the envelope.
    const addresses = SIGNERS.map(() => clientAddress());
    const results = [];
    for (const [i, link] of links.entries()) results.push(await signOverHttp(link.url!, emails[i]!, addresses[i]));
    expect(results.map((r) => r.completed)).toEqual([false, false, true]);

    const envelope = await waitForSealedDocument(api, envelopeId);
    expect(envelope.status).toBe("completed");
    const sealed = await downloadSealedDocument(api, envelopeId);
    expect(sealed.contentType).toBe("application/pdf");
    const bytes = sealed.bytes;
    expect(latin1(bytes.subarray(0, 5))).toBe("%PDF-");

    // pdfsig: one signature, valid, over the whole file.
    const good = await pdfsig("sealed.pdf", bytes);
    expect(good).toContain("Signature is Valid.");
    expect(good).toContain("Total document signed");

    // pdftotext: the names as written, in Japanese, Russian and Polish, each on its signature page with the address it
    // signed from.
    const text = await poppler("pdftotext", ["-enc", "UTF-8", join(dir, "sealed.pdf"), "-"]);
    for (const [i, s] of SIGNERS.entries()) {
      expect(text).toContain(`Name: ${s.name}`);
      expect(text).toContain(`/s/ ${s.name}`);
      expect(text).toContain(`IP address: ${addresses[i]}`);
    }

    // POST /api/public/verify: this envelope, its signers by name and role, and not one e-mail address.
    const verified = await verifyPdf(dev.base, bytes);
    expect(verified.status).toBe(200);
    expect(verified.text).not.toContain("@");
    const answer = JSON.parse(verified.text);
    expect(answer).toMatchObject({ valid: true, envelopeId, completedAt: envelope.completedAt, documentSha256: envelope.document.sha256 });
    expect(answer.signers.map((s: { name: string; role: string }) => [s.name, s.role])).toEqual(SIGNERS.map((s) => [s.name, s.role]));
    for (const s of answer.signers) expect(s).toMatchObject({ verification: "email_code", signedAt: expect.any(String) });

    // One changed byte inside the signed range, never in /Contents: in the first range, the version in the header
    // comment line (%PDF-1.x); in the second (as sealed here), a hex digit of the seal's /Reason (the Info dictionary with /Producer is
    // compressed in an object stream here, so its bytes cannot be changed one at a time).
    const ranges = signedRanges(bytes);
    expect(ranges.a).toBe(0);
    expect(ranges.c + ranges.d).toBe(bytes.length);
    const source = latin1(bytes);
    expect(source).toMatch(/^%PDF-1\.\d\n/);
    const version = "%PDF-1.".length;
    const reason = source.search(/\/Reason\s*<FEFF[0-9A-F]{4}/i);
    expect(reason, "the seal's /Reason as a UTF-16 hex string").toBeGreaterThan(0);
    const reasonDigit = source.indexOf("<", reason) + "<FEFF".length + 3; // the low digit of its first character
    const tampered = [
      { what: "the header's version", at: version, to: source[version] === "4" ? "5" : "4" },
      { what: "a digit of /Reason", at: reasonDigit, to: source[reasonDigit] === "6" ? "7" : "6" },
    ];
    for (const [i, { what, at, to }] of tampered.entries()) {
      expect(ranges.covers(at), what).toBe(true);
      expect(ranges.inContents(at), what).toBe(false);
      const changed = withByte(bytes, at, to);
      const out = await pdfsig(`tampered-${i}.pdf`, changed);
      expect(out, what).not.toContain("Signature is Valid.");
      expect(out, what).toContain("Digest Mismatch");
      const refused = await verifyPdf(dev.base, changed);
      expect(refused.status, what).toBe(200);
      expect(JSON.parse(refused.text), what).toEqual({ valid: false, reason: "digest_mismatch" });
    }
  });
});
