// npm run db:migrate:local | deploy: applies migrations/directory to the directory (DB) and migrations/tenant to every
// tenant shard (DB_SHARD_0 … n) that wrangler.toml declares (issue 24). `--remote` for the deployed databases.
import { readFileSync } from "node:fs";
import { wrangler } from "./wrangler.mjs";

/** The D1 bindings wrangler.toml declares: the directory, then the shards in order. */
export function databaseBindings(toml = readFileSync(new URL("../wrangler.toml", import.meta.url), "utf8")) {
  const bindings = [...toml.matchAll(/^\s*binding\s*=\s*"(DB(?:_SHARD_\d+)?)"/gm)].map((m) => m[1]);
  const shards = bindings.filter((b) => b.startsWith("DB_SHARD_")).sort((a, b) => Number(a.slice(9)) - Number(b.slice(9)));
  shards.forEach((binding, i) => {
    if (binding !== `DB_SHARD_${i}`) throw new Error(`wrangler.toml: shard bindings must run DB_SHARD_0 … n without gaps (found ${binding})`);
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
    const apply = () => wrangler(["d1", "migrations", "apply", binding, where], { quiet });
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
        // cannot be applied over it. Local data is disposable; the README says how a deployed one is adopted.
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
