import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { readDevVars, sealBindings } from "./scripts/dev-vars.mjs";

/** The Workers pool both the tests and the benchmarks run in: wrangler.toml's bindings, the dev vars, both migration sets. */
export const workersPool = () =>
  cloudflareTest(async () => ({
    wrangler: { configPath: "./wrangler.toml" },
    miniflare: { bindings: { ...readDevVars(), ...(await sealBindings()), DIRECTORY_MIGRATIONS: await readD1Migrations("./migrations/directory"), TENANT_MIGRATIONS: await readD1Migrations("./migrations/tenant"), ENVIRONMENT: "test" } },
  }));
