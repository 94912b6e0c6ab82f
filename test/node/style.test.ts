// The style gate: Biome (format and lint, biome.jsonc) and the type check of the source and of every test project.
// Any finding fails `npm test`; the output names each one.
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";

const run = (bin: string, args: string[]) => {
  const r = spawnSync(`node_modules/.bin/${bin}`, args, { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
};

describe("the style gate", () => {
  it("Biome finds nothing to format or lint (npm run lint)", () => {
    const { status, output } = run("biome", ["ci", ".", "--error-on-warnings", "--colors=off", "--max-diagnostics=50"]);
    expect(status, output).toBe(0);
  });

  // One thread: tsc 7 otherwise checks with four checkers, each instantiating the shared types (the app's routes,
  // drizzle's schema) again, which took 40 s of CPU for `-p .` against 17 s alone; both cores are busy with the rest
  // of the suite, so the threads bought no time.
  it.each([["."], ["test/e2e"]])("tsc --noEmit -p %s finds no type error", (project) => {
    const { status, output } = run("tsc", ["--noEmit", "--singleThreaded", "-p", project]);
    expect(status, output).toBe(0);
  });
});
