import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export const wrangler = (args: string[]) =>
  run("npx", ["wrangler", ...args], {
    cwd: process.cwd(),
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
    maxBuffer: 64 * 1024 * 1024,
  });

/** The bundle a deploy would upload (minified, aliases applied), built by wrangler into `dir`, with the sizes it reports. */
export async function buildBundle(dir: string): Promise<{ bundle: string; kib: number; gzipKiB: number; output: string }> {
  const bundle = join(dir, "worker.bundle");
  const built = await wrangler(["deploy", "--dry-run", "--outfile", bundle]);
  const output = built.stdout + built.stderr;
  const upload = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(output);
  if (!upload) throw new Error(`wrangler reported no upload size:\n${output}`);
  return { bundle, kib: Number(upload[1]), gzipKiB: Number(upload[2]), output };
}

/**
 * A Worker of one line (`new Response("ok")`) with the app's compatibility date and flags, built the same way into
 * `dir`: the floor every startup figure stands on (the isolate, the profiler), measured beside it in the same run.
 */
export async function buildFloorBundle(dir: string): Promise<string> {
  const floor = join(dir, "floor");
  mkdirSync(floor, { recursive: true });
  const toml = readFileSync("wrangler.toml", "utf8");
  const compatibility = toml.split("\n").filter((line) => /^compatibility_(date|flags)\s*=/.test(line));
  writeFileSync(join(floor, "wrangler.toml"), ['name = "startup-floor"', 'main = "index.js"', ...compatibility, ""].join("\n"));
  writeFileSync(join(floor, "index.js"), 'export default { fetch: () => new Response("ok") };\n');
  const bundle = join(dir, "floor.bundle");
  await wrangler(["deploy", "--dry-run", "--config", join(floor, "wrangler.toml"), "--outfile", bundle]);
  return bundle;
}

/** The startup CPU wrangler profiles for `bundle` ("Active", in ms), its CPU profile written to `profile`. */
export async function startupMs(bundle: string, profile: string): Promise<number> {
  const checked = await wrangler(["check", "startup", "--worker", bundle, "--outfile", profile]);
  const active = /Active: ([\d.]+) ms/.exec(checked.stdout + checked.stderr);
  if (!active) throw new Error(`wrangler reported no startup time:\n${checked.stdout}${checked.stderr}`);
  return Number(active[1]);
}
