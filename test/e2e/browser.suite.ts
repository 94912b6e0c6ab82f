// The pages people use, in headless Chromium (Debian's chromium, driven by playwright-core), against `npm run dev`:
// the signing page a client opens from the e-mail, and the reviews widget embedded on another site.
import { createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiClient } from "../../src/client";
import { sharedChromium } from "./helpers/chromium";
import { mintToken } from "./helpers/local-state";
import { dev } from "./helpers/served";
import {
  clientAddress,
  downloadSealedDocument,
  mailedSigningCode,
  signOverHttp,
  verifyPdf,
  waitForSealedDocument,
} from "./helpers/signing";

let browser: Browser;

beforeAll(async () => {
  // Links must point at this server: APP_URL is the API's own origin here (DESIGN.md contract 5).
  browser = await sharedChromium();
});

async function envelopeFor(org: string, request: { signerVerification?: "code" | "attested" } = {}) {
  const { token } = await mintToken(org, "agent@browser.test");
  const api = createApiClient(dev.base, token);
  // Addresses of their own per envelope: the newest mail to one is then this signer's code and nobody else's.
  const stamp = `${Date.now()}.${Math.random().toString(36).slice(2, 8)}`;
  const tenant = { name: "Tess Browser", email: `tess.${stamp}@browser.test` };
  const landlord = { name: "Lars Browser", email: `lars.${stamp}@browser.test` };
  const canonical = {
    schemaVersion: 1 as const,
    formKey: "on/standard-lease" as const,
    lease: {
      tenants: [tenant],
      landlords: [landlord],
      property: { address: { street: "1 Page St", city: "Toronto", province: "ON" } },
      term: { commencement: { year: 2027, month: 3, day: 1 } },
      monthlyRent: { cents: 199_900 },
    },
    provenance: { aiDrafted: false },
  };
  const doc = await api.POST("/api/documents", { body: { formKey: "on/standard-lease", canonical } });
  expect(doc.response.status).toBe(201);
  const sent = await api.POST("/api/documents/{id}/signature", { params: { path: { id: doc.data!.id } }, body: request });
  expect(sent.response.status).toBe(201);
  // Landlords sign first, then tenants (the parties derived from the lease).
  return { api, envelopeId: sent.data!.envelopeId, links: sent.data!.links, landlord, tenant };
}

/** A browser tab of a signer of their own, from an address of their own (see clientAddress). */
const signerPage = () => browser.newPage({ extraHTTPHeaders: { "cf-connecting-ip": clientAddress() } });

/** Watches a page for script errors and console errors; `allowed` are console errors expected at that point. */
function watch(page: Page) {
  const failures: string[] = [];
  let allowed: RegExp[] = [];
  page.on("pageerror", (err) => failures.push(String(err)));
  page.on("console", (msg) => msg.type() === "error" && !allowed.some((re) => re.test(msg.text())) && failures.push(msg.text()));
  return { failures, allow: (...res: RegExp[]) => void (allowed = res) };
}

/** On the signing page: ask for a code, read it from the mail as the signer would, type it and have it checked. */
async function verifyWithMailedCode(page: Page, email: string) {
  await page.getByRole("button", { name: "Send me a code" }).click();
  await expect.poll(() => page.isVisible("#code-entry")).toBe(true);
  // The address the code went to is shown masked.
  const sentTo = (await page.textContent("#sent-to"))!;
  expect(sentTo).toMatch(/^\w\*+@\w\*+\.test$/);
  expect(await page.textContent("#status")).toContain(`We sent a code to ${sentTo}`);
  const code = await mailedSigningCode(email);
  await page.getByLabel("Code from the e-mail").fill(code);
  await page.getByRole("button", { name: "Verify the code" }).click();
  await expect.poll(() => page.textContent("#status")).toMatch(/^Identity confirmed\./);
  await expect.poll(() => page.isVisible("#consent")).toBe(true);
}

