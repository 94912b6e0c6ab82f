import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

/** Debian's Chromium (playwright's own download fails here), headless, as every browser test drives it. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`No Chromium at ${CHROMIUM}: install Debian's chromium (.ci/run does)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/** A phone-sized (390×844) tab from a client address of its own; script errors and console errors (but `allowed`) collected. */
export async function phoneTab(browser: Browser, clientAddress: string, allowed: RegExp[] = []) {
  const page = await browser.newPage({
    viewport: { width: 390, height: 844 },
    deviceScaleFactor: 2,
    isMobile: true,
    hasTouch: true,
    extraHTTPHeaders: { "cf-connecting-ip": clientAddress },
  });
  const failures: string[] = [];
  page.on("pageerror", (err) => failures.push(String(err)));
  page.on("console", (msg) => msg.type() === "error" && !allowed.some((re) => re.test(msg.text())) && failures.push(msg.text()));
  return { page, failures };
}
