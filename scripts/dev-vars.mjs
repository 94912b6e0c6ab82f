// The development secrets of .dev.vars.example, for `npm run dev` (as .dev.vars) and the test configs (as bindings).
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";

export const DEV_VARS_EXAMPLE = new URL("../.dev.vars.example", import.meta.url);
const DEV_VARS = new URL("../.dev.vars", import.meta.url);

/** KEY=VALUE lines of `file` (the example by default), without comments and blank lines; quotes around a value go. */
export function readDevVars(file = DEV_VARS_EXAMPLE) {
  return Object.fromEntries(
    readFileSync(file, "utf8")
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith("#") && line.includes("="))
      .map((line) => [
        line.slice(0, line.indexOf("=")).trim(),
        line
          .slice(line.indexOf("=") + 1)
          .trim()
          .replace(/^(["'])(.*)\1$/, "$2"),
      ]),
  );
}

/** The values `npm run dev` runs with: the developer's .dev.vars when there is one, else the example it is copied from. */
export const readLocalDevVars = () => readDevVars(existsSync(DEV_VARS) ? DEV_VARS : DEV_VARS_EXAMPLE);

/**
 * Writes .dev.vars from the example when missing. A developer's own .dev.vars keeps every value it has; a secret the
 * example gained since (a new issue's) is appended, so an older checkout keeps working. The seal pair is not in the
 * example (one private key for every checkout would be no key at all): a new one is generated when absent.
 */
export async function ensureDevVars() {
  if (!existsSync(DEV_VARS)) copyFileSync(DEV_VARS_EXAMPLE, DEV_VARS);
  const have = readFileSync(DEV_VARS, "utf8");
  const missing = Object.entries(readDevVars()).filter(([key]) => !new RegExp(`^\\s*${key}\\s*=`, "m").test(have));
  if (!/^\s*SEAL_PRIVATE_KEY\s*=/m.test(have)) {
    const { generateSealPair } = await import("./seal-dev-cert.mjs");
    // Double quotes: wrangler reads .dev.vars with dotenv, which turns the "\n" in them into line breaks (either works).
    missing.push(...Object.entries(await generateSealPair()).map(([k, v]) => [k, `"${v}"`]));
  }
  if (missing.length > 0)
    appendFileSync(DEV_VARS, `${have.endsWith("\n") ? "" : "\n"}${missing.map(([k, v]) => `${k}=${v}`).join("\n")}\n`);
}

const SEAL_PAIR = new URL("../.wrangler/seal-dev-pair.json", import.meta.url);

/** SEAL_PRIVATE_KEY and SEAL_CERTIFICATE for the test configs: generated once, then reused from .wrangler/ (git-ignored). */
export async function sealBindings() {
  try {
    const pair = JSON.parse(readFileSync(SEAL_PAIR, "utf8"));
    if (pair.SEAL_PRIVATE_KEY && pair.SEAL_CERTIFICATE) return pair;
  } catch {
    // Absent or unreadable: make a new pair.
  }
  const { generateSealPair } = await import("./seal-dev-cert.mjs");
  const pair = await generateSealPair();
  mkdirSync(new URL(".", SEAL_PAIR), { recursive: true });
  // Written aside and renamed, so a config loaded at the same moment never reads half a file.
  const partial = new URL(`seal-dev-pair.${process.pid}.json`, SEAL_PAIR);
  writeFileSync(partial, JSON.stringify(pair));
  renameSync(partial, SEAL_PAIR);
  return pair;
}
