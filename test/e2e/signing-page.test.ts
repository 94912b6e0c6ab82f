// A real envelope signed through the signing page in headless Chromium (Debian's chromium, driven by playwright-core),
// against `npm run dev`: the page a client opens from the e-mail, doing what a person does.
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiClient } from "../../src/client";
import { mintToken, startDev } from "./helpers/dev-server";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
let dev: Awaited<ReturnType<typeof startDev>>;
let browser: Browser;

beforeAll(async () => {
  // Links must point at this server: APP_URL is the API's own origin here (DESIGN.md contract 5).
  dev = await startDev(["--var", "APP_URL:{base}"]);
  if (!existsSync(CHROMIUM)) throw new Error(`No Chromium at ${CHROMIUM}: install Debian's chromium (.ci/run does)`);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

afterAll(async () => {
  await browser?.close();
  dev?.stop();
});

async function envelopeFor(org: string) {
  const { token } = await mintToken(org, "agent@browser.test");
  const api = createApiClient(dev.base, token);
  const canonical = {
    schemaVersion: 1 as const,
    formKey: "on/standard-lease" as const,
    lease: {
      tenants: [{ name: "Tess Browser", email: "tess@browser.test" }],
      landlords: [{ name: "Lars Browser", email: "lars@browser.test" }],
      property: { address: { street: "1 Page St", city: "Toronto", province: "ON" } },
      term: { commencement: { year: 2027, month: 3, day: 1 } },
      monthlyRent: { cents: 199_900 },
    },
    provenance: { aiDrafted: false },
  };
  const doc = await api.POST("/api/documents", { body: { formKey: "on/standard-lease", canonical } });
  expect(doc.response.status).toBe(201);
  const sent = await api.POST("/api/documents/{id}/signature", { params: { path: { id: doc.data!.id } }, body: {} });
  expect(sent.response.status).toBe(201);
  return { api, envelopeId: sent.data!.envelopeId, links: sent.data!.links };
}

describe("the signing page in a browser", () => {
  it("a signer opens the link, confirms, consents and signs; the envelope records it", async () => {
    const { api, envelopeId, links } = await envelopeFor(`Browser Realty ${Date.now()}`);
    expect(links[0]!.url.startsWith(`${dev.base}/sign/`)).toBe(true);
    const page = await browser.newPage();
    const failures: string[] = [];
    page.on("pageerror", (err) => failures.push(String(err)));
    page.on("console", (msg) => msg.type() === "error" && failures.push(msg.text()));
    await page.goto(links[0]!.url);
    await expect.poll(() => page.textContent("#who")).toBe("Lars Browser (landlord)");
    await page.getByLabel(/I am the person named above/).check();
    await page.getByRole("button", { name: "Continue" }).first().click();
    await page.getByLabel(/I agree to sign this document electronically/).check();
    await page.locator("#consent-button").click();
    await page.getByRole("button", { name: "Sign the document" }).click();
    await expect.poll(() => page.textContent("#status")).toContain("Signed");
    expect(await page.isVisible("#signed")).toBe(true);
    expect(failures).toEqual([]);

    const read = await api.GET("/api/signatures/{envelopeId}", { params: { path: { envelopeId } } });
    expect(read.data!.signers.map((s) => s.status)).toEqual(["signed", "sent"]);
    // The link is now dead: the page says so.
    await page.reload();
    await expect.poll(() => page.isVisible("#gone")).toBe(true);
    await page.close();
  });

  it("a signer declines with a reason", async () => {
    const { api, envelopeId, links } = await envelopeFor(`Browser Decline ${Date.now()}`);
    const page = await browser.newPage();
    await page.goto(links[1]!.url);
    await expect.poll(() => page.textContent("#who")).toBe("Tess Browser (tenant)");
    await page.getByLabel(/I am the person named above/).check();
    await page.locator("#identify-button").click();
    await page.getByLabel(/I agree to sign/).check();
    await page.locator("#consent-button").click();
    await page.getByLabel("Reason for declining (optional)").fill("The rent is wrong");
    await page.getByRole("button", { name: "Decline to sign" }).click();
    await expect.poll(() => page.isVisible("#declined")).toBe(true);
    expect((await api.GET("/api/signatures/{envelopeId}", { params: { path: { envelopeId } } })).data!.status).toBe("declined");
    const audit = await api.GET("/api/signatures/{envelopeId}/audit", { params: { path: { envelopeId } } });
    expect(audit.data!.events.at(-1)).toMatchObject({ event: "declined", data: { reason: "The rent is wrong" } });
    await page.close();
  });
});
