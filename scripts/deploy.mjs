// npm run deploy [-- wrangler deploy arguments]: refuses a configuration the Worker would refuse, then applies the D1
// migrations remotely (scripts/migrate.mjs) and deploys with ENVIRONMENT=production.
import { spawnSync } from "node:child_process";
import { refuseMisconfiguration } from "./config-guard.mjs";
import { applyMigrations } from "./migrate.mjs";

const args = process.argv.slice(2);
refuseMisconfiguration({ args, environment: "production" });
applyMigrations({ where: "--remote", quiet: false });
const result = spawnSync("wrangler", ["deploy", "--var", "ENVIRONMENT:production", ...args], { stdio: "inherit" });
process.exit(result.status ?? 1);
