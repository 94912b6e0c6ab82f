// The Workers tests load every module the app imports at first use before any request (test/helpers/apply-migrations.ts):
// in the test pool a dynamic import is fetched over the network, and requests racing the first one to a route group
// awaited that one pending import from another request's context, which the runtime refuses (a hung request). Issue 45's
// CI run met it when 21 verify requests raced a group nobody had loaded: nine groups' modules were missing from the list.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = process.cwd();
const read = (path: string) => readFileSync(join(root, path), "utf8");
const imported = (source: string, pattern: RegExp) => new Set([...source.matchAll(pattern)].map((m) => m[1]!));

describe("the test setup's preloaded modules", () => {
  it("include every module a route group of src/app.ts imports at its first request", () => {
    const groups = imported(read("src/app.ts"), /import\("\.\/([^"]+)"\)/g);
    const preloaded = imported(read("test/helpers/apply-migrations.ts"), /import\("\.\.\/\.\.\/src\/([^"]+)"\)/g);
    expect(groups.size).toBeGreaterThan(20);
    expect([...groups].filter((m) => !preloaded.has(m)).sort()).toEqual([]);
  });
});
