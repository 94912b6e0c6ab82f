// Runs the project's own wrangler (node_modules/.bin, on Node 22 through npm scripts) and captures its output.
import { spawnSync } from "node:child_process";

export function wrangler(args, { quiet = true } = {}) {
  const result = spawnSync("wrangler", args, {
    encoding: "utf8",
    stdio: quiet ? ["ignore", "pipe", "pipe"] : "inherit",
    // CI=true keeps wrangler from prompting ("Ok to proceed?") before applying migrations.
    env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" },
  });
  if (result.status !== 0) {
    const detail = quiet ? `\n${result.stdout ?? ""}${result.stderr ?? ""}` : "";
    throw new Error(`wrangler ${args.join(" ")} failed (exit ${result.status})${detail}`);
  }
  return result.stdout ?? "";
}
