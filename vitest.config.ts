import { defineConfig } from "vitest/config";
import { workersPool } from "./vitest.workers";

/** What every workers project shares. */
const workers = {
  // A ceiling for a hung test, not a speed target: some tests wait on queue consumers for up to 15 s.
  testTimeout: 30_000,
  setupFiles: ["./test/helpers/apply-migrations.ts"],
  // A real HTTP receiver on 127.0.0.1 for webhook deliveries (workerd reaches it over the network).
  globalSetup: ["./test/helpers/receiver-server.ts"],
};

/** Files that need a runtime (and storage) of their own. */
const ISOLATED = ["test/faults/**/*.test.ts"];

export default defineConfig({
  test: {
    // Both cores: files are spread over two runtimes (vitest's default here is one fewer than the cores).
    maxWorkers: 2,
    // The JSON report is what .ci/run reads for its closing "N passed, N failed" line.
    reporters: ["default", ["json", { outputFile: ".ci/out/vitest-report.json" }]],
    projects: [
      {
        // Inside workerd, against real local D1, Durable Objects, Queues and R2. Files share one runtime per worker
        // (isolate: false): each test makes its own organization and counts only its rows, so a file needs no fresh
        // storage, and starting a runtime per file cost more than the tests themselves.
        plugins: [workersPool()],
        test: {
          ...workers,
          name: "workers",
          isolate: false,
          include: ["test/**/*.test.ts"],
          exclude: ["test/e2e/**", "test/node/**", ...ISOLATED],
        },
      },
      {
        // The fault table's lanes each get a runtime of their own: they move the clock hours ahead and run the cron
        // over every organization of the shard, which would reach into the other files' organizations. Vitest runs
        // the projects in the order of their names, so the lanes, minutes each, start early (after e2e's).
        plugins: [workersPool()],
        test: { ...workers, name: "faults", include: ISOLATED },
      },
      {
        // In Node: the API contract checked with outside tools (Redocly's linter, openapi-typescript). Its files only
        // spawn those tools and read files (no process.env, mock or global set), so they share a Node worker per core
        // (isolate: false) instead of spawning one each.
        test: { name: "node", include: ["test/node/**/*.test.ts"], environment: "node", testTimeout: 120_000, isolate: false },
      },
      {
        // In Node: the developer commands themselves (npm run dev, npm run token) as a user runs them, and the pages in
        // a browser. Each file that needs a server starts its own on a state of its own (helpers/dev-server.ts).
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          environment: "node",
          // A page's answer waits on a dev server sharing two cores with the rest of the suite: 1 s (the default) flakes.
          expect: { poll: { timeout: 15_000 } },
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
