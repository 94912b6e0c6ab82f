// Streaming exports at scale (issue 33): GET /v1/contacts/export of 1,000 and of 100,000 contacts in one run, with
// the peak memory of the workerd process serving `npm run dev`. Memory cannot be read inside workerd, so this runs in
// Node and reads /proc/<pid>/status of the dev server's workerd processes (VmRSS sampled every 20 ms, VmHWM after).
// Everything lives in a temporary state directory (DEV_PERSIST_TO): a developer's .wrangler/state is never touched.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devStarted, freePort, sum, workerdPids } from "./workerd-memory";

const SMALL = 1_000;
const BIG = 100_000;
/**
 * Flat: what the 100k export adds to workerd's RSS (its peak less the RSS before it) is at most FACTOR times what the
 * 1k export adds, plus SLACK_MIB for V8 growing its heap once (measured: +1–2 MiB at 1k, +14 to +33 MiB at 100k, the
 * most on the first big export). Holding the 100k rows would add several times that (the CSV alone is 27 MiB).
 */
const FACTOR = 1.5;
const SLACK_MIB = 48;

const state = mkdtempSync(join(tmpdir(), "exports-bench-"));
const env = { ...process.env, DEV_PERSIST_TO: state };
let dev: ChildProcess | undefined;
let origin = "";

/** `npm run token` for an organization of its own (the first call also migrates the fresh state). */
function mint(name: string): { token: string; organizationId: string } {
  const out = execFileSync("npm", ["run", "--silent", "token", "--", "--org", name, "--email", "bench@export.test"], {
    encoding: "utf8",
    env,
  });
  return JSON.parse(out.trim().split("\n").at(-1)!);
}

/**
 * `n` contacts of an organization, written straight into its shard's SQLite file with the dev server not running:
 * the same file workerd serves, its triggers (search terms) fire, and the tags, facet counts and counter a create
 * moves are moved too. Inserting through getPlatformProxy drops the connection ("other side closed") once a
 * statement of a few thousand rows outlasts the local proxy's request; this takes about 0.6 ms a row.
 */
function seed(organizationId: string, n: number) {
  const dir = join(state, "v3/d1/miniflare-D1DatabaseObject");
  const files = readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite");
  for (const file of files) {
    const db = new DatabaseSync(join(dir, file));
    try {
      const shard =
        db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'contacts'").get() &&
        db.prepare("SELECT 1 FROM organizations WHERE id = ?").get(organizationId);
      if (!shard) continue;
      db.exec("BEGIN");
      db.prepare(
        `INSERT INTO contacts (id, organization_id, first_name, last_name, email, email_key, phone, phone_key, address, type, status, source, lead_score, tags, notes, created_at, updated_at)
         WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < ?2 - 1)
         SELECT lower(hex(randomblob(16))), ?1, 'Bench' || n, 'Export' || n, 'b' || n || '@export.test', 'b' || n || '@export.test',
                '+1416555' || printf('%04d', n % 10000), '+1416555' || printf('%04d', n % 10000),
                json_object('street', n || ' Elm St', 'city', 'Toronto', 'state', 'ON', 'zipCode', 'M5V 2T6', 'country', 'CA'),
                'LEAD', 'ACTIVE', 'WEBSITE', n % 101, '["vip"]', 'Called about ' || n || ' Elm, said "soon"',
                strftime('%Y-%m-%dT%H:%M:%fZ', 1735689600 + n, 'unixepoch'), strftime('%Y-%m-%dT%H:%M:%fZ', 1735689600 + n, 'unixepoch')
         FROM seq`,
      ).run(organizationId, n);
      db.prepare(
        "INSERT INTO contact_tags (contact_id, organization_id, tag) SELECT id, organization_id, 'vip' FROM contacts WHERE organization_id = ?",
      ).run(organizationId);
      db.prepare(
        "INSERT INTO contact_facet_counts (organization_id, type, status, source, assigned_to, total) VALUES (?, 'LEAD', 'ACTIVE', 'WEBSITE', '', ?)",
      ).run(organizationId, n);
      db.prepare("INSERT INTO resource_counters (organization_id, resource, total, version) VALUES (?, 'contacts', ?, 1)").run(
        organizationId,
        n,
      );
      db.exec("COMMIT");
      return;
    } finally {
      db.close();
    }
  }
  throw new Error(`no shard holds organization ${organizationId}`);
}

