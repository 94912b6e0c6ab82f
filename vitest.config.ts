import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { workersPool } from "./vitest.workers";

/**
 * The files that take longest (seconds in CI on 2 cores), each project's longest first. A fresh machine has no
 * timings of its own, and vitest then starts the larger files first: served.test.ts (a few imports, three minutes)
 * started last of its project, and route-matrix.test.ts (half a minute) last of all, so one core ran it alone at the
 * end. Started first, the long files end beside short ones, which fill the tail. A file missing here only starts later
 * than it could; a file listed that is gone changes nothing.
 */
const LONGEST = [
  "test/e2e/served.test.ts", // 191 (deploy and shard:add about 100 of it)
  "test/e2e/dev-and-token.test.ts", // 72
  "test/faults/lane-4.test.ts", // 89
  "test/faults/lane-1.test.ts", // 84
  "test/faults/lane-3.test.ts", // 83
  "test/faults/lane-2.test.ts", // 37
  "test/node/style.test.ts", // 17
  "test/node/openapi-contract.test.ts", // 12
  "test/node/startup-budget.test.ts", // 14
  "test/node/layers.test.ts", // 15
  "test/platform/write-path.test.ts", // 55
  "test/platform/route-matrix.test.ts", // 45
  "test/shards/shard-move.test.ts", // 34
  "test/action-plans/action-plans.test.ts", // 33
  "test/erasure/erasure.test.ts", // 19
  "test/webhooks/webhook-catalogue.test.ts", // 15
  "test/webhooks/webhooks-e2e.test.ts", // 14
  "test/webhooks/webhooks-heal.test.ts", // 14
  "test/leads/leads.test.ts", // 8
  "test/signatures/signatures.test.ts", // 11
];

/**
 * vitest's own order (project by project, which it keeps so that a project's runtimes are reused), with each
 * project's files of LONGEST moved to its front in LONGEST's order.
 */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const projects = [...new Set(sorted.map((f) => f.project.name))];
    const rank = (f: TestSpecification) => {
      const i = LONGEST.findIndex((path) => f.moduleId.endsWith(`/${path}`));
      return i < 0 ? LONGEST.length : i;
    };
    return sorted
      .map((file, i) => ({ file, i }))
      .sort(
        (a, b) => projects.indexOf(a.file.project.name) - projects.indexOf(b.file.project.name) || rank(a.file) - rank(b.file) || a.i - b.i,
      )
      .map(({ file }) => file);
  }
}

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
    sequence: { sequencer: LongestFirst },
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
        // a browser. Each file that needs a server starts its own on a state of its own (helpers/dev-server.ts): the
        // suites of served.test.ts share one, and dev-and-token.test.ts starts npm run dev as a developer does.
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
