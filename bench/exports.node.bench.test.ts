// Streaming exports at scale (issue 33 part 5): GET /v1/contacts/export of 1,000 and of 100,000 contacts, in one run,
// with the peak memory of the workerd process serving them. Memory cannot be observed inside workerd, so this runs in
// Node: it seeds local D1 in SQL, starts `npm run dev` on a free port, streams each export (counting lines, holding
// nothing) and samples /proc/<pid>/status of every workerd process under the dev server while it does.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script of the project (scripts/local-d1.mjs)
import { withLocalD1 } from "../scripts/local-d1.mjs";

const BIG = 100_000;
const SMALL = 1_000;
const CHUNK = 10_000;

interface Org {
  token: string;
  organizationId: string;
  ids: Set<string>;
}

/** `npm run token` for a bench organization (the same name maps to the same organization on every run). */
function mint(name: string): { token: string; organizationId: string } {
  const out = execFileSync("npm", ["run", "--silent", "token", "--", "--org", name, "--email", "bench@export.test"], { encoding: "utf8" });
  return JSON.parse(out.trim().split("\n").at(-1)!);
}

/** Seeds `n` contacts on the organization's shard in SQL (recursive CTEs) unless it has them; answers their ids. */
async function seed(organizationId: string, n: number): Promise<Set<string>> {
  return withLocalD1(async (env: Record<string, D1Database>) => {
    const row = await env.DB!.prepare("SELECT shard FROM organization_shards WHERE organization_id = ?").bind(organizationId).first<{ shard: number }>();
    const db = env[`DB_SHARD_${row!.shard}`]!;
    const have = (await db.prepare("SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ?").bind(organizationId).first<{ n: number }>())!.n;
    if (have !== n) {
      await db.prepare("DELETE FROM contacts WHERE organization_id = ?").bind(organizationId).run();
      const base = Date.UTC(2025, 0, 1);
      for (let from = 0; from < n; from += CHUNK) {
        await db
          .prepare(
            `INSERT INTO contacts (id, organization_id, first_name, last_name, email, email_key, phone, address, type, status, source, lead_score, tags, notes, created_at, updated_at)
             WITH RECURSIVE seq(n) AS (SELECT CAST(?4 AS INTEGER) UNION ALL SELECT n + 1 FROM seq WHERE n < min(?4 + ${CHUNK}, ?2) - 1)
             SELECT lower(hex(randomblob(16))), ?1, 'Bench' || n, 'Export' || n, 'b' || n || '@export.test', 'b' || n || '@export.test', '+1416555' || printf('%04d', n % 10000),
                    json_object('street', n || ' Elm St', 'city', 'Toronto', 'state', 'ON', 'zipCode', 'M5V', 'country', 'CA'),
                    'LEAD', 'ACTIVE', 'WEBSITE', n % 101, '["vip"]', 'Called about Elm ' || n || ', said "soon"',
                    strftime('%Y-%m-%dT%H:%M:%fZ', ?3 / 1000, 'unixepoch', '+' || n || ' seconds'), strftime('%Y-%m-%dT%H:%M:%fZ', ?3 / 1000, 'unixepoch', '+' || n || ' seconds')
             FROM seq`,
          )
          .bind(organizationId, n, base, from)
          .run();
      }
    }
    const { results } = await db.prepare("SELECT id FROM contacts WHERE organization_id = ?").bind(organizationId).all<{ id: string }>();
    return new Set(results.map((r) => r.id));
  });
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

/** The workerd processes under `root` (the dev server's process group), by walking /proc's parent links. */
function workerdPids(root: number): number[] {
  const parent = new Map<number, number>();
  const name = new Map<number, string>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
      name.set(Number(entry), comm);
    } catch {
      // gone meanwhile
    }
  }
  const under = (pid: number): boolean => pid === root || (pid > 1 && parent.has(pid) && under(parent.get(pid)!));
  return [...name].filter(([pid, comm]) => comm.startsWith("workerd") && under(pid)).map(([pid]) => pid);
}

/** VmRSS and VmHWM (peak) of a process, in MiB. */
function memory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024;
  return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
}

let dev: ChildProcess;
let origin: string;
let big: Org;
let small: Org;

