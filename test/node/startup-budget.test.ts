// Issue 22: every new isolate pays the Worker's startup before its first answer, so its CPU and the script's size are
// budgets, measured here by wrangler itself on the bundle a deploy would upload (minified, aliases applied).
import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
const run = promisify(execFile);

/** The targets of issue 22. */
const GZIP_BUDGET_KIB = 1024;
const STARTUP_TARGET_MS = 50;
/**
 * Startup CPU is measured on this machine while the rest of the suite runs beside it: the best of RUNS samples must
 * stay under twice the target. Eager route building (the 106 ms this replaced; 150–190 ms under load) fails it.
 */
const STARTUP_LIMIT_MS = 2 * STARTUP_TARGET_MS;
const RUNS = 3;

const wrangler = (args: string[]) => run("npx", ["wrangler", ...args], { cwd: process.cwd(), env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" }, maxBuffer: 64 * 1024 * 1024 });

describe("the Worker's startup budget", () => {
  it(`uploads at most ${GZIP_BUDGET_KIB} KiB gzip and starts in under ${STARTUP_TARGET_MS} ms of CPU (best of ${RUNS}, at most ${STARTUP_LIMIT_MS} ms on a loaded machine)`, async () => {
    const dir = mkdtempSync(join(tmpdir(), "startup-"));
    const bundle = join(dir, "worker.bundle");
    const built = await wrangler(["deploy", "--dry-run", "--outfile", bundle]);
    const upload = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(built.stdout + built.stderr);
    expect(upload, built.stdout).not.toBeNull();
    const gzipKiB = Number(upload![2]);

    const samples: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const checked = await wrangler(["check", "startup", "--worker", bundle, "--outfile", join(dir, `startup-${i}.cpuprofile`)]);
      const active = /Active: ([\d.]+) ms/.exec(checked.stdout + checked.stderr);
      expect(active, checked.stdout).not.toBeNull();
      samples.push(Number(active![1]));
    }
    const best = Math.min(...samples);
    console.log(`Worker script: ${upload![1]} KiB, ${gzipKiB} KiB gzip (budget ${GZIP_BUDGET_KIB}); startup CPU: ${samples.join(", ")} ms, best ${best} (target ${STARTUP_TARGET_MS}, limit here ${STARTUP_LIMIT_MS})`);
    expect(gzipKiB).toBeLessThanOrEqual(GZIP_BUDGET_KIB);
    expect(best).toBeLessThanOrEqual(STARTUP_LIMIT_MS);
  });
});
