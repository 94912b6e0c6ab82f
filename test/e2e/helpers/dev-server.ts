import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll } from "vitest";
import type { LocalMail } from "../../../scripts/local-mail.mjs";

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

/**
 * An `npm run dev` of this file's own, on a local state of its own (DEV_PERSIST_TO, which this file's `npm run token`
 * and `npm run mail` then use too), with APP_URL its own origin; started before the file's tests, stopped after.
 * Files never share a server's SQLite files: a token minted by one file's process while another file's request wrote
 * the same file answered that request 500 (SQLITE_BUSY). Call it at the top of the file, before its own hooks.
 */
export function devForThisFile(
  // Links must point at this server: APP_URL is the API's own origin here (DESIGN.md contract 5).
  extraArgs = ["--var", "APP_URL:{base}"],
): { readonly base: string; readonly port: string; output(): string } {
  const state = mkdtempSync(join(tmpdir(), "e2e-dev-"));
  let dev: Awaited<ReturnType<typeof startDev>> | undefined;
  beforeAll(async () => {
    process.env.DEV_PERSIST_TO = state;
    dev = await startDev(extraArgs);
  });
  afterAll(() => {
    dev?.stop();
    // The server's own errors, which its tests only see as a status: a 500 in a run is explained here.
    const errors = (dev?.output() ?? "").split("\n").filter((line) => /"level":"error"|Uncaught|SQLITE_|internal error/.test(line));
    if (errors.length) process.stderr.write(`npm run dev (this file's) logged ${errors.length} errors:\n${errors.join("\n")}\n`);
    rmSync(state, { recursive: true, force: true });
  });
  return {
    get base() {
      if (!dev) throw new Error("the file's dev server is not started yet");
      return dev.base;
    },
    get port() {
      if (!dev) throw new Error("the file's dev server is not started yet");
      return dev.port;
    },
    output: () => dev?.output() ?? "",
  };
}

/** `npm run --silent token` (DESIGN.md contract 2). */
export async function mintToken(org: string, email: string) {
  const { stdout } = await run("npm", ["run", "--silent", "token", "--", "--org", org, "--email", email], { cwd: process.cwd() });
  const lines = stdout.trim().split("\n");
  if (lines.length !== 1) throw new Error(`npm run token printed ${lines.length} lines`);
  return JSON.parse(lines[0]!) as { token: string; userId: string; organizationId: string };
}

/** `npm run --silent mail -- --to <to> --last <last>` (DESIGN.md contract 8): the messages it prints, newest first. */
export async function npmRunMail(to: string, last = 1): Promise<LocalMail[]> {
  const { stdout } = await run("npm", ["run", "--silent", "mail", "--", "--to", to, "--last", String(last)], { cwd: process.cwd() });
  return stdout
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as LocalMail);
}