beforeAll(async () => {
  const started = performance.now();
  const b = mint("Bench export 100k");
  const s = mint("Bench export 1k");
  big = { ...b, ids: await seed(b.organizationId, BIG) };
  small = { ...s, ids: await seed(s.organizationId, SMALL) };
  console.log(`seeded ${BIG} + ${SMALL} contacts in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  // Its own process group, so the whole tree (npm, wrangler, workerd) is ended by its id afterwards.
  dev = spawn("npm", ["run", "dev"], { env: { ...process.env, PORT: String(port) }, detached: true, stdio: "ignore" });
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${origin}/openapi.json`)).ok) break;
    } catch {
      // not listening yet
    }
    if (i > 600) throw new Error("npm run dev did not start");
    await new Promise((r) => setTimeout(r, 200));
  }
});

afterAll(() => {
  if (dev?.pid) process.kill(-dev.pid, "SIGTERM");
});

/** Streams one export, counting rows and ids without keeping the body, while sampling workerd's memory every 20 ms. */
async function streamed(org: Org, format: "csv" | "ndjson") {
  const pids = workerdPids(dev.pid!);
  const before = pids.reduce((sum, pid) => sum + memory(pid).rss, 0);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, workerdPids(dev.pid!).reduce((sum, pid) => sum + memory(pid).rss, 0))), 20);
  const start = performance.now();
  const res = await fetch(`${origin}/v1/contacts/export?format=${format}`, { headers: { authorization: `Bearer ${org.token}` } });
  expect(res.status).toBe(200);
  const decoder = new TextDecoder();
  const seen = new Set<string>();
  let rest = "";
  let lines = 0;
  let bytes = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    const text = rest + decoder.decode(chunk, { stream: true });
    const split = text.split("\n");
    rest = split.pop()!;
    for (const line of split) {
      lines++;
      const id = format === "ndjson" ? (JSON.parse(line) as { id: string }).id : line.slice(0, line.indexOf(","));
      if (org.ids.has(id)) seen.add(id);
    }
  }
  clearInterval(sampler);
  const ms = performance.now() - start;
  return { lines, bytes, ms, seen: seen.size, rssBefore: before, rssPeak: Math.max(peak, pids.reduce((sum, pid) => sum + memory(pid).rss, 0)), hwm: Math.max(...workerdPids(dev.pid!).map((pid) => memory(pid).hwm)) };
}

it("GET /v1/contacts/export streams 100k rows in the memory it streams 1k in", async () => {
  // Warm the isolate and its route group first, so neither figure carries the cold start.
  await streamed(small, "ndjson");
  const figures: [string, Awaited<ReturnType<typeof streamed>>][] = [];
  for (const format of ["ndjson", "csv"] as const) {
    figures.push([`${SMALL} contacts (${format}, baseline)`, await streamed(small, format)]);
    figures.push([`${BIG} contacts (${format})`, await streamed(big, format)]);
  }
  const rows = figures.map(
    ([name, f]) =>
      `  ${name.padEnd(34)} ${String(f.lines).padStart(7)} lines ${(f.bytes / 1048576).toFixed(1).padStart(6)} MiB in ${(f.ms / 1000).toFixed(2).padStart(6)} s  workerd RSS before ${f.rssBefore.toFixed(0)} MiB, peak during ${f.rssPeak.toFixed(0)} MiB (+${(f.rssPeak - f.rssBefore).toFixed(0)}), VmHWM ${f.hwm.toFixed(0)} MiB`,
  );
  console.log(["\n== Exports: workerd memory, read from /proc outside workerd (1k is the baseline)", ...rows].join("\n"));
  for (const [name, f] of figures) {
    const org = name.startsWith(String(SMALL)) ? small : big;
    // Read back: every contact exactly once (CSV and NDJSON have a line per row; CSV a header too).
    expect(f.seen, name).toBe(org.ids.size);
    expect(f.lines, name).toBe(org.ids.size + (name.includes("csv") ? 1 : 0));
  }
  // Flat: the 100k export's peak is within 64 MiB of the 1k export's (a page of rows is what is held).
  const [, small1] = figures[0]!;
  const [, big1] = figures[1]!;
  expect(big1.rssPeak - small1.rssPeak).toBeLessThan(64);
});
