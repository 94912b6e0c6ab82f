// The configuration the Worker refuses (src/env.ts) refused before it is served or deployed, so the mistake shows in
// the command that made it rather than as a 500 on every request afterwards (issue 29).
import { readFileSync } from "node:fs";

/** The value a `--var NAME:value` (or `--var=NAME:value`) among wrangler's arguments gives NAME; the last one wins. */
export function varFromArgs(args, name) {
  let value;
  for (const arg of args) {
    const item = arg.startsWith("--var=") ? arg.slice("--var=".length) : arg;
    if (item.startsWith(`${name}:`)) value = item.slice(name.length + 1);
  }
  return value;
}

/** A `NAME = "value"` (or '…') of wrangler.toml's top-level [vars] table. */
export function tomlVar(toml, name) {
  const vars = /^\[vars\]\s*$([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(toml)?.[1] ?? "";
  return new RegExp(`^\\s*${name}\\s*=\\s*(["'])(.*?)\\1`, "m").exec(vars)?.[2];
}

const readToml = () => readFileSync(new URL("../wrangler.toml", import.meta.url), "utf8");

/**
 * What is wrong with the deployment a command would run, or null. As wrangler resolves a var: `--var` first, then
 * .dev.vars (`fileVars`, `wrangler dev` only), then wrangler.toml's [vars] (or an environment's, `vars`).
 */
export function configProblem({ args = [], fileVars = {}, vars, toml = vars ? "" : readToml(), environment } = {}) {
  const value = (name) =>
    varFromArgs(args, name) ?? (fileVars[name] || undefined) ?? (vars ? vars[name] || undefined : tomlVar(toml, name));
  // Unset means production, as src/env.ts reads it.
  const env = environment ?? value("ENVIRONMENT") ?? "production";
  const provider = value("EMAIL_PROVIDER") ?? "log";
  if (env === "production" && provider === "log") {
    return 'ENVIRONMENT=production with EMAIL_PROVIDER=log: the log provider keeps mail in a table and sends none (signing links, codes, sign-in codes would never arrive). Set EMAIL_PROVIDER=resend and EMAIL_API_KEY (README "Deploy").';
  }
  return null;
}

/** Prints the problem loudly and ends the command, when there is one. */
export function refuseMisconfiguration(options) {
  const problem = configProblem(options);
  if (!problem) return;
  console.error(`\nRefusing to start: ${problem}\n`);
  process.exit(1);
}
