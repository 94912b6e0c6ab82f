import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { readDevVars, sealBindings } from "./scripts/dev-vars.mjs";

// `npm run bench`: benchmarks run as ordinary test files inside workerd (vitest's own bench mode does not run in
// the Workers pool), so route costs are measured without wrangler dev's proxy in front (DESIGN.md "Benchmarks").
// Pure computation (a PDF render) is timed in Node with the same code: workerd's clock stands still while it computes.
export default defineConfig({
  test: {
    testTimeout: 30 * 60_000,
    hookTimeout: 30 * 60_000,
    fileParallelism: false,
    projects: [
      {
        plugins: [
          cloudflareTest(async () => ({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: { bindings: { ...readDevVars(), ...(await sealBindings()), DIRECTORY_MIGRATIONS: await readD1Migrations("./migrations/directory"), TENANT_MIGRATIONS: await readD1Migrations("./migrations/tenant"), ENVIRONMENT: "test" } },
          })),
        ],
        test: {
          name: "workers",
          include: ["bench/**/*.bench.test.ts"],
          exclude: ["bench/**/*.node.bench.test.ts"],
          setupFiles: ["./test/helpers/apply-migrations.ts"],
          globalSetup: ["./test/helpers/receiver-server.ts"],
          testTimeout: 30 * 60_000,
          hookTimeout: 30 * 60_000,
        },
      },
      { test: { name: "node", include: ["bench/**/*.node.bench.test.ts"], environment: "node", testTimeout: 30 * 60_000 } },
    ],
  },
});
