// Runs the project's own wrangler (node_modules/.bin, on Node 22 through npm scripts) and captures its output.
import { spawnSync } from "node:child_process";

const LOCKED = /database is locked|SQLITE_BUSY/;
const ATTEMPTS = 5;

/**
 * One wrangler command. Every local D1 database lives under .wrangler/state, and another wrangler process (a second
 * `npm run dev`, a parallel `npm run token`) may hold its SQLite lock for a moment: a run that failed on the lock is
 * tried again, a few times, before it counts as a failure. The output is captured either way (so the lock is seen),
 * and printed after a success when `quiet` is false. `stream: true` (the deploy, against the account) prints it as it
 * comes and tries once.
 */
export function wrangler(args, { quiet = true, stream = false } = {}) {
  if (stream) {
    const result = spawnSync("wrangler", args, {
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" },
    });
    if (result.status !== 0) throw new Error(`wrangler ${args.join(" ")} failed (exit ${result.status})`);
    return "";
  }
  for (let attempt = 1; ; attempt++) {
    const result = spawnSync("wrangler", args, {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      // CI=true keeps wrangler from prompting ("Ok to proceed?") before applying migrations.
      env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" },
    });
    const output = `${result.stdout ?? ""}${result.stderr ?? ""}`;
    if (result.status === 0) {
      if (!quiet) process.stdout.write(output);
      return result.stdout ?? "";
    }
    if (attempt >= ATTEMPTS || !LOCKED.test(output))
      throw new Error(`wrangler ${args.join(" ")} failed (exit ${result.status})\n${output}`);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 250 * attempt);
  }
}
