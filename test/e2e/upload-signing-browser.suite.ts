// An uploaded PDF signed on a phone-sized screen (issue 44 part 4), in headless Chromium against `npm run dev`: the
// signing page draws the PDF's pages with pdf.js served from the Worker's own static assets, lays this signer's fields
// over them, and signs with the values the signer filled in.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { degrees, PDFDocument, rgb, StandardFonts } from "@pdfme/pdf-lib";
import { version as PDFJS_VERSION } from "pdfjs-dist/package.json";
import type { Browser, Locator, Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { createApiClient } from "../../src/client";
import { type PercentBox, placeBox } from "../../src/files/pdf-geometry";
import { phoneTab, sharedChromium } from "./helpers/chromium";
import { mintToken } from "./helpers/local-state";
import { dev } from "./helpers/served";
import { clientAddress, downloadSealedDocument, mailedSigningCode, poppler, waitForSealedDocument } from "./helpers/signing";

const PHONE = { width: 390, height: 844 };
const NOTE = "The roof was replaced in 2021";
const PDFJS = `/static/pdfjs/${PDFJS_VERSION}`;
/** A dark block drawn on each page at this displayed box: where pdf.js draws it shows the page is upright. */
const MARK: PercentBox = { x: 60, y: 40, width: 20, height: 10 };
/** Page 1 portrait; page 2 the same sheet with /Rotate 90, so shown landscape. */
const SHEET = { width: 612, height: 792 };

const FIELDS = {
  signature: { recipient: "a", type: "signature", page: 2, x: 10, y: 70, width: 30, height: 8 },
  note: { recipient: "a", type: "text", page: 1, x: 10, y: 20, width: 40, height: 5, required: true, name: "Buyer note" },
  checkbox: { recipient: "a", type: "checkbox", page: 2, x: 10, y: 20, width: 4, height: 3 },
  offer: { recipient: "a", type: "number", page: 1, x: 10, y: 30, width: 30, height: 5, name: "Offer", validation: { max: 1_000_000 } },
};

let browser: Browser;

beforeAll(async () => {
  browser = await sharedChromium();
});

async function twoPagePdf(): Promise<Uint8Array<ArrayBuffer>> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const rotation of [0, 90] as const) {
    const page = pdf.addPage([SHEET.width, SHEET.height]);
    page.setRotation(degrees(rotation));
    page.drawText(`Seller's property disclosure, page ${rotation ? 2 : 1}`, { x: 40, y: 60, size: 16, font });
    const { rect } = placeBox({ crop: [0, 0, SHEET.width, SHEET.height], rotation }, MARK);
    page.drawRectangle({ ...rect, color: rgb(0.1, 0.1, 0.1) });
  }
  return new Uint8Array(await pdf.save());
}

