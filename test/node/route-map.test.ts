// docs/routes.md is generated (npm run routes:map): every operation, the file that declares it, the test files that call
// it. Like the layers diagram, it fails when stale, so a moved route or test file shows there at once.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..");

describe("the route map", () => {
  it("docs/routes.md is the map the routes and the tests draw (npm run routes:map)", async () => {
    const run = await promisify(execFile)(process.execPath, [join(root, "scripts", "route-map.mjs"), "--check"], { cwd: root }).then(
      () => ({ code: 0, output: "" }),
      (err: { code: number; stderr: string }) => ({ code: err.code, output: err.stderr }),
    );
    expect(run, run.output).toEqual({ code: 0, output: "" });
  });
});
