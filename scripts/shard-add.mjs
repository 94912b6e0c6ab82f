// npm run shard:add [-- --remote [environment]]
//
// Adds the next tenant shard: its binding DB_SHARD_n (database brokerage-shard-n) in wrangler.toml, at the top level
// and in every environment that binds databases, then its local database, migrated. With --remote it also creates
// the environment's database (default production) and applies the tenant migrations to it, so the Worker that binds
// it never meets an empty shard; `npm run deploy` would do the same. Nothing moves: an organization lives where the
// directory places it (`organization_shards`), and a new one goes to the shard carrying the fewest, ties to the lowest
// index, so the new shard takes the next organizations until it has caught up (docs/operations.md "Shards").
import { readFileSync, writeFileSync } from "node:fs";
import { cloudflareApi } from "./cloudflare-api.mjs";
import { migrateLocal } from "./local-d1.mjs";
import { databaseBindings } from "./migrate.mjs";
import { wrangler } from "./wrangler.mjs";

const TOML = new URL("../wrangler.toml", import.meta.url);

/**
 * wrangler.toml with shard `n` added after shard n-1 in every table list that binds it: the top level's
 * `[[d1_databases]]` and each `[[env.<name>.d1_databases]]`.
 */
export function withShard(toml, n) {
  const previous = new RegExp(
    `^\\[\\[((?:env\\.[\\w-]+\\.)?)d1_databases\\]\\]\\s*\\nbinding = "DB_SHARD_${n - 1}"\\s*\\ndatabase_name = "([^"]*?)${n - 1}"\\s*\\nmigrations_dir = "([^"]+)"\\s*\\n`,
    "gm",
  );
  let added = 0;
  const next = toml.replace(previous, (block, prefix, namePrefix, dir) => {
    added++;
    return `${block}\n[[${prefix}d1_databases]]\nbinding = "DB_SHARD_${n}"\ndatabase_name = "${namePrefix}${n}"\nmigrations_dir = "${dir}"\n`;
  });
  if (added === 0) throw new Error(`wrangler.toml: no [[d1_databases]] block for DB_SHARD_${n - 1} to add DB_SHARD_${n} after`);
  return next;
}

function main() {
  const args = process.argv.slice(2);
  const remote = args.includes("--remote");
  const environment = args.find((a) => !a.startsWith("-")) ?? "production";
  return (async () => {
    const shards = databaseBindings().length - 1;
    const binding = `DB_SHARD_${shards}`;
    writeFileSync(TOML, withShard(readFileSync(TOML, "utf8"), shards));
    const name = new RegExp(`binding = "${binding}"\\s*\\ndatabase_name = "([^"]+)"`).exec(readFileSync(TOML, "utf8"))[1];
    console.log(`wrangler.toml: ${binding} (database ${name}) added.`);
    const applied = (await migrateLocal()).filter((f) => f.startsWith(`${binding}/`));
    console.log(`Local ${binding}: ${applied.length} migrations applied.`);
    if (remote) {
      const api = cloudflareApi();
      if (api.missing) throw new Error(`--remote needs ${api.missing.join(" and ")}`);
      if (!(await api.databases()).some((d) => d.name === name)) {
        await api.createDatabase(name);
        console.log(`Created the D1 database ${name}.`);
      }
      try {
        wrangler(["d1", "migrations", "apply", binding, "--remote", "--env", environment], { stream: true });
      } catch {
        throw new Error(`the migrations of ${name} failed: npm run deploy creates and migrates what is missing`);
      }
    }
    console.log(
      `\nNext: npm run deploy${remote && environment !== "production" ? ` -- ${environment}` : ""}. The Worker then binds ${binding}; new organizations go to the shard carrying the fewest, existing ones stay where they are (npm run shard:move moves one).`,
    );
  })();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err) => {
    console.error(`shard:add: ${err.message}`);
    process.exit(1);
  });
}
