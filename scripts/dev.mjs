// npm run dev: write .dev.vars if missing, apply migrations to local D1 (state under .wrangler/state), then serve
// on 127.0.0.1:${PORT:-8787}.
import { spawn } from "node:child_process";
import { ensureDevVars } from "./dev-vars.mjs";
import { applyLocalMigrations } from "./wrangler.mjs";

await ensureDevVars();
applyLocalMigrations({ quiet: false });
const port = process.env.PORT || "8787";
const child = spawn("wrangler", ["dev", "--ip", "127.0.0.1", "--port", port, ...process.argv.slice(2)], { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
