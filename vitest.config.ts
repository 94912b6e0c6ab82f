import { defineConfig } from "vitest/config";
import { workersPool } from "./vitest.workers";

export default defineConfig({
  test: {
    // The JSON report is what .ci/run reads for its closing "N passed, N failed" line.
    reporters: ["default", ["json", { outputFile: ".ci/out/vitest-report.json" }]],
    projects: [
      {
        // Inside workerd, against real local D1, Durable Objects, Queues and R2 (storage isolated per test file).
        plugins: [workersPool()],
        test: {
          name: "workers",
          // A ceiling for a hung test, not a speed target: some tests wait on queue consumers for up to 15 s.
          testTimeout: 30_000,
          include: ["test/**/*.test.ts"],
          exclude: ["test/e2e/**", "test/node/**"],
          setupFiles: ["./test/helpers/apply-migrations.ts"],
          // A real HTTP receiver on 127.0.0.1 for webhook deliveries (workerd reaches it over the network).
          globalSetup: ["./test/helpers/receiver-server.ts"],
        },
      },
      {
        // In Node: the API contract checked with outside tools (Redocly's linter, openapi-typescript).
        test: { name: "node", include: ["test/node/**/*.test.ts"], environment: "node", testTimeout: 120_000 },
      },
      {
        // In Node: the developer commands themselves (npm run dev, npm run token) as a user runs them.
        test: { name: "e2e", include: ["test/e2e/**/*.test.ts"], environment: "node", testTimeout: 180_000, hookTimeout: 180_000 },
      },
    ],
  },
});
