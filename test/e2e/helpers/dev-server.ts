import { type ChildProcess, execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { inject } from "vitest";

const run = promisify(execFile);

/** `npm run dev` on a port of its own, as a developer starts it (DESIGN.md contract 1), in `cwd`; stop() ends it. */
export async function startDev(
  extraArgs: string[] = [],
  cwd = process.cwd(),
): Promise<{ base: string; port: string; stop(): void; output(): string }> {
  const port = String(18787 + Math.floor(Math.random() * 2000));
  const base = `http://127.0.0.1:${port}`;
  let output = "";
  const args = ["run", "dev", ...(extraArgs.length ? ["--", ...extraArgs.map((a) => a.replaceAll("{base}", base))] : [])];
  const dev: ChildProcess = spawn("npm", args, {
    cwd,
    env: { ...process.env, PORT: port },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  dev.stdout!.on("data", (d: Buffer) => (output += d));
  dev.stderr!.on("data", (d: Buffer) => (output += d));
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      if ((await fetch(`${base}/openapi.json`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline || dev.exitCode !== null) throw new Error(`npm run dev did not come up on ${base}:\n${output}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  return { base, port, stop: () => dev.pid && process.kill(-dev.pid, "SIGTERM"), output: () => output };
}

/** The `npm run dev` the e2e project started for its files (shared-dev.ts), with APP_URL its own origin. */
export function sharedDev(): { base: string; port: string } {
  return inject("sharedDev");
}

/** `npm run --silent token` (DESIGN.md contract 2). */
export async function mintToken(org: string, email: string) {
  const { stdout } = await run("npm", ["run", "--silent", "token", "--", "--org", org, "--email", email], { cwd: process.cwd() });
  const lines = stdout.trim().split("\n");
  if (lines.length !== 1) throw new Error(`npm run token printed ${lines.length} lines`);
  return JSON.parse(lines[0]!) as { token: string; userId: string; organizationId: string };
}
