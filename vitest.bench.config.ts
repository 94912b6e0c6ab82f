import { defineConfig } from "vitest/config";
import { workersPool } from "./vitest.workers";

// `npm run bench`: benchmarks run as ordinary test files inside workerd (vitest's own bench mode does not run in
// the Workers pool), so route costs are measured without wrangler dev's proxy in front (DESIGN.md "Benchmarks").
// Pure computation (a PDF render) is timed in Node with the same code: workerd's clock stands still while it computes.
export default defineConfig({
  test: {
    // One file at a time, so no benchmark shares the machine with another.
    fileParallelism: false,
    projects: [
      {
        plugins: [workersPool()],
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
      {
        test: {
          name: "node",
          include: ["bench/**/*.node.bench.test.ts"],
          environment: "node",
          testTimeout: 30 * 60_000,
          hookTimeout: 30 * 60_000,
        },
      },
    ],
  },
});
