// Issue 22: every new isolate pays the Worker's startup CPU before its first answer (target 50 ms). Measured by
// wrangler itself (`wrangler check startup`) on the bundle a deploy would upload; a timing, so it lives here rather
// than in `npm test`, where the suite's own load moved it (the upload size stays a test: test/node/startup-budget.test.ts).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildBundle, wrangler } from "../test/node/bundle";

const TARGET_MS = 50;
/** Twice the target: eager route building (the 106 ms issue 22 replaced) fails it even on a quiet machine. */
const LIMIT_MS = 2 * TARGET_MS;
const RUNS = 5;

describe("the Worker's startup CPU (Node, wrangler check startup)", () => {
  it(`starts in about ${TARGET_MS} ms of CPU (best of ${RUNS}; at most ${LIMIT_MS})`, async () => {
    const dir = mkdtempSync(join(tmpdir(), "startup-"));
    const { bundle } = await buildBundle(dir);
    const samples: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const checked = await wrangler(["check", "startup", "--worker", bundle, "--outfile", join(dir, `startup-${i}.cpuprofile`)]);
      const active = /Active: ([\d.]+) ms/.exec(checked.stdout + checked.stderr);
      expect(active, checked.stdout).not.toBeNull();
      samples.push(Number(active![1]));
    }
    const sorted = [...samples].sort((a, b) => a - b);
    console.table({ startupCpuMs: { best: sorted[0], median: sorted[RUNS >> 1], target: TARGET_MS, limit: LIMIT_MS } });
    expect(sorted[0]).toBeLessThanOrEqual(LIMIT_MS);
  });
});
