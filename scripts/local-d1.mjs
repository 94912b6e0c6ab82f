// The local D1 databases of wrangler.toml, opened in this process through wrangler's getPlatformProxy: the same files
// under .wrangler/state/v3 (or $DEV_PERSIST_TO/v3) that `npm run dev` serves, reached by one local runtime instead of
// one wrangler process per statement (`npm run token` spawned five: about 15 s a call, now 3 to 4 s).
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { getPlatformProxy } from "wrangler";
import { applyLocalMigrations, d1Databases, localStateDir } from "./migrate.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
// workerd logs a lock held by another process (a running `npm run dev`) as SQLITE_BUSY and hands the script only
// "internal error; reference = …": both are a moment's wait, not a failure.
const LOCKED = /database is locked|SQLITE_BUSY|internal error/;

/**
 * Opens the databases alone (a configuration naming only them, so no Durable Object or Vectorize binding is started
 * or warned about), persisted where wrangler persists them.
 */
async function open() {
  const databases = d1Databases();
  const dir = `${root}.wrangler/tmp`;
  mkdirSync(dir, { recursive: true });
  // One file per process: parallel `npm run token` calls must not read each other's half-written configuration.
  const configPath = `${dir}/local-d1-${process.pid}.json`;
  writeFileSync(
    configPath,
    JSON.stringify({
      name: "local-d1",
      compatibility_date: "2026-11-01",
      d1_databases: databases.map(({ binding, database_name, database_id }) => ({ binding, database_name, database_id })),
    }),
  );
  try {
    const proxy = await getPlatformProxy({ configPath, persist: { path: `${localStateDir()}/v3` }, envFiles: [], remoteBindings: false });
    return { proxy, databases };
  } finally {
    rmSync(configPath, { force: true });
  }
}

/** The migration files of each database that its d1_migrations table does not list yet. */
async function pending(env, databases) {
  const missing = [];
  for (const { binding, migrations_dir } of databases) {
    const files = readdirSync(`${root}${migrations_dir}`).filter((f) => f.endsWith(".sql"));
    let applied = new Set();
    try {
      applied = new Set((await retryLocked(() => env[binding].prepare("SELECT name FROM d1_migrations").all())).results.map((r) => r.name));
    } catch (err) {
      if (!/no such table/.test(String(err?.message))) throw err;
    }
    missing.push(...files.filter((f) => !applied.has(f)).map((f) => `${binding}/${f}`));
  }
  return missing;
}

/** A statement run again while another process (a running `npm run dev`) holds the database's lock for a moment. */
export async function retryLocked(run) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (attempt >= 8 || !LOCKED.test(String(err?.message))) throw err;
      await new Promise((r) => setTimeout(r, 250 * attempt));
    }
  }
}

/**
 * Runs `use(env)` with every local database open. `migrate: true` first brings them up to date: a database with a
 * migration not yet applied is migrated by wrangler itself (the same `wrangler d1 migrations apply` as
 * `npm run db:migrate:local`); an up-to-date one costs no wrangler process at all.
 */
export async function withLocalD1(use, { migrate = false } = {}) {
  let { proxy, databases } = await open();
  try {
    if (migrate && (await pending(proxy.env, databases)).length > 0) {
      await proxy.dispose();
      proxy = undefined;
      applyLocalMigrations();
      ({ proxy, databases } = await open());
    }
    return await use(proxy.env);
  } finally {
    await proxy?.dispose();
  }
}

/** True when every database has every migration applied (`npm run dev` then starts without a wrangler apply). */
export async function migrationsApplied() {
  const { proxy, databases } = await open();
  try {
    return (await pending(proxy.env, databases)).length === 0;
  } finally {
    await proxy.dispose();
  }
}
