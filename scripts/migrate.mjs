// npm run db:migrate:local | deploy: applies migrations/directory to the directory (DB) and migrations/tenant to every
// tenant shard (DB_SHARD_0 … n) that wrangler.toml declares (issue 24). `--remote` for the deployed databases.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
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
 * Every database's migrations, one after the other: side by side, the wrangler processes contend for the local
 * state's SQLite files (`database is locked`), and `npm run dev` then fails to start.
 */
export function applyMigrations({ where = "--local", quiet = true } = {}) {
  for (const binding of databaseBindings()) {
    const apply = () => wrangler(["d1", "migrations", "apply", binding, where, ...(where === "--local" ? persistArgs() : [])], { quiet });
    try {
      apply();
    } catch (err) {
      if (!/already exists/.test(err.message)) throw err;
      // Another process applied the same migration a moment before (parallel `npm run token` on a fresh checkout):
      // once it has recorded it, the apply finds nothing left to do.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
      try {
        apply();
      } catch (again) {
        // A local database from before issue 24 holds every table and the old migration list: the directory baseline
        // cannot be applied over it. Local data is disposable; docs/operations.md says how a deployed one is adopted.
        if (where === "--local" && binding === "DB" && /already exists/.test(again.message)) {
          throw new Error("the local database predates the directory/shard split (issue 24): delete .wrangler/state/v3/d1 and run again");
        }
        throw again;
      }
    }
  }
}

export const applyLocalMigrations = (opts) => applyMigrations({ where: "--local", ...opts });

if (import.meta.url === `file://${process.argv[1]}`) {
  applyMigrations({ where: process.argv.includes("--remote") ? "--remote" : "--local", quiet: false });
}
