// The OAuth authorization pages in headless Chromium against `npm run dev` (issue 14): a user signs in with the code
// mailed to them, approves on the consent page, and the browser lands on the client's loopback redirect URI with a
// code, which the client exchanges for an access token that works on /v1.
import { createHash, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sharedChromium } from "./helpers/chromium";
import { mintToken, readMail } from "./helpers/local-state";
import { dev } from "./helpers/served";

let browser: Browser;
let client: Server;
let redirectUri = "";
const landed: URL[] = [];

beforeAll(async () => {
  browser = await sharedChromium();
  // The client's redirect target: a loopback server, as a desktop MCP client runs (OAUTH_CLIENTS' mcp-dev admits any port).
  client = createServer((req, res) => {
    // Only the redirect counts: Chromium may also ask this origin for /favicon.ico when the page lands.
    const url = new URL(req.url ?? "/", redirectUri);
    if (url.pathname === "/callback") landed.push(url);
    res.writeHead(200, { "content-type": "text/html" });
    res.end("<!doctype html><title>Client</title><p>You can close this window.</p>");
  });
  await new Promise<void>((resolve) => client.listen(0, "127.0.0.1", resolve));
  redirectUri = `http://127.0.0.1:${(client.address() as { port: number }).port}/callback`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => (client ? client.close(() => resolve()) : resolve()));
});

const b64url = (bytes: Buffer) => bytes.toString("base64url");

/** The sign-in code of the newest mail to `email`, read back from the mail log as `npm run mail` reads it. */
async function mailedCode(email: string): Promise<string> {
  // 30 s: the mail leaves after the answer (waitUntil), on a server sharing both cores with the rest of the suite.
  for (let i = 0; i < 120; i++) {
    const [mail] = await readMail(email, 1);
    if (mail) return mail.text.match(/\b(\d{6})\b/)![1]!;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`no sign-in code was mailed to ${email}`);
}

describe("OAuth sign-in and consent in a browser", () => {
  it("signs in by mailed code, approves, lands on the redirect URI with a code, and the code buys a token", async () => {
    const email = `agent-${Date.now()}@oauth-browser.test`;
    const principal = await mintToken(`OAuth Browser Realty ${Date.now()}`, email);
    const verifier = b64url(randomBytes(32));
    const challenge = b64url(createHash("sha256").update(verifier).digest());
    const query = new URLSearchParams({
      client_id: "mcp-dev",
      redirect_uri: redirectUri,
      response_type: "code",
      code_challenge: challenge,
      code_challenge_method: "S256",
      state: "browser-state",
      scope: "contacts:read contacts:write",
    });

    const page = await browser.newPage();
    const failures: string[] = [];
    page.on("pageerror", (err) => failures.push(String(err)));
    page.on("console", (msg) => msg.type() === "error" && failures.push(msg.text()));
    await page.goto(`${dev.base}/oauth/authorize?${query}`);
    await expect.poll(() => page.locator("h1").textContent()).toBe("Sign in");
    await page.getByLabel("E-mail").fill(email);
    await page.getByRole("button", { name: "Send me a code" }).click();
    await expect.poll(() => page.locator("h1").textContent()).toBe("Enter your code");

    await page.getByLabel("Code").fill(await mailedCode(email));
    await page.getByRole("button", { name: "Continue" }).click();
    await expect.poll(() => page.locator("h1").textContent()).toBe("Allow mcp-dev?");
    expect(await page.locator("ul.permissions li").allTextContents()).toEqual([
      "Read contacts and their activities contacts:read",
      "Create and change contacts, log activities contacts:write",
    ]);

    await page.getByRole("button", { name: "Allow" }).click();
    await expect.poll(() => landed.length).toBe(1);
    await expect.poll(() => page.url()).toContain(redirectUri);
    const back = landed[0]!;
    expect(back.searchParams.get("state")).toBe("browser-state");
    expect(back.searchParams.get("iss")).toBe(dev.base);
    const code = back.searchParams.get("code")!;
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(failures).toEqual([]);
    await page.close();

    const tokenRes = await fetch(`${dev.base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code,
        redirect_uri: redirectUri,
        client_id: "mcp-dev",
        code_verifier: verifier,
      }),
    });
    expect(tokenRes.status).toBe(200);
    const token = (await tokenRes.json()) as Record<string, unknown>;
    expect(token).toMatchObject({
      token_type: "Bearer",
      expires_in: 3600,
      user_id: principal.userId,
      organization_id: principal.organizationId,
      permissions: ["contacts:read", "contacts:write"],
    });
    const contacts = await fetch(`${dev.base}/v1/contacts`, { headers: { authorization: `Bearer ${String(token.access_token)}` } });
    expect(contacts.status).toBe(200);
  });

  it("an unknown client gets an error page and stays on this server", async () => {
    const page = await browser.newPage();
    const query = new URLSearchParams({
      client_id: "nobody",
      redirect_uri: redirectUri,
      response_type: "code",
      code_challenge: "x".repeat(43),
      code_challenge_method: "S256",
    });
    const res = await page.goto(`${dev.base}/oauth/authorize?${query}`);
    expect(res!.status()).toBe(400);
    expect(page.url().startsWith(dev.base)).toBe(true);
    expect(await page.locator("h1").textContent()).toBe("This sign-in request cannot continue");
    await page.close();
  });
});
