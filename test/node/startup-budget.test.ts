// Issue 22: every new isolate loads the whole script and runs its startup before its first answer, so both are
// budgets, measured by wrangler itself on the bundle a deploy would upload. The startup target is 50 ms; this test
// fails past twice that (issue 41), a margin the suite's own load does not reach. `npm run bench`
// (bench/startup.node.bench.test.ts) prints the figure beside a one-line Worker's, profiled in the same run.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { buildBundle, startupMs } from "./bundle";

const GZIP_BUDGET_KIB = 1024;
const STARTUP_LIMIT_MS = 100;
const RUNS = 3;

describe("the Worker's cold start (wrangler deploy --dry-run, wrangler check startup)", () => {
  const dir = mkdtempSync(join(tmpdir(), "startup-"));
  let built: Awaited<ReturnType<typeof buildBundle>>;
  beforeAll(async () => {
    built = await buildBundle(dir);
  }, 120_000);

  it(`uploads at most ${GZIP_BUDGET_KIB} KiB gzip`, () => {
    console.log(`Worker script: ${built.kib} KiB, ${built.gzipKiB} KiB gzip (budget ${GZIP_BUDGET_KIB})`);
    expect(built.gzipKiB).toBeLessThanOrEqual(GZIP_BUDGET_KIB);
  });

  it(`starts in at most ${STARTUP_LIMIT_MS} ms of CPU (best of ${RUNS} profiles)`, async () => {
    const samples: number[] = [];
    for (let i = 0; i < RUNS; i++) samples.push(await startupMs(built.bundle, join(dir, `startup-${i}.cpuprofile`)));
    console.log(`Worker startup: best ${Math.min(...samples)} ms of ${samples.join(", ")} (limit ${STARTUP_LIMIT_MS}, target 50)`);
    expect(Math.min(...samples)).toBeLessThanOrEqual(STARTUP_LIMIT_MS);
  });
});
