// Issues 22 and 41: every new isolate pays the Worker's startup CPU before its first answer (target 50 ms; npm test
// fails past 100 ms, test/node/startup-budget.test.ts). Measured by wrangler itself (`wrangler check startup`) on the
// bundle a deploy would upload, each profile beside one of a one-line Worker in the same run, and held to a ratio of
// it: the absolute figure moves with the machine's load (the same bundle profiled 35 ms quiet, 75–190 ms busy).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildBundle, buildFloorBundle, startupMs } from "../test/node/bundle";

const TARGET_MS = 50;
const RUNS = 7;
/**
 * The Worker's median startup against the one-line Worker's, profiled in turn: 1.4–2.1x here since issue 41 (the app
 * is built at its first request), 5x with the app built at load as before it, so 3x fails that on a busy machine too.
 */
const MAX_RATIO = 3;

/**
 * Median of the profiles that sampled anything: a one-line Worker's startup can fall between two samples, and then
 * wrangler reports 0 ms of it (its figures here: 0, 0, 18, 22, 24, 28, 34).
 */
const median = (s: number[]) => {
  const sampled = s.filter((ms) => ms > 0).sort((a, b) => a - b);
  return sampled[sampled.length >> 1] ?? 0;
};

describe("the Worker's startup CPU (Node, wrangler check startup)", () => {
  it(`starts within ${MAX_RATIO}x a one-line Worker's startup (medians of ${RUNS} profiles each, interleaved; target ${TARGET_MS} ms)`, async () => {
    const dir = mkdtempSync(join(tmpdir(), "startup-"));
    const { bundle } = await buildBundle(dir);
    const floor = await buildFloorBundle(dir);
    const samples = { worker: [] as number[], floor: [] as number[] };
    for (let i = 0; i < RUNS; i++) {
      samples.floor.push(await startupMs(floor, join(dir, `floor-${i}.cpuprofile`)));
      samples.worker.push(await startupMs(bundle, join(dir, `startup-${i}.cpuprofile`)));
    }
    const ratio = median(samples.worker) / median(samples.floor);
    console.table({
      worker: { bestMs: Math.min(...samples.worker), medianMs: median(samples.worker), targetMs: TARGET_MS },
      "one-line Worker": { bestMs: Math.min(...samples.floor), medianMs: median(samples.floor) },
    });
    console.log(`profiles (ms): ${JSON.stringify(samples)}; startup ratio (medians): ${ratio.toFixed(2)}x, at most ${MAX_RATIO}x`);
    expect(ratio).toBeLessThanOrEqual(MAX_RATIO);
  });
});
