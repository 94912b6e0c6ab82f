import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

/** Debian's Chromium (playwright's own download fails here), headless, as every browser test drives it. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

function launchChromium(): Promise<Browser> {
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

let shared: Promise<Browser> | undefined;

/**
 * The file's one Chromium, launched at the first call: the browser suites of served.test.ts share it (a launch is
 * about 3 s of CPU, and every suite's hooks run at the file's start, so each kept a browser of its own open for the
 * whole file). Nothing carries over between them: `browser.newPage()` opens a context of its own each time.
 * helpers/served.ts closes it after the file.
 */
export const sharedChromium = (): Promise<Browser> => (shared ??= launchChromium());

export async function closeSharedChromium(): Promise<void> {
  const browser = shared;
  shared = undefined;
  await (await browser?.catch(() => undefined))?.close();
}
