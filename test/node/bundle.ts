import { execFile } from "node:child_process";
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
