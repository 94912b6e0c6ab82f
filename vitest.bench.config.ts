import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { readDevVars, sealBindings } from "./scripts/dev-vars.mjs";

// `npm run bench`: benchmarks run as ordinary test files inside workerd (vitest's own bench mode does not run in
// the Workers pool), so route costs are measured without wrangler dev's proxy in front (DESIGN.md "Benchmarks").
export default defineConfig({
  plugins: [
    cloudflareTest(async () => ({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: { bindings: { ...readDevVars(), ...(await sealBindings()), DIRECTORY_MIGRATIONS: await readD1Migrations("./migrations/directory"), TENANT_MIGRATIONS: await readD1Migrations("./migrations/tenant"), ENVIRONMENT: "test" } },
    })),
  ],
  test: {
    include: ["bench/**/*.bench.test.ts"],
    setupFiles: ["./test/helpers/apply-migrations.ts"],
    globalSetup: ["./test/helpers/receiver-server.ts"],
    testTimeout: 30 * 60_000,
    hookTimeout: 30 * 60_000,
    fileParallelism: false,
  },
});
