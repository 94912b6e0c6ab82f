// Issue 45 in headless Chromium against `npm run dev`: an embedded recipient signs inside a partner's page (a tiny
// server on 127.0.0.1 framing the view URL, recording what the page posts it), and an in-person recipient signs on the
// host's phone after the host hands it over.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiClient } from "../../src/client";
import { phoneTab, sharedChromium } from "./helpers/chromium";
import { mintToken } from "./helpers/local-state";
import { dev } from "./helpers/served";
import { clientAddress, mailedSigningCode } from "./helpers/signing";

const PHONE = { width: 390, height: 844 };

let browser: Browser;

/** A partner's application: /app?view=<url> frames the view URL and records every message it gets; /back records the return. */
interface Partner {
  origin: string;
  returns: string[];
  server: Server;
}

async function startPartner(): Promise<Partner> {
  const returns: string[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname === "/back") {
      returns.push(url.search);
      res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>Back</title><p id=back>Back in the partner's app</p>");
      return;
    }
    const view = url.searchParams.get("view") ?? "";
    res.writeHead(200, { "content-type": "text/html" }).end(`<!doctype html><title>Partner</title>
<script>window.messages = []; addEventListener("message", (e) => window.messages.push({ origin: e.origin, data: e.data }));</script>
<iframe id="signing" title="Sign" src="${view.replace(/"/g, "&quot;")}" style="width: 100%; height: 900px; border: 0"></iframe>`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, returns, server };
}

const partners: Partner[] = [];

beforeAll(async () => {
  browser = await sharedChromium();
  partners.push(await startPartner(), await startPartner());
});

afterAll(async () => {
  for (const p of partners) await new Promise((resolve) => p.server.close(resolve));
});

