// npm run db:migrate:local | deploy: applies migrations/directory to the directory (DB) and migrations/tenant to every
// tenant shard (DB_SHARD_0 … n) that wrangler.toml declares. `--remote` for the deployed databases.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { migrateLocal } from "./local-d1.mjs";
import { wrangler } from "./wrangler.mjs";

/**
 * Where local state lives: `.wrangler/state` (wrangler's own default), or `DEV_PERSIST_TO` when set, so a run that
 * must not touch a developer's data (bench/exports.node.bench.test.ts) migrates, mints, seeds and serves elsewhere.
 */
export const localStateDir = () => process.env.DEV_PERSIST_TO || fileURLToPath(new URL("../.wrangler/state", import.meta.url));
export const persistArgs = () => (process.env.DEV_PERSIST_TO ? ["--persist-to", process.env.DEV_PERSIST_TO] : []);

/** The `[[d1_databases]]` tables of wrangler.toml: binding, name, id and migrations folder. */
export function d1Databases(toml = readFileSync(new URL("../wrangler.toml", import.meta.url), "utf8")) {
  return toml
    .split(/^\s*\[\[d1_databases\]\]\s*$/m)
    .slice(1)
    .map((rest) => rest.split(/^\s*\[/m)[0])
    .map((table) => {
      const field = (name) => table.match(new RegExp(`^\\s*${name}\\s*=\\s*"([^"]*)"`, "m"))?.[1];
      return {
        binding: field("binding"),
        database_name: field("database_name"),
        database_id: field("database_id"),
        migrations_dir: field("migrations_dir"),
      };
    })
    .filter((d) => d.binding);
}

/** The D1 bindings wrangler.toml declares: the directory, then the shards in order. */
export function databaseBindings(toml) {
  const bindings = d1Databases(toml).map((d) => d.binding);
  const shards = bindings.filter((b) => /^DB_SHARD_\d+$/.test(b)).sort((a, b) => Number(a.slice(9)) - Number(b.slice(9)));
  shards.forEach((binding, i) => {
    if (binding !== `DB_SHARD_${i}`)
      throw new Error(`wrangler.toml: shard bindings must run DB_SHARD_0 … n without gaps (found ${binding})`);
  });
  if (!bindings.includes("DB") || shards.length === 0) throw new Error("wrangler.toml must declare DB and at least DB_SHARD_0");
  return ["DB", ...shards];
}

/**
 * Every deployed database's migrations, by wrangler itself, one after the other (`npm run deploy`). Local databases
 * are migrated in one process instead (scripts/local-d1.mjs).
 */
function applyRemoteMigrations({ quiet = true } = {}) {
  for (const binding of databaseBindings()) wrangler(["d1", "migrations", "apply", binding, "--remote"], { quiet });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv.includes("--remote")) applyRemoteMigrations({ quiet: false });
  else {
    const applied = await migrateLocal();
    console.log(applied.length ? `Applied ${applied.join(", ")}` : "Every local migration is applied.");
  }
}
