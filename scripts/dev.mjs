// npm run dev: write .dev.vars if missing, apply migrations to local D1 (state under .wrangler/state, or
// $DEV_PERSIST_TO), then serve on 127.0.0.1:${PORT:-8787} with APP_URL and MCP_SERVER_URL on that port unless set
// (scripts/dev-origin.mjs).
import { spawn } from "node:child_process";
import { refuseMisconfiguration } from "./config-guard.mjs";
import { devOrigin, devOriginArgs } from "./dev-origin.mjs";
import { ensureDevVars, readLocalDevVars } from "./dev-vars.mjs";
import { migrateLocal } from "./local-d1.mjs";
import { persistArgs } from "./migrate.mjs";

await ensureDevVars();
refuseMisconfiguration({ args: process.argv.slice(2), fileVars: readLocalDevVars() });
// In this process, before wrangler starts: an up-to-date state costs one read per database.
const applied = await migrateLocal();
console.log(applied.length ? `Local D1: applied ${applied.length} migrations.` : "Local D1: every migration applied.");
const port = process.env.PORT || "8787";
const args = process.argv.slice(2);
const origin = devOrigin({ port, args, env: process.env, fileVars: readLocalDevVars() });
// wrangler lists `--var` values as "(hidden)": say here which origin the API states.
console.log(`APP_URL=${origin.APP_URL} MCP_SERVER_URL=${origin.MCP_SERVER_URL}`);
const child = spawn("wrangler", ["dev", "--ip", "127.0.0.1", "--port", port, ...devOriginArgs(origin), ...persistArgs(), ...args], {
  stdio: "inherit",
  env: {
    // Miniflare fetches a sample `request.cf` from workers.cloudflare.com at start and prints a stack trace when that
    // fails (offline, or DNS blocked): an error that is none, since the API reads nothing from request.cf. Its
    // placeholder object serves as well. No usage metrics from a developer's machine either.
    CLOUDFLARE_CF_FETCH_ENABLED: "false",
    WRANGLER_SEND_METRICS: "false",
    ...process.env,
  },
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
