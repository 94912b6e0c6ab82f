// The development secrets of .dev.vars.example, for `npm run dev` (as .dev.vars) and the test configs (as bindings).
import { appendFileSync, copyFileSync, existsSync, readFileSync } from "node:fs";

export const DEV_VARS_EXAMPLE = new URL("../.dev.vars.example", import.meta.url);
const DEV_VARS = new URL("../.dev.vars", import.meta.url);

/** KEY=VALUE lines, without comments and blank lines. */
export function readDevVars() {
  return Object.fromEntries(
    readFileSync(DEV_VARS_EXAMPLE, "utf8")
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line && !line.startsWith("#") && line.includes("="))
      .map((line) => [line.slice(0, line.indexOf("=")).trim(), line.slice(line.indexOf("=") + 1).trim()]),
  );
}

/**
 * Writes .dev.vars from the example when missing. A developer's own .dev.vars keeps every value it has; a secret the
 * example gained since (a new issue's) is appended, so an older checkout keeps working.
 */
export function ensureDevVars() {
  if (!existsSync(DEV_VARS)) return copyFileSync(DEV_VARS_EXAMPLE, DEV_VARS);
  const have = readFileSync(DEV_VARS, "utf8");
  const missing = Object.entries(readDevVars()).filter(([key]) => !new RegExp(`^\\s*${key}\\s*=`, "m").test(have));
  if (missing.length > 0) appendFileSync(DEV_VARS, `${have.endsWith("\n") ? "" : "\n"}${missing.map(([k, v]) => `${k}=${v}`).join("\n")}\n`);
}
