// What the Node benches that run `npm run dev` share: a free port, and the memory of the dev server's workerd
// processes read from outside through /proc (memory cannot be read inside workerd).
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";

export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

/** The workerd processes under `root` (the dev server's process tree), by /proc's parent links. */
export function workerdPids(root: number): number[] {
  const parent = new Map<number, number>();
  const workerd: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const after = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      parent.set(Number(entry), Number(after[1]));
      if (stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")).startsWith("workerd")) workerd.push(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  const under = (pid: number): boolean => pid === root || (pid > 1 && parent.has(pid) && under(parent.get(pid)!));
  return workerd.filter(under);
}

/** A field of /proc/<pid>/status in MiB (0 once the process has gone). */
export function statusMiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  try {
    return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}
export const sum = (pids: number[], field: "VmRSS" | "VmHWM") => pids.reduce((total, pid) => total + statusMiB(pid, field), 0);

/** Waits until `npm run dev` at `origin` answers /openapi.json; after 3 minutes throws `failure()`'s message. */
export async function devStarted(origin: string, failure: () => string): Promise<void> {
  for (
    let i = 0;
    !(await fetch(`${origin}/openapi.json`).then(
      (r) => r.ok,
      () => false,
    ));
    i++
  ) {
    if (i > 900) throw new Error(failure());
    await new Promise((r) => setTimeout(r, 200));
  }
}
