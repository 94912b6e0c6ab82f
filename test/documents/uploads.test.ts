import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { pdfLib } from "../../src/files/pdf-lib";
import { call, json } from "../helpers/client";
import { createPrincipal } from "../helpers/factories";
import { qpdfEncrypt } from "../helpers/pdf-tools";
import { buildPdf, upload, uploaded } from "../helpers/uploads";

// Issue 44, part 1: a brokerage's own PDF, uploaded as the raw body, described as displayed, refused with a code and
// nothing stored when it cannot be signed.

const hex = async (bytes: Uint8Array) =>
  [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");

/** Three pages: plain Letter, /Rotate 90, and a CropBox offset inside a larger MediaBox; a text field and a checkbox. */
const mixedPdf = () =>
  buildPdf([{ text: "Seller property disclosure" }, { rotate: 90 }, { size: [800, 1000], crop: [100, 150, 500, 600] }], {
    text: [{ name: "seller.name", page: 1, rect: [61.2, 633.6, 244.8, 39.6] }],
    checkbox: [{ name: "septic", page: 1, rect: [61.2, 554.4, 18, 18] }],
  });

describe("POST /api/documents/uploads", () => {
  it("answers the document: its pages as displayed, its own form fields, the SHA-256 of the bytes received", async () => {
    const owner = await createPrincipal();
    const bytes = await mixedPdf();
    const usageBefore = await json(await call("GET", "/api/documents/usage", { token: owner.token }));
    const doc = await uploaded(owner.token, bytes);
    expect(doc).toMatchObject({
      status: "GENERATED",
      source: "upload",
      title: "Seller disclosure",
      sha256: await hex(bytes),
      pageCount: 3,
      restrictionsRemoved: false,
      textStatus: expect.stringMatching(/^(pending|done)$/),
    });
    // The rotated page is displayed landscape; the cropped one is its CropBox's size.
    expect(doc.pages).toEqual([
      { width: 612, height: 792, rotation: 0 },
      { width: 792, height: 612, rotation: 90 },
      { width: 500, height: 600, rotation: 0 },
    ]);
    const byName = Object.fromEntries(doc.formFields.map((f) => [f.name, f]));
    expect(byName["seller.name"]).toMatchObject({ type: "text", page: 1 });
    // Within half a percent: a widget's /Rect may take in its border.
    expect(byName["seller.name"]!.x).toBeCloseTo(10, 0);
    expect(byName["seller.name"]!.y).toBeCloseTo(15, 0);
    expect(byName["seller.name"]!.width).toBeCloseTo(40, 0);
    expect(byName.septic).toMatchObject({ type: "checkbox", page: 1 });
    expect(byName.septic!.y).toBeCloseTo(((792 - 554.4 - 18) / 792) * 100, 0);

    // The organization reads it back, as it is, and as a document of the list.
    const got = await call("GET", `/api/documents/${doc.id}/pdf`, { token: owner.token });
    expect(got.status).toBe(200);
    expect(got.headers.get("content-type")).toBe("application/pdf");
    expect(await hex(new Uint8Array(await got.arrayBuffer()))).toBe(doc.sha256);
    expect(await json(await call("GET", `/api/documents/${doc.id}`, { token: owner.token }))).toMatchObject({
      id: doc.id,
      source: "upload",
    });
    // Not a generation: the meter did not move.
    expect(await json(await call("GET", "/api/documents/usage", { token: owner.token }))).toMatchObject({ used: usageBefore.used });
    // Another organization does not have it.
    const stranger = await createPrincipal();
    expect((await call("GET", `/api/documents/${doc.id}/pdf`, { token: stranger.token })).status).toBe(404);
  });

  it("takes the PDF's own title when none is given", async () => {
    const owner = await createPrincipal();
    const doc = await uploaded(owner.token, await buildPdf([{}], {}, "Brokerage policy manual"), "");
    expect(doc.title).toBe("Brokerage policy manual");
  });

  it("accepts a PDF with an owner password only, re-imported without its restrictions", async () => {
    const owner = await createPrincipal();
    const plain = await buildPdf([{ text: "Board form restricted" }, { rotate: 90 }]);
    const restricted = await qpdfEncrypt(plain, { user: "", owner: "board-secret" });
    const doc = await uploaded(owner.token, restricted);
    expect(doc).toMatchObject({ restrictionsRemoved: true, pageCount: 2, sha256: await hex(restricted) });
    const stored = new Uint8Array(await (await call("GET", `/api/documents/${doc.id}/pdf`, { token: owner.token })).arrayBuffer());
    const { PDFDocument } = await pdfLib();
    // It opens without any password and has no /Encrypt any more.
    const reopened = await PDFDocument.load(stored);
    expect(reopened.getPageCount()).toBe(2);
    expect(reopened.context.trailerInfo.Encrypt).toBeUndefined();
  });

  it("refuses, with a code and nothing stored, what cannot be signed", async () => {
    const owner = await createPrincipal();
    const pdf = await buildPdf([{}]);
    const cases: [string, Uint8Array, string][] = [
      ["not a PDF", new TextEncoder().encode("hello, this is no PDF"), "pdf_invalid"],
      ["a truncated PDF", pdf.slice(0, Math.floor(pdf.length / 3)), "pdf_invalid"],
      ["a password to open", await qpdfEncrypt(pdf, { user: "open-me", owner: "owner" }), "pdf_encrypted"],
    ];
    for (const [what, bytes, code] of cases) {
      const res = await upload(owner.token, bytes);
      expect(res.status, what).toBe(422);
      expect(await json(res), what).toMatchObject({ error: code, message: expect.any(String) });
    }
    const many = await buildPdf(Array.from({ length: 501 }, () => ({ text: "." })));
    const tooLong = await upload(owner.token, many);
    expect(tooLong.status).toBe(422);
    expect(await json(tooLong)).toMatchObject({ error: "pdf_too_long" });

    const asJson = await upload(owner.token, pdf, "title=x", "application/json");
    expect(asJson.status).toBe(415);
    const huge = new Uint8Array(15 * 1024 * 1024 + 1);
    huge.set(pdf);
    expect((await upload(owner.token, huge)).status).toBe(413);

    // Nothing of these was kept: no document, no file.
    const list = await json(await call("GET", "/api/documents", { token: owner.token }));
    expect(list.documents).toEqual([]);
    expect((await env.FILES.list({ prefix: `documents/${owner.organizationId}/` })).objects).toEqual([]);
  });
});