/** Streams one export to its end, counting lines and holding nothing, while sampling workerd's RSS. */
async function exportOnce(token: string, format: "csv" | "ndjson") {
  const pids = workerdPids(dev!.pid!);
  const rssBefore = sum(pids, "VmRSS");
  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, sum(pids, "VmRSS"))), 20);
  const start = performance.now();
  const res = await fetch(`${origin}/v1/contacts/export?format=${format}`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  let lines = 0;
  let bytes = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
  }
  const seconds = (performance.now() - start) / 1000;
  clearInterval(sampler);
  return { lines, bytes, seconds, rssBefore, rssPeak: Math.max(rssPeak, sum(pids, "VmRSS")), hwm: sum(pids, "VmHWM") };
}

const orgs = { small: { token: "", organizationId: "" }, big: { token: "", organizationId: "" } };

beforeAll(async () => {
  const started = performance.now();
  orgs.small = mint("Bench export 1k");
  orgs.big = mint("Bench export 100k");
  seed(orgs.small.organizationId, SMALL);
  seed(orgs.big.organizationId, BIG);
  console.log(`migrated, minted and seeded ${SMALL} + ${BIG} contacts in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  // A process group of its own, so the whole tree (npm, wrangler, workerd) is ended by its id afterwards.
  dev = spawn("npm", ["run", "dev"], { env: { ...env, PORT: String(port) }, detached: true, stdio: "ignore" });
  await devStarted(origin, () => "npm run dev did not start in 3 minutes");
});

afterAll(async () => {
  if (dev?.pid) {
    process.kill(-dev.pid, "SIGTERM");
    await new Promise((r) => setTimeout(r, 1000));
  }
  rmSync(state, { recursive: true, force: true });
});

describe("contacts export, 1k vs 100k rows (npm run dev, workerd memory from /proc)", () => {
  it(`streams ${BIG} rows in about the memory of ${SMALL} (RSS added ≤ ${FACTOR}x + ${SLACK_MIB} MiB)`, async () => {
    // Warm the isolate and the route group first, so neither figure carries the cold start.
    await exportOnce(orgs.small.token, "ndjson");
    const figures: Record<string, Awaited<ReturnType<typeof exportOnce>> & { format: string; rows: number }> = {};
    for (const format of ["csv", "ndjson"] as const) {
      figures[`${format} 1k`] = { format, rows: SMALL, ...(await exportOnce(orgs.small.token, format)) };
      figures[`${format} 100k`] = { format, rows: BIG, ...(await exportOnce(orgs.big.token, format)) };
    }
    console.table(
      Object.fromEntries(
        Object.entries(figures).map(([name, f]) => [
          name,
          {
            rows: f.rows,
            MiB: +(f.bytes / 1048576).toFixed(1),
            seconds: +f.seconds.toFixed(2),
            rowsPerS: Math.round(f.rows / f.seconds),
            rssBeforeMiB: Math.round(f.rssBefore),
            peakRssMiB: Math.round(f.rssPeak),
            addedMiB: Math.round(f.rssPeak - f.rssBefore),
            vmHwmMiB: Math.round(f.hwm),
          },
        ]),
      ),
    );
    for (const [name, f] of Object.entries(figures)) expect(f.lines, name).toBe(f.rows + (f.format === "csv" ? 1 : 0));
    for (const format of ["csv", "ndjson"]) {
      const small = figures[`${format} 1k`]!;
      const big = figures[`${format} 100k`]!;
      expect(big.rssPeak - big.rssBefore, format).toBeLessThanOrEqual(FACTOR * (small.rssPeak - small.rssBefore) + SLACK_MIB);
    }
  });
});