async function post(token: string, path: string, body?: unknown) {
  const res = await fetch(`${dev.base}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : body instanceof Uint8Array ? (body as Uint8Array<ArrayBuffer>) : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

/** A one-page upload sent to one signer who signs `how`: the envelope and the signer's id. */
async function sendHosted(token: string, signer: { name: string; email: string }, how: Record<string, unknown>) {
  const { PDFDocument, StandardFonts } = await import("@pdfme/pdf-lib");
  const pdf = await PDFDocument.create();
  const page = pdf.addPage([612, 792]);
  page.drawText("Showing agreement", { x: 40, y: 720, size: 16, font: await pdf.embedFont(StandardFonts.Helvetica) });
  const uploadRes = await fetch(`${dev.base}/api/documents/uploads?title=Showing%20agreement`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/pdf" },
    body: new Uint8Array(await pdf.save()),
  });
  expect(uploadRes.status).toBe(201);
  const doc = ((await uploadRes.json()) as { document: { id: string } }).document;
  const sent = await post(token, `/api/documents/${doc.id}/signature`, {
    recipients: [{ key: "s", ...signer, role: "signer", ...how }],
    fields: [{ recipient: "s", type: "signature", page: 1, x: 10, y: 80, width: 35, height: 8 }],
    signerVerification: "code",
  });
  expect(sent.status, JSON.stringify(sent.body)).toBe(201);
  expect(sent.body.links[0].url).toBeUndefined();
  return { envelopeId: sent.body.envelopeId as string, signerId: sent.body.envelope.signers[0].id as string };
}

describe("an embedded recipient signs inside a partner's page", () => {
  it("the framed page posts ready and signed to the partner's origin only, then returns to the partner", async () => {
    const { token } = await mintToken(`Embed Realty ${Date.now()}`, "agent@embed.test");
    const signer = { name: "Eli Embedded", email: `eli.${Date.now()}.${Math.random().toString(36).slice(2, 8)}@embed.test` };
    const { envelopeId, signerId } = await sendHosted(token, signer, { embedded: true });
    const [partner, stranger] = partners as [Partner, Partner];
    const viewUrl = async () => {
      const res = await post(token, `/api/signatures/${envelopeId}/signers/${signerId}/view`, {
        returnUrl: `${partner.origin}/back?deal=42`,
        frameAncestors: [partner.origin],
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.url as string;
    };

    // Another origin's page cannot show it: the page names only the partner in frame-ancestors.
    const blocked = await browser.newPage({ extraHTTPHeaders: { "cf-connecting-ip": clientAddress() } });
    const refusedFrame = blocked.waitForEvent("console", { predicate: (m) => /frame-ancestors/.test(m.text()), timeout: 15_000 });
    await blocked.goto(`${stranger.origin}/app?view=${encodeURIComponent(await viewUrl())}`);
    await refusedFrame;
    expect(await blocked.evaluate(() => (window as unknown as { messages: unknown[] }).messages)).toEqual([]);
    await blocked.close();

    const page = await browser.newPage({ extraHTTPHeaders: { "cf-connecting-ip": clientAddress() } });
    const failures: string[] = [];
    page.on("pageerror", (err) => failures.push(String(err)));
    const messages = () => page.evaluate(() => (window as unknown as { messages: { origin: string; data: unknown }[] }).messages);
    const appOrigin = new URL(dev.base).origin;

    // The signer may go back without signing: Cancel returns to the partner with event=cancel.
    await page.goto(`${partner.origin}/app?view=${encodeURIComponent(await viewUrl())}`);
    await expect.poll(messages, { timeout: 30_000 }).toEqual([{ origin: appOrigin, data: { type: "ready" } }]);
    await page.frameLocator("#signing").getByRole("button", { name: "Cancel and go back" }).click();
    await expect.poll(() => partner.returns, { timeout: 15_000 }).toEqual(["?deal=42&event=cancel"]);
    partner.returns.length = 0;

    const url = await viewUrl();
    const served = page.waitForResponse((r) => r.url() === url);
    await page.goto(`${partner.origin}/app?view=${encodeURIComponent(url)}`);
    const csp = (await served).headers()["content-security-policy"]!;
    expect(csp.split("; ").filter((d) => d.startsWith("frame-ancestors"))).toEqual([`frame-ancestors ${partner.origin}`]);
    await expect.poll(messages, { timeout: 30_000 }).toEqual([{ origin: appOrigin, data: { type: "ready" } }]);

    const frame = page.frameLocator("#signing");
    await expect.poll(() => frame.locator("#who").textContent()).toBe("Eli Embedded (signer)");
    await frame.getByRole("button", { name: "Send me a code" }).click();
    await frame.getByLabel("Code from the e-mail").fill(await mailedSigningCode(signer.email));
    await frame.getByRole("button", { name: "Verify the code" }).click();
    await frame.getByLabel(/I agree to sign this document electronically/).check();
    await frame.locator("#consent-button").click();
    await frame.getByRole("button", { name: /^Signature \(page 1\), required/ }).click();
    await frame.locator("#sig-adopt").click();
    await frame.getByRole("button", { name: "Sign the document" }).click();

    await expect.poll(messages, { timeout: 30_000 }).toEqual([
      { origin: appOrigin, data: { type: "ready" } },
      { origin: appOrigin, data: { type: "signed" } },
    ]);
    // Back at the partner, told how it ended; nothing posted carried a token.
    await expect.poll(() => partner.returns, { timeout: 15_000 }).toEqual(["?deal=42&event=signing_complete"]);
    expect(JSON.stringify(await messages())).not.toMatch(/sign_|ses_/);
    expect(failures).toEqual([]);
    await page.close();

    const api = createApiClient(dev.base, token);
    const read = await api.GET("/api/signatures/{envelopeId}", { params: { path: { envelopeId } } });
    expect(read.data!.status).toBe("completed");
    const trail = await api.GET("/api/signatures/{envelopeId}/audit", { params: { path: { envelopeId } } });
    expect(trail.data!.events.at(-1)).toMatchObject({ event: "signed", data: { via: "embedded" } });
  });
});

describe("an in-person recipient signs on the host's phone", () => {
  it("the host hands the device over; the signer confirms with the code mailed to them, consents and signs", async () => {
    const { token, userId } = await mintToken(`Kitchen Realty ${Date.now()}`, "host@kitchen.test");
    const signer = { name: "Kit Chen", email: `kit.${Date.now()}.${Math.random().toString(36).slice(2, 8)}@kitchen.test` };
    const { envelopeId, signerId } = await sendHosted(token, signer, { inPerson: { hostUserId: userId } });
    const session = await post(token, `/api/signatures/${envelopeId}/signers/${signerId}/host-session`);
    expect(session.status, JSON.stringify(session.body)).toBe(201);

    const { page, failures } = await phoneTab(browser, clientAddress());
    await page.goto(session.body.url);
    const handover = page.getByRole("heading", { name: "Please hand this device to Kit Chen" });
    await expect.poll(() => handover.isVisible()).toBe(true);
    expect(await page.isVisible("#identify")).toBe(false);
    expect(await page.isVisible("#read")).toBe(false);
    await page.getByRole("button", { name: "I am Kit Chen: continue" }).click();

    await expect.poll(() => page.textContent("#who")).toBe("Kit Chen (signer)");
    await page.getByRole("button", { name: "Send me a code" }).click();
    await page.getByLabel("Code from the e-mail").fill(await mailedSigningCode(signer.email));
    await page.getByRole("button", { name: "Verify the code" }).click();
    await expect.poll(() => page.textContent("#status")).toMatch(/^Identity confirmed\./);
    await page.getByLabel(/I agree to sign this document electronically/).check();
    await page.locator("#consent-button").click();
    await page.getByRole("button", { name: /^Signature \(page 1\), required/ }).click();
    await page.locator("#sig-adopt").click();
    await page.getByRole("button", { name: "Sign the document" }).click();
    await expect.poll(() => page.textContent("#status")).toBe("Signed. Every party has now signed.");
    expect(await page.textContent("#signed")).toContain("Please hand the device back to your host.");
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    expect(failures).toEqual([]);

    // Used: the same URL opens nothing now.
    expect((await fetch(session.body.url, { headers: { "cf-connecting-ip": clientAddress() } })).status).toBe(410);
    await page.close();

    const api = createApiClient(dev.base, token);
    const trail = await api.GET("/api/signatures/{envelopeId}/audit", { params: { path: { envelopeId } } });
    expect(trail.data!.events.at(-1)).toMatchObject({
      event: "signed",
      data: { via: "in_person", hostUserId: userId, host: { email: "host@kitchen.test" } },
    });
  });
});
