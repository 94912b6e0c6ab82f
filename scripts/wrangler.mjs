// Runs the project's own wrangler (node_modules/.bin, on Node 22 through npm scripts) and captures its output.
import { spawn, spawnSync } from "node:child_process";

const options = (quiet) => ({
  stdio: quiet ? ["ignore", "pipe", "pipe"] : "inherit",
  // CI=true keeps wrangler from prompting ("Ok to proceed?") before applying migrations.
  env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" },
});

const failure = (args, status, stdout, stderr, quiet) => new Error(`wrangler ${args.join(" ")} failed (exit ${status})${quiet ? `\n${stdout ?? ""}${stderr ?? ""}` : ""}`);

export function wrangler(args, { quiet = true } = {}) {
  const result = spawnSync("wrangler", args, { encoding: "utf8", ...options(quiet) });
  if (result.status !== 0) throw failure(args, result.status, result.stdout, result.stderr, quiet);
  return result.stdout ?? "";
}

/** The same, without blocking: several wrangler commands (one per database) then run side by side. */
export function wranglerAsync(args, { quiet = true } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn("wrangler", args, options(quiet));
    let stdout = "";
    let stderr = "";
    child.stdout?.setEncoding("utf8").on("data", (d) => (stdout += d));
    child.stderr?.setEncoding("utf8").on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (status) => (status === 0 ? resolve(stdout) : reject(failure(args, status, stdout, stderr, quiet))));
  });
}
