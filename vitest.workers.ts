import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { readDevVars, sealBindings } from "./scripts/dev-vars.mjs";

/**
 * The Workers pool both the tests and the benchmarks run in: wrangler.toml's bindings, the dev vars, both migration
 * sets. The per-credential quota is lifted: a benchmark or a seeding loop sends thousands of requests on one session
 * in a minute; the rate-limit tests set a small one for their own app (CREDENTIAL_RATE_LIMIT).
 */
export const workersPool = () =>
  cloudflareTest(async () => ({
    wrangler: { configPath: "./wrangler.toml" },
    miniflare: {
      bindings: {
        ...readDevVars(),
        ...(await sealBindings()),
        DIRECTORY_MIGRATIONS: await readD1Migrations("./migrations/directory"),
        TENANT_MIGRATIONS: await readD1Migrations("./migrations/tenant"),
        ENVIRONMENT: "test",
        CREDENTIAL_RATE_LIMIT: "1000000/60",
      },
    },
  }));