/** POST with the test's bearer token; the body as given (JSON for objects). */
async function send(token: string, path: string, body: unknown, contentType = "application/json") {
  const res = await fetch(`${dev.base}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": contentType },
    body: body instanceof Uint8Array ? (body as Uint8Array<ArrayBuffer>) : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Uploads the two-page PDF and sends it to `recipients` with `fields`: the envelope's id and each recipient's link by e-mail. */
async function uploadAndSend(token: string, recipients: Record<string, unknown>[], fields: Record<string, unknown>[]) {
  const uploaded = await send(
    token,
    `/api/documents/uploads?title=${encodeURIComponent("Property disclosure")}`,
    await twoPagePdf(),
    "application/pdf",
  );
  expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(201);
  const upload = uploaded.body.document as { id: string; pageCount: number; pages: { width: number; height: number; rotation: number }[] };
  expect(upload.pageCount).toBe(2);
  expect(upload.pages).toEqual([
    expect.objectContaining({ width: SHEET.width, height: SHEET.height, rotation: 0 }),
    expect.objectContaining({ width: SHEET.height, height: SHEET.width, rotation: 90 }),
  ]);
  const sent = await send(token, `/api/documents/${upload.id}/signature`, { recipients, fields });
  expect(sent.status, JSON.stringify(sent.body)).toBe(201);
  const links = sent.body.links as { email: string; url: string }[];
  for (const l of links) expect(l.url.startsWith(`${dev.base}/sign/`)).toBe(true);
  return { envelopeId: sent.body.envelopeId as string, linkOf: (email: string) => links.find((l) => l.email === email)!.url };
}

/** A phone-sized tab of a recipient of their own, from an address of their own; script and console errors collected. */
const phonePage = (allowed: RegExp[] = []) => phoneTab(browser, clientAddress(), allowed);

/** On the signing page: a code from the mail, then (unless a viewer) consent. */
async function confirmWithMailedCode(page: Page, email: string) {
  await page.getByRole("button", { name: "Send me a code" }).click();
  await expect.poll(() => page.isVisible("#code-entry")).toBe(true);
  await page.getByLabel("Code from the e-mail").fill(await mailedSigningCode(email));
  await page.getByRole("button", { name: "Verify the code" }).click();
  await expect.poll(() => page.textContent("#status")).toMatch(/^Identity confirmed\./);
}

/** Where an element's field box sits on its page, in percent of the page as shown, and which page that is. */
const placement = (el: Locator) =>
  el.evaluate((node) => {
    const field = node.closest(".field")!.getBoundingClientRect();
    const page = node.closest(".page")!;
    const p = page.getBoundingClientRect();
    const pct = (v: number, of: number) => Math.round((v / of) * 1000) / 10;
    return {
      page: [...document.querySelectorAll(".page")].indexOf(page) + 1,
      x: pct(field.left - p.left, p.width),
      y: pct(field.top - p.top, p.height),
      width: pct(field.width, p.width),
      height: pct(field.height, p.height),
    };
  });

/**
 * Each page's canvas as drawn: its size, its share of dark pixels, and the darkness inside MARK and in a box as far
 * from it (where the page is white).
 */
const drawnPages = (page: Page) =>
  page.evaluate((mark) => {
    return [...document.querySelectorAll<HTMLCanvasElement>(".page canvas")].map((canvas) => {
      const ctx = canvas.getContext("2d")!;
      const { width, height } = canvas;
      const pixels = width * height > 0 ? ctx.getImageData(0, 0, width, height).data : new Uint8ClampedArray();
      let dark = 0;
      for (let i = 0; i < pixels.length; i += 4) if (pixels[i]! < 128 && pixels[i + 3]! > 0) dark++;
      const darkness = (b: { x: number; y: number; width: number; height: number }) => {
        const x = Math.round(((b.x + b.width / 4) / 100) * width);
        const y = Math.round(((b.y + b.height / 4) / 100) * height);
        const w = Math.max(1, Math.round((b.width / 200) * width));
        const h = Math.max(1, Math.round((b.height / 200) * height));
        if (!width || !height) return 0;
        const d = ctx.getImageData(x, y, w, h).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i]! < 128) n++;
        return n / (w * h);
      };
      const box = canvas.closest(".page")!.getBoundingClientRect();
      return {
        width,
        height,
        shownWidth: box.width,
        shownRatio: box.width / box.height,
        dark: pixels.length ? dark / (pixels.length / 4) : 0,
        inMark: darkness(mark),
        elsewhere: darkness({ x: 100 - mark.x - mark.width, y: 100 - mark.y - mark.height, width: mark.width, height: mark.height }),
      };
    });
  }, MARK);

describe("an uploaded PDF signed in a browser on a phone", () => {
  it("serves pdf.js from the Worker's assets, the version in the path, and nothing else of them", async () => {
    for (const file of ["pdf.min.mjs", "pdf.worker.min.mjs"]) {
      const res = await fetch(`${dev.base}${PDFJS}/${file}`);
      expect(res.status, file).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
      expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      // The committed copy is the installed pdfjs-dist's build: upgrading one without the other fails here.
      expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(`node_modules/pdfjs-dist/build/${file}`)), file).toBe(true);
    }
    for (const path of [
      `${PDFJS}/LICENSE-pdfjs.txt`,
      `${PDFJS}/pdf.mjs`,
      "/static/pdfjs/1.0.0/pdf.min.mjs",
      `${PDFJS}/..%2F..%2Ffonts%2FDejaVuSans.ttf`,
      "/fonts/DejaVuSans.ttf",
      "/pdfjs/pdf.min.mjs",
    ])
      expect((await fetch(`${dev.base}${path}`)).status, path).toBe(404);
  });

  it("draws both pages at the phone's width with the fields at their boxes; the signer fills, draws, consents and signs", async () => {
    const { token } = await mintToken(`Upload Sign Realty ${Date.now()}`, "agent@upload.test");
    const stamp = `${Date.now()}.${Math.random().toString(36).slice(2, 8)}`;
    const buyer = { name: "Bea Buyer", email: `bea.${stamp}@upload.test` };

    const { envelopeId, linkOf } = await uploadAndSend(token, [{ key: "a", ...buyer, role: "signer" }], Object.values(FIELDS));
    // The refused value's 422 is logged by Chromium as a failed load: expected.
    const { page, failures } = await phonePage([/status of 422/]);
    const opened = await page.goto(linkOf(buyer.email));
    // pdf.js and its worker come from this origin's /static/pdfjs/<version>/ only; inline scripts still need the nonce.
    const csp = opened!.headers()["content-security-policy"]!;
    const directive = (name: string) =>
      csp
        .split("; ")
        .find((d) => d.startsWith(`${name} `))
        ?.split(" ");
    expect(directive("script-src")).toEqual(["script-src", expect.stringMatching(/^'nonce-[A-Za-z0-9+/=]+'$/), `${dev.base}${PDFJS}/`]);
    expect(directive("worker-src")).toEqual(["worker-src", `${dev.base}${PDFJS}/`]);
    expect(csp).not.toContain("unsafe-inline");
    await expect.poll(() => page.textContent("#who")).toBe("Bea Buyer (signer)");

    // Both pages drawn by pdf.js as wide as the page body, upright: the mark lands at its box on each.
    await expect.poll(async () => (await drawnPages(page)).filter((p) => p.dark > 0.001).length, { timeout: 30_000 }).toBe(2);
    const drawn = await drawnPages(page);
    const ratios = [SHEET.width / SHEET.height, SHEET.height / SHEET.width];
    for (const [i, p] of drawn.entries()) {
      const on = `page ${i + 1}`;
      // As wide as the phone's screen less the body's margins, in the device's pixels (2 per CSS pixel here).
      expect(p.shownWidth, on).toBeGreaterThan(PHONE.width * 0.85);
      expect(p.shownWidth, on).toBeLessThanOrEqual(PHONE.width);
      expect(Math.abs(p.width - p.shownWidth * 2), on).toBeLessThanOrEqual(2);
      expect(p.shownRatio, on).toBeCloseTo(ratios[i]!, 2);
      expect(p.width / p.height, on).toBeCloseTo(ratios[i]!, 2);
      expect(p.inMark, on).toBeGreaterThan(0.9);
      expect(p.elsewhere, on).toBeLessThan(0.05);
    }
    // Nothing wider than the screen: the body does not scroll sideways.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);

    // The fields, each labelled with its name or type and page, over their boxes.
    const note = page.getByLabel("Buyer note (page 1)");
    const checkbox = page.getByLabel("Checkbox (page 2)");
    const signature = page.getByRole("button", { name: /^Signature \(page 2\), required/ });
    const near = (box: { x: number; y: number; width: number; height: number }) =>
      Object.fromEntries(Object.entries(box).map(([k, v]) => [k, expect.closeTo(v, 0)]));
    for (const [el, field] of [
      [note, FIELDS.note],
      [checkbox, FIELDS.checkbox],
      [signature, FIELDS.signature],
    ] as const) {
      const { page: on, ...box } = await placement(el);
      expect(on).toBe(field.page);
      expect(box).toEqual(near({ x: field.x, y: field.y, width: field.width, height: field.height }));
    }
    expect(await note.getAttribute("aria-required")).toBe("true");
    expect(await checkbox.getAttribute("aria-required")).toBeNull();

    // Identity with the mailed code, then consent.
    await confirmWithMailedCode(page, buyer.email);
    await page.getByLabel(/I agree to sign this document electronically/).check();
    await page.locator("#consent-button").click();
    await expect.poll(() => page.isVisible("#sign")).toBe(true);

    // Signing waits for the required fields, and says which.
    const sign = page.getByRole("button", { name: "Sign the document" });
    expect(await sign.isDisabled()).toBe(true);
    expect(await page.textContent("#missing")).toBe("Before you sign, please fill in: Buyer note (page 1), Signature (page 2).");
    await note.fill(NOTE);
    await checkbox.check();
    await expect.poll(() => page.textContent("#missing")).toBe("Before you sign, please fill in: Signature (page 2).");

    // A signature drawn with the finger (a pointer), kept as a PNG of at most 100 KB.
    await signature.click();
    const dialog = page.getByRole("dialog", { name: "Your signature" });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    const pad = (await page.locator("#sig-pad").boundingBox())!;
    await page.mouse.move(pad.x + 20, pad.y + pad.height * 0.7);
    await page.mouse.down();
    for (let i = 1; i <= 24; i++) await page.mouse.move(pad.x + 20 + i * 10, pad.y + pad.height * (0.5 + 0.25 * Math.sin(i / 2)));
    await page.mouse.up();
    await page.getByRole("button", { name: "Use the drawing" }).click();
    await expect.poll(() => dialog.isVisible()).toBe(false);
    const image = (await signature.locator("img").getAttribute("src"))!;
    expect(image).toMatch(/^data:image\/png;base64,/);
    expect(image.length).toBeLessThanOrEqual(100_000);
    expect(await signature.getAttribute("aria-label")).toBe("Signature (page 2), required: signed, press to change");
    expect(await page.isVisible("#missing")).toBe(false);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);

    // The server's refusal of a value is shown beside its field, which takes the focus; the corrected value signs.
    const offer = page.getByLabel("Offer (page 1)");
    await offer.fill("2000000");
    await sign.click();
    await expect.poll(() => page.textContent("#status")).toMatch(/^Please check: Offer \(page 1\): /);
    expect(await offer.getAttribute("aria-invalid")).toBe("true");
    const problem = page.locator(`#${(await offer.getAttribute("aria-describedby"))!}`);
    expect(await problem.isVisible()).toBe(true);
    expect(await page.textContent("#status")).toContain((await problem.textContent())!);
    expect(await page.evaluate(() => document.activeElement?.getAttribute("aria-label"))).toBe("Offer (page 1)");
    const below = await problem.evaluate(
      (el) => el.getBoundingClientRect().top - el.previousElementSibling!.getBoundingClientRect().bottom,
    );
    expect(Math.abs(below)).toBeLessThanOrEqual(1);
    await offer.fill("950000");
    await sign.click();
    await expect.poll(() => page.textContent("#status")).toBe("Signed. Every party has now signed.");
    expect(await page.isVisible("#signed")).toBe(true);
    expect(failures).toEqual([]);
    await page.close();

    const api = createApiClient(dev.base, token);
    const read = await api.GET("/api/signatures/{envelopeId}", { params: { path: { envelopeId } } });
    expect(read.response.status).toBe(200);
    expect(read.data!.status).toBe("completed");
    expect(read.data!.signers.map((s) => [s.email, s.status, s.verification])).toEqual([[buyer.email, "signed", "email_code"]]);
    // What the page sent is what was kept: the sealed copy carries the note on page 1.
    await waitForSealedDocument(api, envelopeId);
    const sealed = await downloadSealedDocument(api, envelopeId);
    const file = join(mkdtempSync(join(tmpdir(), "upload-sign-")), "sealed.pdf");
    writeFileSync(file, sealed.bytes);
    expect(await poppler("pdftotext", ["-f", "1", "-l", "1", file, "-"])).toContain(NOTE);
  });

  it("a later order's link says it is not their turn; an approver rejects only with a reason, which declines", async () => {
    const { token } = await mintToken(`Upload Roles Realty ${Date.now()}`, "agent@upload.test");
    const stamp = `${Date.now()}.${Math.random().toString(36).slice(2, 8)}`;
    const approver = { name: "Arno Approver", email: `arno.${stamp}@upload.test` };
    const signer = { name: "Sam Signer", email: `sam.${stamp}@upload.test` };
    const { envelopeId, linkOf } = await uploadAndSend(
      token,
      [
        { key: "ap", ...approver, role: "approver", order: 1 },
        { key: "si", ...signer, role: "signer", order: 2 },
      ],
      [{ recipient: "si", type: "signature", page: 1, x: 10, y: 80, width: 30, height: 8 }],
    );
    const api = createApiClient(dev.base, token);
    const statuses = async () =>
      (await api.GET("/api/signatures/{envelopeId}", { params: { path: { envelopeId } } })).data!.signers.map((s) => [s.email, s.status]);

    // The signer of the second order: told to wait (the 409 is logged by Chromium as a failed load: expected).
    const early = await phonePage([/status of 409/]);
    await early.page.goto(linkOf(signer.email));
    await expect.poll(() => early.page.isVisible("#waiting")).toBe(true);
    expect(await early.page.textContent("#waiting")).toContain(
      "It is not your turn yet: you will receive an e-mail when the people before you have signed",
    );
    expect(await early.page.isVisible("#read")).toBe(false);
    expect(early.failures).toEqual([]);
    await early.page.close();

    // The approver confirms and consents, then has Approve and Reject instead of Sign; a rejection needs a reason.
    const { page, failures } = await phonePage();
    await page.goto(linkOf(approver.email));
    await expect.poll(() => page.textContent("#who")).toBe("Arno Approver (approver)");
    await confirmWithMailedCode(page, approver.email);
    await page.getByLabel(/I agree to sign this document electronically/).check();
    await page.locator("#consent-button").click();
    await expect.poll(() => page.isVisible("#sign")).toBe(true);
    expect(await page.textContent("#sign-heading")).toBe("3. Approve or reject");
    expect(await page.getByRole("button", { name: "Approve" }).isVisible()).toBe(true);
    expect(await page.getByRole("button", { name: "Sign the document" }).isVisible()).toBe(false);
    await page.getByRole("button", { name: "Reject" }).click();
    expect(await page.textContent("#status")).toBe("Please give a reason for rejecting.");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("reject-reason");
    expect(await statuses()).toEqual(expect.arrayContaining([[approver.email, "consented"]]));
    await page.getByLabel("Reason for rejecting (required)").fill("The disclosure misses the basement");
    await page.getByRole("button", { name: "Reject" }).click();
    await expect.poll(() => page.isVisible("#rejected")).toBe(true);
    expect(await page.textContent("#status")).toBe("You rejected the document.");
    expect(failures).toEqual([]);
    await page.close();

    const read = await api.GET("/api/signatures/{envelopeId}", { params: { path: { envelopeId } } });
    expect(read.data!.status).toBe("declined");
    expect(read.data!.signers.find((s) => s.email === approver.email)!.status).toBe("declined");
  });

  it("a viewer reads the pages and is asked for nothing more", async () => {
    const { token } = await mintToken(`Upload Viewer Realty ${Date.now()}`, "agent@upload.test");
    const stamp = `${Date.now()}.${Math.random().toString(36).slice(2, 8)}`;
    const viewer = { name: "Vera Viewer", email: `vera.${stamp}@upload.test` };
    const signer = { name: "Sam Signer", email: `sam.${stamp}@upload.test` };
    const { envelopeId, linkOf } = await uploadAndSend(
      token,
      [
        { key: "vi", ...viewer, role: "viewer" },
        { key: "si", ...signer, role: "signer" },
      ],
      [{ recipient: "si", type: "signature", page: 1, x: 10, y: 80, width: 30, height: 8 }],
    );
    const api = createApiClient(dev.base, token);
    const statuses = async () =>
      (await api.GET("/api/signatures/{envelopeId}", { params: { path: { envelopeId } } })).data!.signers.map((s) => [s.email, s.status]);

    // The pages, and no field and no step.
    const reader = await phonePage();
    await reader.page.goto(linkOf(viewer.email));
    await expect.poll(() => reader.page.isVisible("#viewed")).toBe(true);
    expect(await reader.page.textContent("#viewed h2")).toBe("Nothing more is asked of you");
    // Opening the link made the viewer done ("viewed"); the PDF link the same answer handed out must still serve them.
    const pdf = await fetch((await reader.page.getAttribute("#pdf", "href"))!);
    expect(pdf.status, "the viewer's PDF link, after the open that made them viewed").toBe(200);
    await expect.poll(async () => (await drawnPages(reader.page)).filter((p) => p.dark > 0.001).length, { timeout: 30_000 }).toBe(2);
    expect(await reader.page.locator(".field").count()).toBe(0);
    for (const step of ["#identify", "#consent", "#sign"]) expect(await reader.page.isVisible(step), step).toBe(false);
    expect(reader.failures).toEqual([]);
    await reader.page.close();
    expect(await statuses()).toEqual(expect.arrayContaining([[viewer.email, "viewed"]]));
  });
});
