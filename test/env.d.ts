import type { D1Migration } from "cloudflare:test";
import type { Env as WorkerEnv } from "../src/env";

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {
      DIRECTORY_MIGRATIONS: D1Migration[];
      TENANT_MIGRATIONS: D1Migration[];
      DB_SHARD_1: D1Database;
    }
    interface GlobalProps {
      mainModule: typeof import("../src/index");
      durableNamespaces: "RateLimiter" | "EnvelopeSigner";
    }
  }
}

declare module "vitest" {
  interface ProvidedContext {
    /** Base URL of the Node receiver of test/helpers/receiver-server.ts. */
    receiverUrl: string;
  }
}