describe("the signing page in a browser", () => {
  it("a signer reads the lease, verifies with the mailed code, consents and signs; the other signs too and the sealed PDF is ready", async () => {
    const { api, envelopeId, links, landlord, tenant } = await envelopeFor(`Browser Realty ${Date.now()}`);
    expect(links.map((l) => l.role)).toEqual(["landlord", "tenant"]);
    expect(links[0]!.url!.startsWith(`${dev.base}/sign/`)).toBe(true);
    const page = await signerPage();
    const { failures, allow } = watch(page);
    await page.goto(links[0]!.url!);
    await expect.poll(() => page.textContent("#who")).toBe("Lars Browser (landlord)");

    // The lease is on the page, as the lease says it: the parties, the address, the rent; and its PDF.
    await expect.poll(() => page.isVisible("#document")).toBe(true);
    expect(await page.textContent("#document-title")).toBe("Residential Tenancy Agreement (Standard Form of Lease), Ontario");
    const lines = await page.locator("#document p").allTextContents();
    expect(lines).toEqual(
      expect.arrayContaining([
        `Landlord: Lars Browser (${landlord.email})`,
        `Tenant: Tess Browser (${tenant.email})`,
        "1 Page St, Toronto, ON",
        "Commences: March 1, 2027",
        "$1,999.00 a month, payable monthly",
      ]),
    );
    const pdf = page.getByRole("link", { name: "Open the document as a PDF" });
    expect(await pdf.isVisible()).toBe(true);
    const pdfUrl = (await pdf.getAttribute("href"))!;
    expect(pdfUrl.startsWith(`${dev.base}/api/public/files/`)).toBe(true);
    const pdfRes = await fetch(pdfUrl);
    expect(pdfRes.status).toBe(200);
    const pdfBytes = Buffer.from(await pdfRes.arrayBuffer());
    expect(pdfBytes.subarray(0, 5).toString("latin1")).toBe("%PDF-");
    // The fingerprint the page shows is the PDF's.
    expect(await page.textContent("#sha256")).toBe(createHash("sha256").update(pdfBytes).digest("hex"));

    await verifyWithMailedCode(page, landlord.email);
    await page.getByLabel(/I agree to sign this document electronically/).check();
    await page.locator("#consent-button").click();
    await expect.poll(() => page.isVisible("#sign")).toBe(true);
    await page.getByRole("button", { name: "Sign the document" }).click();
    await expect.poll(() => page.textContent("#status")).toBe("Signed. Thank you.");
    expect(await page.isVisible("#signed")).toBe(true);
    expect(failures).toEqual([]);

    const read = await api.GET("/api/signatures/{envelopeId}", { params: { path: { envelopeId } } });
    expect(read.data!.signers.map((s) => s.status)).toEqual(["signed", "sent"]);
    expect(read.data!.signers[0]!.verification).toBe("email_code");
    expect(read.data!.signedDocument.status).toBe("not_applicable");
    // The link is now dead: the page says so (the 404 of its GET is logged by Chromium as a failed load: expected).
    allow(/status of 404/);
    await page.reload();
    await expect.poll(() => page.isVisible("#gone")).toBe(true);
    expect(failures).toEqual([]);
    await page.close();

    // The tenant signs from their own client: code from the mail, consent, sign; that completes the envelope.
    expect(await signOverHttp(links[1]!.url!, tenant.email)).toEqual({ ok: true, completed: true });
    const done = await waitForSealedDocument(api, envelopeId);
    expect(done.status).toBe("completed");
    expect(done.signers.map((s) => [s.status, s.verification])).toEqual([
      ["signed", "email_code"],
      ["signed", "email_code"],
    ]);
    const sealed = await downloadSealedDocument(api, envelopeId);
    expect(sealed.link.url.startsWith(`${dev.base}/api/public/files/`)).toBe(true);
    expect(Date.parse(sealed.link.expiresAt)).toBeGreaterThan(Date.now());
    expect(sealed.contentType).toBe("application/pdf");
    expect(Buffer.from(sealed.bytes.subarray(0, 5)).toString("latin1")).toBe("%PDF-");
    const verified = await verifyPdf(dev.base, sealed.bytes);
    expect(verified.status).toBe(200);
    expect(JSON.parse(verified.text)).toMatchObject({
      valid: true,
      envelopeId,
      signers: [{ name: "Lars Browser" }, { name: "Tess Browser" }],
    });
  });

  it("on a code envelope a signer reads the lease only after the code, then declines with a reason", async () => {
    const { api, envelopeId, links, tenant } = await envelopeFor(`Browser Decline ${Date.now()}`, { signerVerification: "code" });
    const page = await signerPage();
    const { failures } = watch(page);
    await page.goto(links[1]!.url!);
    await expect.poll(() => page.textContent("#who")).toBe("Tess Browser (tenant)");
    // A forwarded link shows nobody's details: the lease appears once the code is verified.
    await expect.poll(() => page.textContent("#document")).toContain("The document is shown once you have confirmed it is you");
    expect(await page.getByRole("link", { name: "Open the document as a PDF" }).isVisible()).toBe(false);
    await verifyWithMailedCode(page, tenant.email);
    await expect
      .poll(() => page.locator("#document p").allTextContents())
      .toEqual(expect.arrayContaining([`Tenant: Tess Browser (${tenant.email})`]));
    expect(await page.getByRole("link", { name: "Open the document as a PDF" }).isVisible()).toBe(true);
    await page.getByLabel(/I agree to sign/).check();
    await page.locator("#consent-button").click();
    await expect.poll(() => page.isVisible("#sign")).toBe(true);
    await page.getByLabel("Reason for declining (optional)").fill("The rent is wrong");
    await page.getByRole("button", { name: "Decline to sign" }).click();
    await expect.poll(() => page.isVisible("#declined")).toBe(true);
    expect(await page.textContent("#status")).toBe("You declined to sign.");
    expect(failures).toEqual([]);
    expect((await api.GET("/api/signatures/{envelopeId}", { params: { path: { envelopeId } } })).data!.status).toBe("declined");
    const audit = await api.GET("/api/signatures/{envelopeId}/audit", { params: { path: { envelopeId } } });
    expect(audit.data!.events.map((e) => e.event)).toEqual(expect.arrayContaining(["code_sent", "authenticated", "consented"]));
    expect(audit.data!.events.at(-1)).toMatchObject({ event: "declined", data: { reason: "The rent is wrong" } });
    await page.close();
  });
});

