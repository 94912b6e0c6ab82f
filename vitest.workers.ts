import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { readDevVars, sealBindings } from "./scripts/dev-vars.mjs";

/** A queue consumer of wrangler.toml, as wrangler reads it (its bundled types leave the configuration untyped). */
interface QueueConsumer {
  queue: string;
  max_batch_size?: number;
  max_batch_timeout?: number;
  max_retries?: number;
  dead_letter_queue?: string;
}

/**
 * wrangler.toml's queue consumers as miniflare takes them, each delivering a batch that has room after `seconds`
 * rather than its max_batch_timeout; batch size, retries and dead-letter queue as configured.
 */
async function queueConsumers(seconds: number) {
  // Imported here, when the pool starts: wrangler's bundle does not load in knip's config loader (test/node/layers.test.ts).
  const { unstable_readConfig } = await import("wrangler");
  const config = unstable_readConfig({ config: "./wrangler.toml" }) as unknown as { queues: { consumers?: QueueConsumer[] } };
  return Object.fromEntries(
    (config.queues.consumers ?? []).map((c) => [
      c.queue,
      {
        maxBatchSize: c.max_batch_size,
        maxBatchTimeout: Math.min(seconds, c.max_batch_timeout ?? seconds),
        maxRetries: c.max_retries,
        deadLetterQueue: c.dead_letter_queue,
      },
    ]),
  );
}

/**
 * The Workers pool both the tests and the benchmarks run in: wrangler.toml's bindings, the dev vars, both migration
 * sets. The per-credential quota is lifted: a benchmark or a seeding loop sends thousands of requests on one session
 * in a minute; the rate-limit tests set a small one for their own app (CREDENTIAL_RATE_LIMIT).
 *
 * `queueBatchTimeout` (seconds) shortens every consumer's wait for a batch to fill: see vitest.config.ts.
 */
export const workersPool = ({ queueBatchTimeout }: { queueBatchTimeout?: number } = {}) =>
  cloudflareTest(async () => ({
    wrangler: { configPath: "./wrangler.toml" },
    miniflare: {
      bindings: {
        ...readDevVars(),
        ...(await sealBindings()),
        DIRECTORY_MIGRATIONS: await readD1Migrations("./migrations/directory"),
        TENANT_MIGRATIONS: await readD1Migrations("./migrations/tenant"),
        ENVIRONMENT: "test",
        CREDENTIAL_RATE_LIMIT: "1000000/60",
      },
      ...(queueBatchTimeout === undefined ? {} : { queueConsumers: await queueConsumers(queueBatchTimeout) }),
    },
  }));
