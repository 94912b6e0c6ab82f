// The e2e project's global setup: one `npm run dev` for every file that needs a running server but does not test the
// start itself (dev-and-token.test.ts starts its own). Starting one per file cost more than most of their tests.
import type { TestProject } from "vitest/node";
import { startDev } from "./dev-server";

declare module "vitest" {
  export interface ProvidedContext {
    sharedDev: { base: string; port: string };
  }
}

export default async function setup(project: TestProject) {
  // Links must point at this server: APP_URL is the API's own origin here (DESIGN.md contract 5).
  const dev = await startDev(["--var", "APP_URL:{base}"]);
  project.provide("sharedDev", { base: dev.base, port: dev.port });
  return () => {
    dev.stop();
    // The server's own errors, which its files only see as a status: a 500 in a run is explained here.
    const errors = dev
      .output()
      .split("\n")
      .filter((line) => /"level":"error"|Uncaught|SQLITE_|internal error/.test(line));
    if (errors.length)
      process.stderr.write(`npm run dev (shared by the e2e files) logged ${errors.length} errors:\n${errors.join("\n")}\n`);
  };
}