describe("the reviews widget embedded on another site", () => {
  let site: Server;
  let siteUrl = "";

  beforeAll(async () => {
    // Another origin (another port) serving a page that embeds the widget, as a brokerage's own site would.
    site = createServer((req, res) => {
      const q = new URL(req.url ?? "/", "http://x").searchParams;
      const slug = q.get("agent") ?? "";
      const script = `<script src="${dev.base}/widget/reviews.js"></script>`;
      const widgets = q
        .getAll("agent")
        .map((a) => `<reviews-widget agent="${a}"></reviews-widget>`)
        .join("");
      if (q.get("strict") === "1") {
        // A strict host: no inline styles at all, the script after the elements, two widgets (one may be a 404).
        res.writeHead(200, {
          "content-type": "text/html",
          "content-security-policy": `default-src 'self'; style-src 'self'; script-src ${dev.base}; connect-src ${dev.base}`,
        });
        res.end(
          `<!doctype html><html lang="en"><head><title>Strict broker site</title></head><body><h1>Our agents</h1>${widgets}${script}</body></html>`,
        );
        return;
      }
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<!doctype html><html lang="en"><head><title>Broker site</title><style>p { display: none } li { color: rgb(255, 0, 0) }</style>
        ${script}</head>
        <body><h1>Our agent</h1><reviews-widget agent="${slug}"></reviews-widget></body></html>`);
    });
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as { port: number }).port}`;
  });

  afterAll(() => new Promise<void>((resolve) => site?.close(() => resolve())));

  it("renders the agent's published reviews and rating in a shadow root, with JSON-LD in the page", async () => {
    const { token, userId } = await mintToken(`Widget Realty ${Date.now()}`, "agent@widget.test");
    const api = createApiClient(dev.base, token);
    const created = await api.POST("/api/reputation/testimonials", {
      body: {
        agentUserId: userId,
        category: "BUYER",
        rating: 5,
        headline: "Found our home",
        body: "Wonderful service from start to finish.",
        displayName: "Robin Buyer",
        permissionToPublishName: true,
      },
    });
    const id = created.data!.id;
    await api.POST("/api/reputation/testimonials/{id}/approve", { params: { path: { id } } });
    await api.POST("/api/reputation/testimonials/{id}/publish", { params: { path: { id } } });
    await api.PUT("/api/reputation/profile", { body: { draftConfig: { displayName: "Wendy Widget" } } });
    const slug = (await api.POST("/api/reputation/profile/publish", { body: {} })).data!.slug;

    const page = await browser.newPage();
    const failures: string[] = [];
    page.on("pageerror", (err) => failures.push(String(err)));
    await page.goto(`${siteUrl}/?agent=${slug}`);
    const widget = page.locator("reviews-widget");
    // Generous: the page loads the script, then the feed, from a dev server that may share two cores with others.
    await expect.poll(() => widget.locator("li").count(), { timeout: 15_000 }).toBe(1);
    expect(await widget.locator("li h3").textContent()).toBe("Found our home");
    expect(await widget.locator("li .author").textContent()).toBe("Robin Buyer");
    expect(await widget.locator(".summary").textContent()).toContain("1 review");
    expect(await widget.locator('[role="img"]').first().getAttribute("aria-label")).toBe("5 out of 5 stars");
    // The host page's styles do not reach inside: its `p { display: none }` and red list items stay outside.
    expect(await widget.locator("li p").first().isVisible()).toBe(true);
    expect(await widget.locator("li").evaluate((el) => getComputedStyle(el).color)).not.toBe("rgb(255, 0, 0)");
    const ld = JSON.parse((await page.locator('reviews-widget script[type="application/ld+json"]').textContent())!);
    expect(ld).toMatchObject({ "@type": "RealEstateAgent", name: "Wendy Widget", aggregateRating: { ratingValue: 5, reviewCount: 1 } });
    expect(failures).toEqual([]);
    await page.close();
  });

  it("on a strict host page (style-src 'self', script after the elements) is styled, fetches once per widget, and puts only a found agent's JSON-LD in the page", async () => {
    const { token, userId } = await mintToken(`Strict Widget Realty ${Date.now()}`, "agent@strict.test");
    const api = createApiClient(dev.base, token);
    const created = await api.POST("/api/reputation/testimonials", {
      body: { agentUserId: userId, category: "SELLER", rating: 4, body: "Sold above asking." },
    });
    const id = created.data!.id;
    await api.POST("/api/reputation/testimonials/{id}/approve", { params: { path: { id } } });
    await api.POST("/api/reputation/testimonials/{id}/publish", { params: { path: { id } } });
    await api.PUT("/api/reputation/profile", { body: { draftConfig: { displayName: "Stella Strict" } } });
    const slug = (await api.POST("/api/reputation/profile/publish", { body: {} })).data!.slug;

    const page = await browser.newPage();
    const feedCalls: string[] = [];
    const violations: string[] = [];
    page.on("request", (r) => {
      if (r.url().includes("/api/public/reviews/")) feedCalls.push(r.url());
    });
    page.on("console", (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    await page.goto(`${siteUrl}/?strict=1&agent=${slug}&agent=nobody-${Date.now()}`);
    const [found, missing] = [page.locator("reviews-widget").nth(0), page.locator("reviews-widget").nth(1)];
    await expect.poll(() => found.locator("li").count(), { timeout: 15_000 }).toBe(1);
    await expect.poll(() => missing.locator(".fallback").textContent()).toBe("Reviews are unavailable right now.");
    // Styled although the host allows no inline style: the stars are the widget's amber, the author line grey.
    expect(
      await found
        .locator(".stars")
        .first()
        .evaluate((el) => getComputedStyle(el).color),
    ).toBe("rgb(217, 119, 6)");
    // An anonymous review is a client's, not a "verified" one.
    expect(await found.locator("li .author").textContent()).toBe("Client");
    expect(violations).toEqual([]);
    // One fetch per widget, though the script came after the elements.
    expect(feedCalls).toHaveLength(2);
    // What search engines read: the found agent's JSON-LD only.
    const lds = await page.locator('script[type="application/ld+json"]').allTextContents();
    expect(lds.map((t) => JSON.parse(t).name)).toEqual(["Stella Strict"]);

    // Switching the found widget to an unknown agent takes that agent's JSON-LD out of the page.
    await found.evaluate((el) => el.setAttribute("agent", "nobody-at-all"));
    await expect.poll(() => found.locator(".fallback").textContent()).toBe("Reviews are unavailable right now.");
    expect(await page.locator('script[type="application/ld+json"]').count()).toBe(0);
    await page.close();
  });

  it("shows a fallback when the feed is unreachable", async () => {
    const page = await browser.newPage();
    await page.goto(`${siteUrl}/?agent=nobody-published-here`);
    await expect.poll(() => page.locator("reviews-widget .fallback").textContent()).toBe("Reviews are unavailable right now.");
    await page.close();
  });
});

describe("the clickwrap consent page embedded on another site", () => {
  let site: Server;
  let siteUrl = "";

  beforeAll(async () => {
    // Another origin (another port) serving a sign-up page that frames the consent page, as a customer's own site would,
    // and records the consent page's postMessage into window.__accepted.
    site = createServer((req, res) => {
      const q = new URL(req.url ?? "/", "http://x").searchParams;
      const src = `${dev.base}/consent/${encodeURIComponent(q.get("agreement") ?? "")}?subjectRef=${encodeURIComponent(q.get("subject") ?? "")}`;
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<!doctype html><html lang="en"><head><title>Customer site</title>
        <script>
          window.__accepted = [];
          addEventListener("message", (e) => {
            if (e.data && e.data.type === "clickwrap:accepted") window.__accepted.push({ origin: e.origin, data: e.data });
          });
        </script></head>
        <body><h1>Create your account</h1><iframe id="consent" title="Terms" src="${src}" width="640" height="480"></iframe></body></html>`);
    });
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as { port: number }).port}`;
    expect(new URL(siteUrl).origin).not.toBe(new URL(dev.base).origin);
  });

  afterAll(() => new Promise<void>((resolve) => site?.close(() => resolve())));

  async function publishFor(org: string, key: string, title: string, body: string) {
    const { token } = await mintToken(org, "owner@clickwrap.test");
    const api = createApiClient(dev.base, token);
    const published = await api.POST("/api/clickwrap", { body: { key, title, body } });
    expect(published.response.status).toBe(201);
    return { api, id: published.data!.id, versionHash: published.data!.versionHash };
  }

  async function openHost(agreementId: string, subjectRef: string, allowed: RegExp[] = []) {
    const page = await browser.newPage();
    const failures: string[] = [];
    page.on("pageerror", (err) => failures.push(String(err)));
    page.on("console", (msg) => msg.type() === "error" && !allowed.some((re) => re.test(msg.text())) && failures.push(msg.text()));
    await page.goto(`${siteUrl}/?agreement=${encodeURIComponent(agreementId)}&subject=${encodeURIComponent(subjectRef)}`);
    const frame = page.frameLocator("#consent");
    const messages = () =>
      page.evaluate(() => (window as unknown as { __accepted: { origin: string; data: Record<string, unknown> }[] }).__accepted);
    return { page, frame, failures, messages };
  }

  it("a person reads the terms in the iframe and accepts; the parent is told and the acceptance is recorded", async () => {
    const title = "Terms of Service";
    const body = "Welcome to Browser Realty.\n\n1. Be kind to the agents.\n2. Read the listings carefully.";
    const { api, id, versionHash } = await publishFor(`Clickwrap Realty ${Date.now()}`, `terms-${Date.now()}`, title, body);

    const { page, frame, failures, messages } = await openHost(id, "browser-subject-1");
    await expect.poll(() => frame.locator("h1").textContent()).toBe(title);
    expect(await frame.locator("h1").isVisible()).toBe(true);
    expect(await frame.locator("#text").textContent()).toBe(body);
    expect(await frame.locator("#text").isVisible()).toBe(true);
    expect(await frame.getByText("2. Read the listings carefully.").isVisible()).toBe(true);

    await frame.getByRole("button", { name: "I accept" }).click();
    await expect.poll(() => frame.locator("#status").textContent()).toContain("Thank you");
    expect(await frame.locator("#accept").isVisible()).toBe(false);
    await expect.poll(messages).toHaveLength(1);
    expect((await messages())[0]).toEqual({
      origin: new URL(dev.base).origin,
      data: { type: "clickwrap:accepted", agreementId: id, versionHash, subjectRef: "browser-subject-1" },
    });
    expect(failures).toEqual([]);
    await page.close();

    const list = await api.GET("/api/clickwrap/{agreementId}/acceptances", {
      params: { path: { agreementId: id }, query: { subjectRef: "browser-subject-1" } },
    });
    expect(list.response.status).toBe(200);
    expect(list.data!.versionHash).toBe(versionHash);
    expect(list.data!.acceptedCurrentVersion).toBe(true);
    expect(list.data!.acceptances).toHaveLength(1);
    expect(list.data!.acceptances[0]).toMatchObject({ versionHash, subjectRef: "browser-subject-1" });
    expect(list.data!.acceptances[0]!.userAgent).toMatch(/Chrome/);
    // Nothing else was recorded for this agreement.
    const all = await api.GET("/api/clickwrap/{agreementId}/acceptances", { params: { path: { agreementId: id } } });
    expect(all.data!.acceptances).toHaveLength(1);
  });

  it("a text republished while the page is open: accepting says it was updated, reloads the new text, and records only the new version", async () => {
    const stamp = Date.now();
    const key = `privacy-${stamp}`;
    const oldBody = "Privacy policy, first edition.\nWe keep your e-mail address.";
    const newBody = "Privacy policy, second edition.\nWe keep your e-mail address and your phone number.";
    const { api, id, versionHash: oldHash } = await publishFor(`Clickwrap Update ${stamp}`, key, "Privacy Policy", oldBody);

    // The stale POST answers 409, which Chromium logs as a failed resource load: expected here, nothing else is.
    const { page, frame, failures, messages } = await openHost(id, "browser-subject-2", [/status of 409/]);
    await expect.poll(() => frame.locator("#text").textContent()).toBe(oldBody);

    const republished = await api.POST("/api/clickwrap", { body: { key, title: "Privacy Policy", body: newBody } });
    expect(republished.response.status).toBe(201);
    expect(republished.data!.id).toBe(id);
    const newHash = republished.data!.versionHash;
    expect(newHash).not.toBe(oldHash);

    // The iframe still shows the old text; accepting it is refused and the page shows the new one.
    expect(await frame.locator("#text").textContent()).toBe(oldBody);
    await frame.getByRole("button", { name: "I accept" }).click();
    await expect.poll(() => frame.locator("#status").textContent()).toContain("updated");
    await expect.poll(() => frame.locator("#text").textContent(), { timeout: 10_000 }).toBe(newBody);
    expect(await frame.locator("#status").textContent()).toBe("");
    expect(await messages()).toEqual([]);
    const afterStale = await api.GET("/api/clickwrap/{agreementId}/acceptances", { params: { path: { agreementId: id } } });
    expect(afterStale.data!.acceptances).toEqual([]);

    await frame.getByRole("button", { name: "I accept" }).click();
    await expect.poll(() => frame.locator("#status").textContent()).toContain("Thank you");
    await expect.poll(messages).toHaveLength(1);
    expect((await messages())[0]!.data).toEqual({
      type: "clickwrap:accepted",
      agreementId: id,
      versionHash: newHash,
      subjectRef: "browser-subject-2",
    });
    expect(failures).toEqual([]);
    await page.close();

    const list = await api.GET("/api/clickwrap/{agreementId}/acceptances", {
      params: { path: { agreementId: id }, query: { subjectRef: "browser-subject-2" } },
    });
    expect(list.data!.versionHash).toBe(newHash);
    expect(list.data!.acceptedCurrentVersion).toBe(true);
    expect(list.data!.acceptances).toHaveLength(1);
    expect(list.data!.acceptances[0]).toMatchObject({ versionHash: newHash, subjectRef: "browser-subject-2" });
    const all = await api.GET("/api/clickwrap/{agreementId}/acceptances", { params: { path: { agreementId: id } } });
    expect(all.data!.acceptances.map((a) => a.versionHash)).toEqual([newHash]);
  });
});

describe("the survey page in a browser", () => {
  const COMMENT = "Wonderful agent, so helpful and kind. We love our new home and would happily recommend her!";

  async function linkSurvey(org: string) {
    const { token, userId } = await mintToken(org, "agent@survey.test");
    const api = createApiClient(dev.base, token);
    const contact = await api.POST("/v1/contacts", {
      body: { firstName: "Sam", lastName: "Survey", email: `sam.${Date.now()}@survey.test` },
    });
    expect(contact.response.status).toBe(201);
    const template = await api.POST("/api/reputation/surveys/templates", {
      body: {
        name: "How did we do?",
        description: "A minute of your time helps us serve you better.",
        sendDelayHours: 0,
        questions: [
          { id: "overall", type: "rating", label: "Overall, how would you rate your agent?", required: true, purpose: "overallRating" },
          { id: "recommend", type: "nps", label: "How likely are you to recommend us?", required: true },
          {
            id: "found",
            type: "single_choice",
            label: "How did you find us?",
            required: false,
            options: ["A friend", "The web", "A sign"],
          },
          {
            id: "comments",
            type: "text",
            label: "Tell us about your experience",
            help: "We may quote you <em>if</em> you let us.",
            required: false,
            maxLength: 1000,
            purpose: "testimonial",
          },
          { id: "publish", type: "yes_no", label: "May we publish your comments?", required: true, purpose: "publishConsent" },
        ],
      },
    });
    expect(template.response.status).toBe(201);
    const survey = await api.POST("/api/reputation/surveys", {
      body: { recipientPersonId: contact.data!.data.id, agentUserId: userId, channel: "LINK" },
    });
    expect(survey.response.status).toBe(201);
    return { api, userId, survey: survey.data! };
  }

  it("a client fills in the survey, is told what is missing, sends it; the response becomes a PENDING testimonial", async () => {
    const org = `Survey Realty ${Date.now()}`;
    const { api, userId, survey } = await linkSurvey(org);
    expect(survey.surveyUrl).toBe(`${dev.base}/survey/${survey.accessToken}`);
    const page = await browser.newPage();
    const failures: string[] = [];
    page.on("pageerror", (err) => failures.push(String(err)));
    // The refused submission (400) and the dead link (404) are logged by Chromium as failed loads: expected here.
    page.on("console", (msg) => msg.type() === "error" && !/status of 40[04]/.test(msg.text()) && failures.push(msg.text()));

    const opened = await page.goto(survey.surveyUrl!);
    const headers = opened!.headers();
    expect(headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(headers["content-security-policy"]).toContain("connect-src 'self'");
    expect(headers["referrer-policy"]).toBe("no-referrer");
    expect(headers["cache-control"]).toBe("no-store");
    await expect.poll(() => page.textContent("h1#title")).toBe("How did we do?");
    expect(await page.title()).toBe("How did we do?");
    expect(await page.textContent("#from")).toBe(`From ${org}`);
    expect(await page.textContent("#description")).toBe("A minute of your time helps us serve you better.");

    // Each question is a labelled group; the scales say what their ends mean; required ones say so.
    const overall = page.getByRole("group", { name: /Overall, how would you rate your agent\? \(required\)/ });
    const recommend = page.getByRole("group", { name: /How likely are you to recommend us\?/ });
    expect(await overall.getByRole("radio").count()).toBe(5);
    expect(await recommend.getByRole("radio").count()).toBe(11);
    expect(await recommend.getByText("0 = not at all likely, 10 = extremely likely").isVisible()).toBe(true);
    expect(await recommend.getByRole("radio", { name: "0", exact: true }).getAttribute("required")).not.toBeNull();
    const comments = page.getByRole("textbox", { name: "Tell us about your experience" });
    expect(await comments.getAttribute("maxlength")).toBe("1000");
    expect(await comments.getAttribute("aria-describedby")).toBe("q-comments-help q-comments-count");
    expect(await page.getByRole("group", { name: "How did you find us?", exact: true }).getByRole("radio").count()).toBe(3);
    // The organization's text is text, never markup.
    expect(await page.textContent("#q-comments-help")).toBe("We may quote you <em>if</em> you let us.");
    expect(await page.locator("main em").count()).toBe(0);

    // Everything but the required NPS question.
    await overall.getByRole("radio", { name: "5", exact: true }).check();
    await page.getByRole("group", { name: "How did you find us?" }).getByLabel("A friend").check();
    await comments.fill(COMMENT);
    expect(await page.textContent("#q-comments-count")).toBe(`${COMMENT.length} of 1000 characters`);
    await page
      .getByRole("group", { name: /May we publish your comments/ })
      .getByLabel("Yes")
      .check();
    await page.getByRole("button", { name: "Send my answers" }).click();

    // The server's 400: the message next to the question, in the alert summary, and focus on the question's first choice.
    await expect.poll(() => page.textContent("#q-recommend-error")).toBe("Please answer this question.");
    expect(await page.isVisible("#q-recommend-error")).toBe(true);
    expect(await page.getByRole("alert").textContent()).toContain("How likely are you to recommend us? – Please answer this question.");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("q-recommend-0");
    expect(await recommend.getAttribute("aria-describedby")).toBe("q-recommend-error q-recommend-scale");
    expect(await recommend.getByRole("radio", { name: "10" }).getAttribute("aria-invalid")).toBe("true");
    expect(await page.isVisible("#q-overall-error")).toBe(false);
    expect(await page.getByRole("button", { name: "Send my answers" }).isEnabled()).toBe(true);

    await recommend.getByRole("radio", { name: "10", exact: true }).check();
    await page.getByRole("button", { name: "Send my answers" }).click();
    await expect.poll(() => page.isVisible("#thanks")).toBe(true);
    expect(await page.isVisible("#survey")).toBe(false);
    expect(await page.textContent("#thanks h1")).toBe("Thank you");

    // Stored with the types of the schema: numbers, the option's text, the comment, a boolean.
    const read = await api.GET("/api/reputation/surveys/{id}", { params: { path: { id: survey.id } } });
    expect(read.data!.status).toBe("COMPLETED");
    expect(read.data!.response!.answers).toEqual({ overall: 5, recommend: 10, found: "A friend", comments: COMMENT, publish: true });

    // The SURVEY_COMPLETED consumer (through the local queue) turns it into a PENDING testimonial.
    const testimonial = async () => {
      const list = await api.GET("/api/reputation/testimonials", { params: { query: { status: "PENDING" } } });
      return list.data!.testimonials.find((t) => t.source === "SURVEY" && t.body === COMMENT) ?? null;
    };
    await expect.poll(testimonial, { timeout: 30_000, interval: 500 }).not.toBeNull();
    expect(await testimonial()).toMatchObject({
      status: "PENDING",
      source: "SURVEY",
      rating: 5,
      agentUserId: userId,
      visibility: "PRIVATE",
    });

    // The link is used up: the page says so.
    await page.reload();
    await expect.poll(() => page.isVisible("#gone")).toBe(true);
    expect(await page.textContent("#gone h1")).toBe("This survey is no longer available");
    expect(failures).toEqual([]);
    await page.close();
  });

  it("a link that never worked says the survey is no longer available", async () => {
    const page = await browser.newPage();
    const failures: string[] = [];
    page.on("pageerror", (err) => failures.push(String(err)));
    page.on("console", (msg) => msg.type() === "error" && !/status of 404/.test(msg.text()) && failures.push(msg.text()));
    await page.goto(`${dev.base}/survey/srv_${"x".repeat(43)}`);
    await expect.poll(() => page.isVisible("#gone")).toBe(true);
    expect(await page.isVisible("#form")).toBe(false);
    expect(await page.textContent("#status")).toBe("");
    expect(failures).toEqual([]);
    await page.close();
  });
});
