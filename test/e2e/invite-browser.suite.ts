// The invitation link (issue 32) in headless Chromium against `npm run dev`: an owner invites someone through the API,
// the invitee opens the mailed link, has a code mailed, types it, and gets a session token that works on /v1; the link
// is dead afterwards.
import type { Browser } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { createApiClient } from "../../src/client";
import { sharedChromium } from "./helpers/chromium";
import { mintToken, readMail } from "./helpers/local-state";
import { dev } from "./helpers/served";

let browser: Browser;

beforeAll(async () => {
  // The link points at this server: APP_URL is the API's own origin here (DESIGN.md contract 5).
  browser = await sharedChromium();
});

/** The newest mail to `to` whose subject starts with `subject`, read back from the mail log as `npm run mail` reads it. */
async function newestMail(to: string, subject: string): Promise<string> {
  // 30 s: the mail leaves after the answer (waitUntil), on a server sharing both cores with the rest of the suite.
  for (let i = 0; i < 120; i++) {
    const [mail] = await readMail(to, 1);
    if (mail?.subject.startsWith(subject)) return mail.text;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`no "${subject}" mail reached ${to}`);
}

describe("an invitation link in a browser", () => {
  it("signs the invitee in by mailed code and shows a session token that works; the link is then dead", async () => {
    const stamp = `${Date.now()}.${Math.random().toString(36).slice(2, 8)}`;
    const org = `Invite Browser Realty ${stamp}`;
    const owner = await mintToken(org, `owner.${stamp}@invite-browser.test`);
    const email = `invitee.${stamp}@invite-browser.test`;
    const invited = await createApiClient(dev.base, owner.token).POST("/v1/users", { body: { email, name: "Ivy Browser" } });
    expect(invited.response.status).toBe(201);
    const link = (await newestMail(email, "You are invited")).match(/https?:\/\/\S+\/invite\/\S+/)![0];
    expect(link.startsWith(`${dev.base}/invite/inv_`)).toBe(true);

    const page = await browser.newPage();
    const failures: string[] = [];
    page.on("pageerror", (err) => failures.push(String(err)));
    page.on("console", (msg) => msg.type() === "error" && failures.push(msg.text()));
    await page.goto(link);
    expect(await page.locator("h1").textContent()).toBe(`Join ${org}`);
    await page.getByRole("button", { name: "Send me a code" }).click();
    await expect.poll(() => page.locator("h1").textContent()).toBe("Enter your code");
    const code = (await newestMail(email, "Your sign-in code")).match(/\b(\d{6})\b/)![1]!;
    await page.getByLabel("Code").fill(code);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.locator("h1").textContent()).toBe("You are signed in");
    const token = (await page.locator("#session-token").textContent())!;
    expect(token).toMatch(/^sess_[A-Za-z0-9_-]{43}$/);
    expect(failures).toEqual([]);

    const me = await createApiClient(dev.base, token).GET("/v1/users/{id}", { params: { path: { id: invited.data!.data.id } } });
    expect(me.response.status).toBe(200);
    expect(me.data!.data).toMatchObject({ email, role: "agent", status: "active" });

    const again = await page.goto(link);
    expect(again!.status()).toBe(404);
    expect(await page.locator("h1").textContent()).toBe("This invitation link does not work");
    await page.close();
  });
});
