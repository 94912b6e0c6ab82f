// Issue 22: every new isolate loads the whole script before its first answer, so its size is a budget, measured by
// wrangler itself on the bundle a deploy would upload. Its startup CPU is a timing: `npm run bench`
// (bench/startup.node.bench.test.ts), where no test suite runs beside it.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildBundle } from "./bundle";

const GZIP_BUDGET_KIB = 1024;

describe("the Worker's upload size", () => {
  it(`uploads at most ${GZIP_BUDGET_KIB} KiB gzip`, async () => {
    const { kib, gzipKiB } = await buildBundle(mkdtempSync(join(tmpdir(), "startup-")));
    console.log(`Worker script: ${kib} KiB, ${gzipKiB} KiB gzip (budget ${GZIP_BUDGET_KIB})`);
    expect(gzipKiB).toBeLessThanOrEqual(GZIP_BUDGET_KIB);
  });
});
