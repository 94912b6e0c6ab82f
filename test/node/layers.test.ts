// Issue 30: imports point down (docs/architecture.md "Layers"). dependency-cruiser holds the tiers, the circles and the domains'
// internals (.dependency-cruiser.cjs); knip holds files, exports and dependencies nothing uses (knip.jsonc).
// Both run here, so a violation fails `npm test` and its list lands in vitest's report.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
const run = promisify(execFile);

const root = process.cwd();
const bin = (name: string) => join(root, "node_modules", ".bin", name);

/** Runs a checker; answers its exit code and everything it printed. */
async function check(command: string, args: string[], cwd = root): Promise<{ code: number; output: string }> {
  try {
    const done = await run(command, args, { cwd, env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" }, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, output: done.stdout + done.stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === "number" ? failed.code : 1, output: `${failed.stdout ?? ""}${failed.stderr ?? ""}` };
  }
}

/** The Worker's sources, and the tests and benchmarks (which reach a Durable Object through its client too). */
const depcruise = (cwd = root, dirs = ["src", "test", "bench"]) =>
  check(bin("depcruise"), [...dirs, "--config", join(root, ".dependency-cruiser.cjs"), "--output-type", "err"], cwd);

describe("imports point down", () => {
  it("dependency-cruiser finds no circle, no upward import and no reach into another domain's internals", async () => {
    const { code, output } = await depcruise();
    // The message is the checker's own list: one line per violation, the rule's name first.
    expect(code, `dependency-cruiser reports violations (.dependency-cruiser.cjs explains each rule):\n${output}`).toBe(0);
    expect(output).toMatch(/no dependency violations found \((\d{3,}) modules/);
  });

  it("the checker itself fails on each kind of violation (a checker that cannot fail holds nothing)", async () => {
    // A small tree shaped like ours: lib/ imports app.ts (upward), two deals files import each other (a circle),
    // and contacts reaches into deals/list.ts (another domain's internals).
    const dir = mkdtempSync(join(tmpdir(), "layers-"));
    const files: Record<string, string> = {
      "src/app.ts": `import { id } from "./lib/ids";\nexport const app = id;\n`,
      "src/lib/ids.ts": `import { app } from "../app";\nexport const id = () => app;\n`,
      "src/deals/service.ts": `import { list } from "./list";\nexport const service = () => list;\n`,
      "src/deals/list.ts": `import { service } from "./service";\nexport const list = () => service;\n`,
      "src/contacts/service.ts": `import { list } from "../deals/list";\nexport const contacts = list;\n`,
    };
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    const { code, output } = await depcruise(dir, ["src"]);
    expect(code).not.toBe(0);
    expect(output).toContain("tier-1-imports-up: src/lib/ids.ts → src/app.ts");
    expect(output).toMatch(/no-circular: src\/deals\/(service|list)\.ts/);
    expect(output).toContain("domain-internals: src/contacts/service.ts → src/deals/list.ts");
  });

  it("the diagram of the tiers in docs/architecture.md is the one the code draws (npm run layers:diagram)", async () => {
    const { code, output } = await check(process.execPath, [join(root, "scripts", "layers-diagram.mjs"), "--check"]);
    expect(code, output).toBe(0);
  });
});

describe("nothing unused", () => {
  it("knip finds no file, export or dependency that nothing uses", async () => {
    const { code, output } = await check(bin("knip"), ["--no-progress", "--no-config-hints"]);
    expect(code, `knip reports unused code or dependencies (knip.jsonc):\n${output}`).toBe(0);
  });
});
