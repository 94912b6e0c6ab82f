// `npm run deploy` and `npm run shard:add` as an operator runs them, against a fake Cloudflare API on 127.0.0.1
// (CLOUDFLARE_API_BASE_URL): wrangler itself makes its calls, the fake's D1 databases run the SQL, and the shared
// `npm run dev` of served.test.ts stands in for the deployment the smoke check asks (it only reads it: a server of its
// own cost a start, a fifth of a minute of CPU, for four smoke checks).
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeCloudflare, startFakeCloudflare } from "./helpers/fake-cloudflare";
import { dev } from "./helpers/served";
import { wranglerConfig } from "./helpers/wrangler-config";

const run = promisify(execFile);
const production = wranglerConfig("production");
const REQUIRED = production.secrets?.required ?? [];
const SECRETS = Object.fromEntries(REQUIRED.map((name) => [name, `test-${name.toLowerCase()}`]));

let dir = "";
let secretsFile = "";

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "deploy-"));
  secretsFile = join(dir, "secrets.json");
  writeFileSync(secretsFile, JSON.stringify(SECRETS));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `npm run deploy -- …` against `fake`, from `cwd`: its exit code and everything it printed. */
async function deploy(fake: FakeCloudflare, args: string[], cwd = process.cwd()) {
  try {
    const { stdout, stderr } = await run("npm", ["run", "--silent", "deploy", "--", ...args], {
      cwd,
      env: {
        ...process.env,
        CLOUDFLARE_API_BASE_URL: fake.url,
        CLOUDFLARE_API_TOKEN: "fake-token",
        CLOUDFLARE_ACCOUNT_ID: fake.accountId,
        WRANGLER_SEND_METRICS: "false",
      },
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, output: `${e.stdout ?? ""}${e.stderr ?? ""}` };
  }
}

/** The calls that created a database, queue, bucket or index, of `changes` (all the fake's by default). */
const creations = (fake: FakeCloudflare, changes = fake.changes()) =>
  changes.filter((c) => /^POST \/(d1\/database|queues|r2\/buckets|vectorize\/v2\/indexes)$/.test(c));

/** The names of every resource the production environment binds, as the API lists them. */
function expectedResources() {
  const queues = new Set<string>();
  for (const p of production.queues.producers ?? []) queues.add(p.queue);
  for (const c of production.queues.consumers ?? []) {
    queues.add(c.queue);
    if (c.dead_letter_queue) queues.add(c.dead_letter_queue);
  }
  return {
    databases: production.d1_databases.map((d) => d.database_name).sort(),
    queues: [...queues].sort(),
    buckets: production.r2_buckets.map((b) => b.bucket_name).sort(),
    indexes: production.vectorize.map((v) => v.index_name).sort(),
  };
}

const present = (fake: FakeCloudflare) => ({
  databases: [...fake.databases.values()].map((d) => d.name).sort(),
  queues: [...fake.queues.values()].map((q) => q.queue_name).sort(),
  buckets: [...fake.buckets.keys()].sort(),
  indexes: [...fake.indexes.keys()].sort(),
});

/** The migration files of a folder, as wrangler records them. */
const migrationFiles = (folder: string) =>
  readdirSync(folder)
    .filter((f) => f.endsWith(".sql"))
    .sort();

function expectMigrated(fake: FakeCloudflare, name: string, folder: string) {
  const db = fake.database(name)!;
  const applied = (db.prepare("SELECT name FROM d1_migrations ORDER BY id").all() as Array<{ name: string }>).map((r) => r.name);
  expect(applied, name).toEqual(migrationFiles(folder));
}

describe("npm run deploy against a fake Cloudflare API", () => {
  it("refuses a deploy missing a required secret before it changes anything, naming each one missing", async () => {
    const fake = await startFakeCloudflare();
    try {
      const partial = join(dir, "partial.env");
      writeFileSync(partial, `JWT_SECRET=one\nFILES_URL_SECRET=two\n`);
      const { code, output } = await deploy(fake, ["--secrets-file", partial]);
      expect(code).not.toBe(0);
      expect(output).toContain("Refusing to deploy");
      for (const name of REQUIRED.filter((n) => n !== "JWT_SECRET" && n !== "FILES_URL_SECRET")) expect(output).toContain(name);
      expect(output).not.toMatch(/JWT_SECRET,|FILES_URL_SECRET,/);
      expect(fake.changes()).toEqual([]);
    } finally {
      await fake.close();
    }
  });

  it("provisions an empty account, finishing on the next run after a failure half-way, migrates every database, uploads the Worker with every binding and secret and passes the smoke check; a third run creates nothing", async () => {
    const fake = await startFakeCloudflare();
    try {
      // The queues refused once, after the databases were made: the run stops, loudly, before the Worker.
      fake.failOnce(/^POST \/queues$/);
      const failed = await deploy(fake, ["--secrets-file", secretsFile, "--smoke-origin", dev.base]);
      expect(failed.code).not.toBe(0);
      expect(failed.output).toContain("Deploy stopped");
      expect(fake.databases.size).toBe(production.d1_databases.length);
      expect(fake.scripts.size).toBe(0);

      const first = await deploy(fake, ["--secrets-file", secretsFile, "--smoke-origin", dev.base]);
      expect(first.code, first.output).toBe(0);
      expect(first.output).toContain("Smoke check passed");

      // Every resource once, by name.
      expect(present(fake)).toEqual(expectedResources());
      const wanted = expectedResources();
      expect(creations(fake)).toHaveLength(wanted.databases.length + wanted.queues.length + wanted.buckets.length + wanted.indexes.length);
      expect([...fake.indexes.values()][0]!.config).toEqual({ dimensions: 768, metric: "cosine" });

      // Every database migrated, as wrangler records it, and holding the tables the code reads.
      for (const d of production.d1_databases) expectMigrated(fake, d.database_name, d.migrations_dir);
      expect(fake.database("brokerage")!.prepare("SELECT COUNT(*) AS n FROM organization_shards").get()).toEqual({ n: 0 });
      expect(fake.database("brokerage-shard-1")!.prepare("SELECT COUNT(*) AS n FROM contacts").get()).toEqual({ n: 0 });

      // The Worker: every binding the environment declares, pointing at what was created, every required secret.
      const worker = fake.scripts.get(production.name)!;
      const bindings = worker.metadata.bindings!;
      const byName = Object.fromEntries(bindings.map((b) => [b.name, b]));
      for (const d of production.d1_databases) {
        expect(byName[d.binding]).toMatchObject({ type: "d1" });
        expect(byName[d.binding]!.id).toBe([...fake.databases.values()].find((x) => x.name === d.database_name)!.uuid);
      }
      for (const p of production.queues.producers ?? []) expect(byName[p.binding]).toMatchObject({ type: "queue", queue_name: p.queue });
      for (const b of production.r2_buckets) expect(byName[b.binding]).toMatchObject({ type: "r2_bucket", bucket_name: b.bucket_name });
      for (const v of production.vectorize) expect(byName[v.binding]).toMatchObject({ type: "vectorize", index_name: v.index_name });
      for (const d of production.durable_objects.bindings)
        expect(byName[d.name]).toMatchObject({ type: "durable_object_namespace", class_name: d.class_name });
      expect(byName.ENVIRONMENT).toMatchObject({ type: "plain_text", text: "production" });
      // APP_URL left empty in the environment: the Worker's workers.dev origin.
      expect(byName.APP_URL).toMatchObject({ type: "plain_text", text: `https://${production.name}.fake-account.workers.dev` });
      expect(Object.fromEntries(worker.secrets)).toEqual(SECRETS);
      expect(worker.schedules).toEqual(production.triggers.crons);
      // Every queue consumed as configured, dead-letter queues named.
      for (const c of production.queues.consumers ?? []) {
        const queue = [...fake.queues.values()].find((q) => q.queue_name === c.queue)!;
        expect(queue.consumers, c.queue).toEqual([
          expect.objectContaining({ script: production.name, ...(c.dead_letter_queue ? { dead_letter_queue: c.dead_letter_queue } : {}) }),
        ]);
      }

      // Again: nothing created, nothing migrated twice, the Worker uploaded once more with its secrets kept.
      const before = fake.calls.length;
      const second = await deploy(fake, ["--smoke-origin", dev.base]);
      expect(second.code, second.output).toBe(0);
      const again = fake.calls
        .slice(before)
        .filter((c) => c.method !== "GET" && c.status < 400)
        .map((c) => `${c.method} ${c.path}`);
      expect(creations(fake, again)).toEqual([]);
      expect(second.output).toContain("reused:");
      expect(second.output).not.toContain("created:");
      for (const d of production.d1_databases) expectMigrated(fake, d.database_name, d.migrations_dir);
      expect(fake.scripts.get(production.name)!.uploads).toBe(2);
      expect(Object.fromEntries(fake.scripts.get(production.name)!.secrets)).toEqual(SECRETS);
    } finally {
      await fake.close();
    }
  });
});

describe("npm run shard:add", () => {
  it("adds the next shard, created and migrated in the account with --remote, which a deploy binds (its --plan changes nothing); organizations stay where they were and the next one lands on it", async () => {
    // A copy of the project, so the working tree's wrangler.toml is left as it is.
    const copy = join(dir, "project");
    cpSync(process.cwd(), copy, {
      recursive: true,
      filter: (src) => !/\/(node_modules|\.wrangler|\.git|\.ci)(\/|$)/.test(src.slice(process.cwd().length)),
    });
    symlinkSync(join(process.cwd(), "node_modules"), join(copy, "node_modules"));
    // The copy's local state is its own (this file's server keeps its DEV_PERSIST_TO).
    const local = { ...process.env, DEV_PERSIST_TO: join(copy, ".wrangler/state") };
    const mint = async (org: string) =>
      JSON.parse(
        (await run("npm", ["run", "--silent", "token", "--", "--org", org, "--email", "owner@shard.test"], { cwd: copy, env: local }))
          .stdout,
      ) as {
        organizationId: string;
      };
    // Two organizations before the shard: one on each of shards 0 and 1.
    const before = [await mint("Shard Zero Realty"), await mint("Shard One Realty")];
    const fake = await startFakeCloudflare();
    const api = {
      ...process.env,
      CLOUDFLARE_API_BASE_URL: fake.url,
      CLOUDFLARE_API_TOKEN: "fake-token",
      CLOUDFLARE_ACCOUNT_ID: fake.accountId,
    };
    try {
      // With --remote it also creates and migrates the production database, before any Worker binds it.
      const added = await run("npm", ["run", "--silent", "shard:add", "--", "--remote"], { cwd: copy, env: api });
      expect(added.stdout).toContain("DB_SHARD_2");
      expect(readFileSync(join(copy, "wrangler.toml"), "utf8").match(/binding = "DB_SHARD_2"/g)).toHaveLength(2);
      expect([...fake.databases.values()].map((d) => d.name)).toEqual(["brokerage-shard-2"]);
      expectMigrated(fake, "brokerage-shard-2", join(copy, "migrations/tenant"));

      // A deploy's plan then reuses the new shard, binds it, would create the rest, and changes nothing.
      const before = fake.changes().length;
      const { code, output } = await deploy(fake, ["--plan", "--secrets-file", secretsFile], copy);
      expect(code, output).toBe(0);
      expect(output).toMatch(/reused:\n {2}D1 database brokerage-shard-2/);
      for (const name of expectedResources().databases) expect(output).toContain(`D1 database ${name} (would be created)`);
      expect(output).toMatch(/^env\.DB_SHARD_2 \(brokerage-shard-2\)\s+D1 Database/m);
      expect(output).toContain("--dry-run: exiting now.");
      expect(fake.changes()).toHaveLength(before);
    } finally {
      await fake.close();
    }

    // The next organization lands on the new shard, by the rule the Worker places with (the least full shard:
    // src/shards/placement.ts); the two before stay where they were.
    const third = await mint("Shard Two Realty");
    const { stdout } = await run(
      "npx",
      [
        "wrangler",
        "d1",
        "execute",
        "DB",
        "--local",
        "--json",
        "--command",
        `SELECT shard FROM organization_shards WHERE organization_id IN ('${before[0]!.organizationId}', '${before[1]!.organizationId}', '${third.organizationId}') ORDER BY shard`,
      ],
      { cwd: copy, env: local },
    );
    expect(JSON.parse(stdout)[0].results).toEqual([{ shard: 0 }, { shard: 1 }, { shard: 2 }]);
  });
});
