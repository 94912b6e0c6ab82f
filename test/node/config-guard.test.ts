// ENVIRONMENT=production with EMAIL_PROVIDER=log is refused by the commands that would serve or deploy it,
// before anything starts, not only by the Worker's 500 on every request (src/env.ts).
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { configProblem, tomlVar } from "../../scripts/config-guard.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const run = (script: string, args: string[]) =>
  spawnSync(process.execPath, [`scripts/${script}`, ...args], { cwd: root, encoding: "utf8", timeout: 60_000 });
const TOML = '[vars]\nENVIRONMENT = "development"\nEMAIL_PROVIDER = "log"\n\n[[d1_databases]]\nbinding = "DB"\n';

describe("the configuration guard of npm run dev and npm run deploy", () => {
  it("refuses production with the log mailer, however the two are set, and nothing else", () => {
    expect(tomlVar(TOML, "EMAIL_PROVIDER")).toBe("log");
    expect(configProblem({ toml: TOML })).toBeNull();
    expect(configProblem({ toml: TOML, args: ["--var", "ENVIRONMENT:production"] })).toMatch(/EMAIL_PROVIDER=log/);
    expect(configProblem({ toml: TOML, fileVars: { ENVIRONMENT: "production" } })).toMatch(/EMAIL_PROVIDER=log/);
    expect(configProblem({ toml: TOML, environment: "production" })).toMatch(/EMAIL_PROVIDER=resend/);
    expect(configProblem({ toml: TOML, environment: "production", args: ["--var=EMAIL_PROVIDER:resend"] })).toBeNull();
    expect(configProblem({ toml: '[vars]\nEMAIL_PROVIDER = "resend"\n', environment: "production" })).toBeNull();
    expect(configProblem({ toml: TOML, args: ["--var", "ENVIRONMENT:staging"] })).toBeNull();
    // ENVIRONMENT unset is production, as the Worker reads it.
    expect(configProblem({ toml: '[vars]\nEMAIL_PROVIDER = "log"\n' })).toMatch(/EMAIL_PROVIDER=log/);
  });

  it("npm run dev -- --var ENVIRONMENT:production stops at once, saying why", () => {
    const res = run("dev.mjs", ["--var", "ENVIRONMENT:production"]);
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/Refusing to start: ENVIRONMENT=production with EMAIL_PROVIDER=log/);
  });

  it("npm run deploy with the log mailer stops before it asks Cloudflare anything, saying why", () => {
    // No credentials either: the guard answers first.
    const env = { ...process.env, CLOUDFLARE_API_TOKEN: "", CLOUDFLARE_ACCOUNT_ID: "" };
    const res = spawnSync(process.execPath, ["scripts/deploy.mjs", "--var", "EMAIL_PROVIDER:log"], { cwd: root, encoding: "utf8", env });
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/Refusing to deploy: ENVIRONMENT=production with EMAIL_PROVIDER=log/);
    expect(res.stdout).not.toMatch(/migrations|Uploaded|wrangler/i);
    // The committed production environment passes the guard and stops at the missing credentials, naming both.
    const bare = spawnSync(process.execPath, ["scripts/deploy.mjs"], { cwd: root, encoding: "utf8", env });
    expect(bare.status).toBe(1);
    expect(bare.stderr).toMatch(/Refusing to deploy: CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID must be set/);
  });
});
