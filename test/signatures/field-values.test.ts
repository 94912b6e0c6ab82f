import { zlibSync } from "fflate";
import { describe, expect, it } from "vitest";
import { checkFieldValues, patternProblem } from "../../src/signatures/field-values";
import { call, json } from "../helpers/client";
import { createPrincipal } from "../helpers/factories";
import { buildPdf, DRAWN_PNG, upload, uploaded } from "../helpers/uploads";

// What the adversarial pass of issue 44 found: a drawn signature that would blow up or break the seal, a pattern that
// backtracks for hours inside the envelope's object, prefilled values past their field's rules, decompression bombs
// in an upload, a title that reads as something it is not.

let crcTable: number[] | undefined;
const crc32 = (bytes: Uint8Array) => {
  crcTable ??= Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  let c = 0xffffffff;
  for (const b of bytes) c = crcTable[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};
const u32 = (n: number) => [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
function chunk(type: string, data: Uint8Array): number[] {
  const typed = new Uint8Array([...Array.from(type, (c) => c.charCodeAt(0)), ...data]);
  return [...u32(data.length), ...typed, ...u32(crc32(typed))];
}
/** A PNG whose header says width × height (RGB, 8 bits) and whose image data is `raw` deflated. */
function png(width: number, height: number, raw: Uint8Array, interlace = 0): string {
  const ihdr = new Uint8Array([...u32(width), ...u32(height), 8, 2, 0, 0, interlace]);
  const bytes = new Uint8Array([
    0x89,
    0x50,
    0x4e,
    0x47,
    0x0d,
    0x0a,
    0x1a,
    0x0a,
    ...chunk("IHDR", ihdr),
    ...chunk("IDAT", zlibSync(raw)),
    ...chunk("IEND", new Uint8Array()),
  ]);
  return `data:image/png;base64,${btoa(String.fromCharCode(...bytes))}`;
}

const signature = {
  id: "sig",
  type: "signature" as const,
  page: 1,
  x: 0,
  y: 0,
  width: 10,
  height: 5,
  name: null,
  required: true,
  readOnly: false,
  value: null,
  options: null,
  validation: null,
};
const issuesOf = (value: string) =>
  checkFieldValues({ name: "Pat", email: "p@x.test" }, [signature], { sig: value }).issues.map((i) => i.message);

describe("a drawn signature", () => {
  it("is taken when it is a whole PNG of a signature's size", () => {
    expect(issuesOf(DRAWN_PNG)).toEqual([]);
    expect(issuesOf(png(3, 2, new Uint8Array(2 * (1 + 9))))).toEqual([]);
  });

  it("is refused when its header claims 50,000² pixels, its data is damaged or short, or it is interlaced", () => {
    expect(issuesOf(png(50_000, 50_000, new Uint8Array(100)))[0]).toMatch(/at most 2000 × 2000/);
    expect(issuesOf(png(1500, 1500, new Uint8Array(100)))[0]).toMatch(/at most 2000000 pixels/);
    expect(issuesOf(png(3, 2, new Uint8Array(5)))[0]).toMatch(/does not match its size/);
    expect(issuesOf(png(3, 2, new Uint8Array(2 * (1 + 9) + 1000)))[0]).toMatch(/does not match its size/);
    expect(issuesOf(png(3, 2, new Uint8Array(20), 1))[0]).toMatch(/interlaced/);
    const magicThenGarbage = `data:image/png;base64,${btoa(`\x89PNG\r\n\x1a\n${"garbage".repeat(10)}`)}`;
    expect(issuesOf(magicThenGarbage)).toHaveLength(1);
    const flipped = atob(DRAWN_PNG.split(",")[1]!);
    const damaged = `data:image/png;base64,${btoa(flipped.slice(0, 40) + String.fromCharCode(flipped.charCodeAt(40) ^ 1) + flipped.slice(41))}`;
    expect(issuesOf(damaged)[0]).toMatch(/damaged/);
  });
});

describe("a field's pattern", () => {
  it("takes the patterns forms use and refuses those that backtrack without end", () => {
    for (const ok of [
      "\\d+",
      "^[A-Z]\\d{5}$",
      "(\\d{3}-)?\\d{4}",
      "[A-Za-z ]+",
      "\\w+@\\w+\\.\\w+",
      "(?:MLS|mls)-\\d{4,8}",
      "[0-9]{3}-[0-9]{3}-[0-9]{4}",
    ])
      expect(patternProblem(ok), ok).toBeNull();
    for (const bad of [
      "(a|a)+",
      "(a|aa)+",
      "(a|ab|b)+",
      "(\\d|\\d\\d)+-x",
      "\\w*\\w*\\w*\\w*\\w*\\w*x",
      "(a+)+",
      "(\\w+\\s?)+$",
      "(.*a){20}",
      "(a)\\1",
    ])
      expect(patternProblem(bad), bad).not.toBeNull();
  });

  it("is refused at send, and so is a prefilled value its field's own rules refuse", async () => {
    const owner = await createPrincipal();
    const doc = await uploaded(owner.token, await buildPdf([{}]));
    const field = (extra: Record<string, unknown>) => ({ recipient: "s", page: 1, x: 10, y: 10, width: 20, height: 4, ...extra });
    const res = await call("POST", `/api/documents/${doc.id}/signature`, {
      token: owner.token,
      body: {
        recipients: [{ key: "s", name: "Sal", email: "sal@pattern.test", role: "signer" }],
        fields: [
          field({ type: "signature", y: 80 }),
          field({ type: "text", validation: { pattern: "(a|a)+" } }),
          field({ type: "date", value: "2026-02-31", readOnly: true }),
          field({ type: "number", value: 99, validation: { max: 1 } }),
          field({ type: "number", validation: { min: 5, max: 1 } }),
          field({ type: "text", value: "abc", validation: { pattern: "\\d+" } }),
        ],
      },
    });
    expect(res.status).toBe(422);
    expect((await json(res)).issues.map((i: { field: string; code: string }) => `${i.field}:${i.code}`).sort()).toEqual([
      "fields.1.validation:invalid_pattern",
      "fields.2.value:invalid_value",
      "fields.3.value:invalid_value",
      "fields.4.validation:invalid_range",
      "fields.5.value:invalid_value",
    ]);
  });
});

describe("an upload's bombs and disguises", () => {
  it("refuses content that inflates past 32 MB at once, decodes a stream shared by many pages once, and refuses an impossible page size", async () => {
    const owner = await createPrincipal();
    const { PDFDocument, PDFName } = await (await import("../../src/files/pdf-lib")).pdfLib();
    const bomb = await PDFDocument.create();
    const page = bomb.addPage([612, 792]);
    // 40 MB of spaces, deflated to a few KB, as the page's content.
    const stream = bomb.context.flateStream(new Uint8Array(40 * 1024 * 1024).fill(32));
    page.node.set(PDFName.of("Contents"), bomb.context.register(stream));
    const started = Date.now();
    const res = await upload(owner.token, await bomb.save());
    expect(res.status).toBe(422);
    expect(await json(res)).toMatchObject({ error: "pdf_invalid", message: expect.stringMatching(/expands past 32 MB/) });
    expect(Date.now() - started).toBeLessThan(20_000);

    const tiny = await PDFDocument.create();
    tiny.addPage([0.001, 0.001]);
    expect(await json(await upload(owner.token, await tiny.save()))).toMatchObject({ error: "pdf_invalid" });
  });

  it("keeps a PDF's own title only for what it shows", async () => {
    const owner = await createPrincipal();
    const spoof = await uploaded(owner.token, await buildPdf([{}], {}, "\u202egpj.exe\u202c Offer\u2028line two"), "");
    expect(spoof.title).toBe("gpj.exe Offer line two");
    const invisible = await uploaded(owner.token, await buildPdf([{}], {}, "\u200b\u200b\u200b"), "");
    expect(invisible.title).toBe("Untitled PDF");
  });
});
