// Issue 45 part 5 in headless Chromium against `npm run dev`: a visitor at an open house opens a template's public link
// on a phone, gives a name and an e-mail, types the code mailed to them, and signs the envelope made for them.
import type { Browser } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { createApiClient } from "../../src/client";
import { phoneTab, sharedChromium } from "./helpers/chromium";
import { mintToken, readMail } from "./helpers/local-state";
import { dev } from "./helpers/served";
import { clientAddress } from "./helpers/signing";

const PHONE_WIDTH = 390;
let browser: Browser;

beforeAll(async () => {
  browser = await sharedChromium();
});

async function post(token: string, path: string, body: unknown) {
  const res = await fetch(`${dev.base}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

/** The code of the newest mail to `email` once it is the public link's ("Your code to sign …"). */
async function mailedLinkCode(email: string): Promise<string> {
  for (let i = 0; i < 90; i++) {
    const [newest] = await readMail(email, 1);
    const code = newest?.subject.startsWith("Your code to sign") ? /code is (\d{6})/.exec(newest.text)?.[1] : undefined;
    if (code) return code;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`no public link code mailed to ${email}`);
}

describe("a template's public link on a phone", () => {
  it("the visitor proves their e-mail with the mailed code and signs the envelope made for them", async () => {
    const { token } = await mintToken(`Open House Realty ${Date.now()}`, "agent@openhouse.test");
    const { PDFDocument, StandardFonts } = await import("@pdfme/pdf-lib");
    const pdf = await PDFDocument.create();
    pdf.addPage([612, 792]).drawText("Open house sign-in and showing agreement", {
      x: 40,
      y: 720,
      size: 14,
      font: await pdf.embedFont(StandardFonts.Helvetica),
    });
    const uploaded = await fetch(`${dev.base}/api/documents/uploads?title=Showing%20agreement`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/pdf" },
      body: new Uint8Array(await pdf.save()),
    });
    expect(uploaded.status).toBe(201);
    const documentId = ((await uploaded.json()) as { document: { id: string } }).document.id;
    const made = await post(token, "/api/templates", {
      documentId,
      name: "Showing agreement",
      roles: [
        { key: "visitor", label: "Visitor", role: "signer" },
        { key: "agent", label: "Listing agent", role: "cc" },
      ],
      fields: [{ role: "visitor", type: "signature", name: "sig", page: 1, x: 10, y: 80, width: 35, height: 8 }],
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const link = await post(token, `/api/templates/${made.body.template.id}/public-link`, {
      role: "visitor",
      recipients: { agent: { name: "Lee Lister", email: `lee.${Date.now()}@openhouse.test` } },
    });
    expect(link.status, JSON.stringify(link.body)).toBe(201);

    const email = `vera.${Date.now()}.${Math.random().toString(36).slice(2, 8)}@openhouse.test`;
    const { page, failures } = await phoneTab(browser, clientAddress());
    await page.goto(link.body.url);
    await expect.poll(() => page.getByRole("heading", { name: "Showing agreement" }).isVisible()).toBe(true);
    await page.getByLabel("Your full name").fill("Vera Visitor");
    await page.getByLabel("Your e-mail").fill(email);
    await page.getByRole("button", { name: "Send me a code" }).click();
    await page.getByLabel("The code we mailed you").fill(await mailedLinkCode(email));
    await page.getByRole("button", { name: "Continue to the document" }).click();

    // On the signing page, already verified by the link's code: consent and sign.
    await page.waitForURL(/\/sign\/sign_/, { timeout: 30_000 });
    await expect.poll(() => page.textContent("#who"), { timeout: 30_000 }).toBe("Vera Visitor (signer)");
    await page.getByLabel(/I agree to sign this document electronically/).check();
    await page.locator("#consent-button").click();
    await page.getByRole("button", { name: /^sig \(page 1\), required/ }).click();
    await page.locator("#sig-adopt").click();
    await page.getByRole("button", { name: "Sign the document" }).click();
    await expect.poll(() => page.textContent("#status"), { timeout: 30_000 }).toBe("Signed. Every party has now signed.");
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE_WIDTH);
    expect(failures).toEqual([]);
    await page.close();

    const api = createApiClient(dev.base, token);
    const list = await api.GET("/api/documents", { params: { query: { limit: 5 } } });
    const made2 = list.data!.documents.find((d) => d.id !== documentId)!;
    const envelopes = await api.GET("/api/documents/{id}/signatures", { params: { path: { id: made2.id } } });
    expect(envelopes.data!.envelopes[0]).toMatchObject({ source: "public_link", status: "completed" });
  });
});
