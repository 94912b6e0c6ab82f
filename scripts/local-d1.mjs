// The local D1 databases of wrangler.toml, opened in this process through the Miniflare wrangler itself runs (the
// same files under .wrangler/state/v3 (or $DEV_PERSIST_TO/v3) that `npm run dev` serves), reached by one local runtime
// instead of one wrangler process per statement (`npm run token` spawned five: about 15 s a call). Miniflare alone,
// not wrangler's getPlatformProxy: loading wrangler's 15 MB bundle was half of every `npm run token` and `npm run mail`
// (4 s of CPU a call, now 2.5 s); wrangler is loaded only to split a migration that is still to apply.
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { d1Databases, localStateDir } from "./migrate.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
// workerd logs a lock held by another process (a running `npm run dev`) as SQLITE_BUSY and hands the script only
// "internal error; reference = …": both are a moment's wait, not a failure.
const LOCKED = /database is locked|SQLITE_BUSY|internal error/;

/**
 * The Miniflare of the installed wrangler (its own dependency, which may be another version than one beside it), so
 * the databases are the files `wrangler dev` and `wrangler d1 execute --local` open.
 */
async function wranglersMiniflare() {
  const require = createRequire(import.meta.url);
  return import(pathToFileURL(require.resolve("miniflare", { paths: [require.resolve("wrangler")] })).href);
}

/**
 * Opens the databases alone (no Durable Object or Vectorize binding is started or warned about), persisted where
 * wrangler persists them: `env` holds them by binding, `dispose` ends the runtime. Held open, it reads what other
 * processes (`npm run dev`) write since; nothing is migrated (withLocalD1 does that).
 */
export async function openLocalD1() {
  const databases = d1Databases();
  const { Miniflare, convertV4MiniflareOptions } = await wranglersMiniflare();
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      modules: true,
      script: "",
      compatibilityDate: "2026-11-01",
      resourcePersistencePath: `${localStateDir()}/v3`,
      // wrangler's own key for a local database: its id, else its binding (wrangler.toml gives none outside production).
      d1Databases: Object.fromEntries(databases.map(({ binding, database_id }) => [binding, database_id ?? binding])),
    }),
  );
  try {
    const env = Object.fromEntries(await Promise.all(databases.map(async ({ binding }) => [binding, await mf.getD1Database(binding)])));
    return { env, databases, dispose: () => mf.dispose() };
  } catch (err) {
    await mf.dispose();
    throw err;
  }
}

/**
 * Wrangler's own record of applied migrations, defined as wrangler defines it: `wrangler d1 migrations list --local`
 * and `apply --local` read what this process applied.
 */
const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS "d1_migrations"(
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  name       TEXT UNIQUE,
  applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
)`;
// Another process applying the same file a moment before this one (parallel `npm run token` on a fresh clone).
const RACED = /already exists|UNIQUE constraint failed: d1_migrations/;

const migrationFiles = (dir) =>
  readdirSync(`${root}${dir}`)
    .filter((f) => f.endsWith(".sql"))
    .sort();

async function appliedNames(db) {
  try {
    return new Set((await retryLocked(() => db.prepare("SELECT name FROM d1_migrations").all())).results.map((r) => r.name));
  } catch (err) {
    if (/no such table/.test(String(err?.message))) return new Set();
    throw err;
  }
}

/**
 * Applies every database's pending migrations in this process, the way `wrangler d1 migrations apply --local` does
 * (the file split into statements by wrangler's own splitter, run with its d1_migrations row as one batch, so a file
 * is applied whole or not at all) but without a wrangler process per database: on a fresh clone that was most of
 * `npm run dev`'s first minute. A batch that fails because another process got there first or holds the lock is
 * followed by a fresh read of what is applied, and the rest goes on. Answers the files it applied.
 */
async function applyPending(env, databases) {
  const applied = [];
  for (const { binding, migrations_dir } of databases) {
    const db = env[binding];
    await retryLocked(() => db.prepare(MIGRATIONS_TABLE).run());
    for (let attempt = 1; ; ) {
      const done = await appliedNames(db);
      const file = migrationFiles(migrations_dir).find((f) => !done.has(f));
      if (!file) break;
      const { unstable_splitSqlQuery: splitSqlQuery } = await import("wrangler");
      const statements = splitSqlQuery(readFileSync(`${root}${migrations_dir}/${file}`, "utf8"));
      try {
        await db.batch([...statements.map((q) => db.prepare(q)), db.prepare("INSERT INTO d1_migrations (name) VALUES (?1)").bind(file)]);
        applied.push(`${binding}/${file}`);
        attempt = 1;
      } catch (err) {
        const message = String(err?.message);
        if (attempt++ >= 8 || !(LOCKED.test(message) || RACED.test(message))) {
          throw new Error(
            `${binding}: migration ${file} failed: ${message}\n(local data is disposable: delete ${localStateDir()}/v3/d1 and run again)`,
          );
        }
        await new Promise((r) => setTimeout(r, 150 * attempt));
      }
    }
  }
  return applied;
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

/** Whether process `pid` still runs. */
const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === "EPERM";
  }
};

/**
 * Holds the local state's migration lock (a file naming its holder's pid) until the answer is called: processes that
 * open fresh state side by side (parallel `npm run token` on a fresh clone) would each create its databases' files at
 * once, which workerd answers with an uncaught SQLITE_BUSY. A lock whose holder has died is taken over.
 */
async function lockMigrations() {
  const dir = `${localStateDir()}/v3`;
  mkdirSync(dir, { recursive: true });
  const path = `${dir}/.migrations.lock`;
  const started = Date.now();
  for (;;) {
    try {
      const fd = openSync(path, "wx");
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      let held = true;
      // Once only: a second call must not remove the lock another process has taken since.
      return () => {
        if (held) rmSync(path, { force: true });
        held = false;
      };
    } catch (err) {
      if (err.code !== "EEXIST") throw err;
      let holder = 0;
      try {
        holder = Number(readFileSync(path, "utf8"));
      } catch {
        // released meanwhile
      }
      // An empty file is one being written this moment: its holder is alive.
      if (holder && !alive(holder)) rmSync(path, { force: true });
      else if (Date.now() - started > 180_000) throw new Error(`${path} is held by process ${holder}; delete it if that process is gone`);
      else await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * Runs `use(env, applied)` with every local database open. `migrate: true` first brings them up to date, in this
 * process, under the migration lock (an up-to-date state costs one read per database); `applied` names the files.
 */
export async function withLocalD1(use, { migrate = false } = {}) {
  const release = migrate ? await lockMigrations() : undefined;
  let local;
  try {
    local = await openLocalD1();
    let applied = [];
    if (migrate) {
      applied = await applyPending(local.env, local.databases);
      release();
    }
    return await use(local.env, applied);
  } finally {
    release?.();
    await local?.dispose();
  }
}

/** Brings every local database up to date (`npm run dev`, `npm run db:migrate:local`): the files applied, by database. */
export const migrateLocal = () => withLocalD1((_env, applied) => applied, { migrate: true });
