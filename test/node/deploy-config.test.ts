// What a production deploy binds, read by wrangler itself: the [env.production] block declares every binding the top
// level does (wrangler carries none into an environment), `wrangler deploy --dry-run` prints the expected set, and
// README.md "Deploy" names every queue and every secret the code reads.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { parseDeployArgs, secretNamesIn, smokeCheck, wantedResources } from "../../scripts/deploy.mjs";
import { withShard } from "../../scripts/shard-add.mjs";
import { type WranglerConfig, wranglerConfig } from "../e2e/helpers/wrangler-config";

const run = promisify(execFile);
const top = wranglerConfig();
const production = wranglerConfig("production");
const readme = readFileSync("README.md", "utf8");
const deploySection = readme.slice(readme.indexOf("## Deploy"), readme.indexOf("\n## ", readme.indexOf("## Deploy") + 1));

/** Every binding a configuration declares, as "<kind> <binding> → <resource>". */
function bindingsOf(config: WranglerConfig): string[] {
  return [
    ...config.d1_databases.map((d) => `d1 ${d.binding} → ${d.database_name} (${d.migrations_dir})`),
    ...config.durable_objects.bindings.map((d) => `durable object ${d.name} → ${d.class_name}`),
    ...(config.queues.producers ?? []).map((q) => `queue ${q.binding} → ${q.queue}`),
    ...(config.queues.consumers ?? []).map((c) => `consumer ${c.queue} (dead letters: ${c.dead_letter_queue ?? "none"})`),
    ...config.r2_buckets.map((b) => `r2 ${b.binding} → ${b.bucket_name}`),
    ...config.vectorize.map((v) => `vectorize ${v.binding} → ${v.index_name}`),
  ].sort();
}

/** The string settings the code reads (src/env.ts `Env`). */
const envSettings = [...readFileSync("src/env.ts", "utf8").matchAll(/^ {2}([A-Z][A-Z0-9_]+)\?: string;$/gm)].map((m) => m[1]!);

describe("the production configuration", () => {
  it("declares in [env.production] every binding the top level does, with no database ids", () => {
    expect(bindingsOf(production)).toEqual(bindingsOf(top));
    expect(production.d1_databases.every((d) => d.database_id === undefined)).toBe(true);
    expect(production.name).toBe(top.name);
    expect(production.vars).toMatchObject({ ENVIRONMENT: "production", EMAIL_PROVIDER: "resend" });
  });

  it("is what `wrangler deploy --dry-run --env production` binds", async () => {
    const { stdout } = await run("npx", ["wrangler", "deploy", "--dry-run", "--env", "production", "--outdir", "/tmp/deploy-dry-run"], {
      env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
      maxBuffer: 16 * 1024 * 1024,
    });
    // Its table: one row per binding, "env.NAME (resource)   Kind".
    const rows = [...stdout.matchAll(/^env\.([A-Z0-9_]+)(?: \(([^)]*)\))?\s{2,}(.+?)\s*$/gm)].map((m) => `${m[3]} ${m[1]} → ${m[2] ?? ""}`);
    const expected = [
      ...production.d1_databases.map((d) => `D1 Database ${d.binding} → ${d.database_name}`),
      ...production.durable_objects.bindings.map((d) => `Durable Object ${d.name} → ${d.class_name}`),
      ...(production.queues.producers ?? []).map((q) => `Queue ${q.binding} → ${q.queue}`),
      ...production.r2_buckets.map((b) => `R2 Bucket ${b.binding} → ${b.bucket_name}`),
      ...production.vectorize.map((v) => `Vectorize Index ${v.binding} → ${v.index_name}`),
      "Assets ASSETS → ",
      ...Object.entries(production.vars).map(([name, value]) => `Environment Variable ${name} → "${value}"`),
    ].sort();
    expect(rows.sort()).toEqual(expected);
  });

  it("requires every secret the README marks required, each a setting the code reads", () => {
    const table = deploySection.slice(deploySection.indexOf("| Secret |"));
    const required = [...table.matchAll(/^\| ((?:`[A-Z0-9_]+`(?:, )?)+) \|/gm)].flatMap((m) =>
      [...m[1]!.matchAll(/`([A-Z0-9_]+)`/g)].map((x) => x[1]!),
    );
    expect([...required].sort()).toEqual([...(production.secrets?.required ?? [])].sort());
    for (const name of required) expect(envSettings).toContain(name);
  });

  it("names in the README every queue the deploy creates and every secret the code reads", () => {
    for (const queue of wantedResources(production).queues) expect(deploySection).toContain(`\`${queue}\``);
    // The code's secrets: the settings .dev.vars.example gives development, and the seal pair npm run dev generates.
    const secrets = [...secretNamesIn(readFileSync(".dev.vars.example", "utf8")), "SEAL_PRIVATE_KEY", "SEAL_CERTIFICATE"];
    for (const name of secrets) expect(deploySection, name).toContain(`\`${name}\``);
    // Every setting the code reads is documented somewhere in the README.
    for (const name of envSettings) expect(readme, name).toContain(`\`${name}\``);
  });
});

describe("the deploy's arguments", () => {
  it("takes the environment, its own flags, and hands every other argument to wrangler deploy", () => {
    expect(parseDeployArgs([])).toMatchObject({ environment: "production", plan: false, rest: [] });
    expect(
      parseDeployArgs(["staging", "--plan", "--secrets-file=s.json", "--smoke-origin", "http://x", "--var", "A:b", "--minify"]),
    ).toEqual({
      environment: "staging",
      plan: true,
      secretsFile: "s.json",
      smokeOrigin: "http://x",
      rest: ["--var", "A:b", "--minify"],
    });
  });

  it("reads the names of a JSON or .env secrets file", () => {
    expect(secretNamesIn('{"A":"1","B_2":"x"}')).toEqual(["A", "B_2"]);
    expect(secretNamesIn("# note\nA=1\nexport B_2='x'\n\nC = 3\n")).toEqual(["A", "B_2", "C"]);
  });
});

describe("the smoke check", () => {
  it("names every answer a deployment failed to give", async () => {
    // Nothing listens on the discard port: each check fails, each by name (a live server passes: test/e2e/deploy.suite.ts).
    const problems = await smokeCheck("http://127.0.0.1:9");
    expect(problems.map((p) => p.split(" (")[0])).toEqual([
      "authorization-server metadata",
      "protected-resource metadata",
      "the API document",
      "the MCP endpoint",
      "a public reviews feed",
    ]);
  });
});

describe("npm run shard:add's edit", () => {
  it("adds the next shard after the last one, at the top level and in every environment", () => {
    const toml = readFileSync("wrangler.toml", "utf8");
    const next = withShard(toml, 2);
    expect(next.match(/binding = "DB_SHARD_2"\ndatabase_name = "brokerage-shard-2"\nmigrations_dir = "migrations\/tenant"/g)).toHaveLength(
      2,
    );
    expect(next.indexOf('binding = "DB_SHARD_2"')).toBeGreaterThan(next.indexOf('binding = "DB_SHARD_1"'));
    expect(() => withShard(toml, 5)).toThrow(/DB_SHARD_4/);
  });
});
