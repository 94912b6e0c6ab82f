// `npm run dev`'s first answer, measured from outside as a newcomer meets it: start the command, poll until any HTTP
// answer. A fresh clone's state (no local database yet: every migration to apply) beside a state already migrated
// (the floor: wrangler's own start), interleaved, each in a temporary state directory (DEV_PERSIST_TO). Target: a
// fresh start answers within 15 s on the project's 2-core machine.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROUNDS = 3;
const TARGET_MS = 15_000;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Milliseconds from spawning `npm run dev` on `state` to its first HTTP answer; the server is stopped after. */
async function firstAnswer(state: string, port: number): Promise<number> {
  const started = performance.now();
  const dev: ChildProcess = spawn("npm", ["run", "dev"], {
    env: { ...process.env, DEV_PERSIST_TO: state, PORT: String(port) },
    detached: true,
    stdio: "ignore",
  });
  try {
    for (;;) {
      try {
        await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2_000) });
        return performance.now() - started;
      } catch {
        if (performance.now() - started > 180_000 || dev.exitCode !== null) throw new Error("npm run dev did not answer");
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } finally {
    if (dev.pid) process.kill(-dev.pid, "SIGTERM");
    await new Promise((r) => setTimeout(r, 1_500));
  }
}

describe("npm run dev, first answer", () => {
  it(`answers within ${TARGET_MS / 1000} s on a fresh clone's state (medians of ${ROUNDS}, beside an up-to-date state)`, async () => {
    const migrated = mkdtempSync(join(tmpdir(), "dev-start-migrated-"));
    const fresh: string[] = [];
    try {
      await firstAnswer(migrated, 19_301); // migrates it once; not counted
      const times = { fresh: [] as number[], migrated: [] as number[] };
      for (let round = 0; round < ROUNDS; round++) {
        const state = mkdtempSync(join(tmpdir(), "dev-start-fresh-"));
        fresh.push(state);
        times.fresh.push(await firstAnswer(state, 19_302 + round));
        times.migrated.push(await firstAnswer(migrated, 19_310 + round));
      }
      const row = (xs: number[]) => ({ medianMs: Math.round(median(xs)), runsMs: xs.map(Math.round).join(", ") });
      console.table({ "fresh clone": row(times.fresh), "already migrated (floor)": row(times.migrated) });
      console.log(`fresh / migrated (medians): ${(median(times.fresh) / median(times.migrated)).toFixed(2)}x; target ${TARGET_MS} ms`);
      expect(median(times.fresh)).toBeLessThanOrEqual(TARGET_MS);
    } finally {
      for (const dir of [migrated, ...fresh]) rmSync(dir, { recursive: true, force: true });
    }
  });
});
