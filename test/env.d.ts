import type { D1Migration } from "cloudflare:test";
import type { Env as WorkerEnv } from "../src/env";

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {
      TEST_MIGRATIONS: D1Migration[];
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
