import type { createApp } from "./app";
import type { Env } from "./env";

export { EnvelopeSigner } from "./signatures/envelope-signer";
export { RateLimiterObject as RateLimiter } from "./platform/rate-limiter-object";

type App = ReturnType<typeof createApp>;
let app: App | undefined;
let building: Promise<App> | undefined;
// The queue consumers and the cron pass, kept as values once loaded: a later batch or pass reads them without an import.
let queues: typeof import("./queues") | undefined;
let cron: typeof import("./cron") | undefined;

/**
 * The app (its middleware, zod and the drizzle tables they read), built at the isolate's first request: every new
 * isolate, the Durable Objects' too, pays its startup before anything else, and the app was most of it. Route groups,
 * queue consumers and cron passes load at their own first use (docs/decisions/0006-a-fast-cold-start.md).
 */
function buildApp(): Promise<App> {
  if (!building) {
    building = import("./app").then(({ createApp }) => (app = createApp()));
    // A failed import is tried again by the next request rather than kept.
    building.catch(() => (building = undefined));
  }
  return building;
}

export default {
  fetch(request, env, ctx) {
    return app ? app.fetch(request, env, ctx) : buildApp().then((built) => built.fetch(request, env, ctx));
  },

  async queue(batch: MessageBatch<unknown>, env: Env): Promise<void> {
    queues ??= await import("./queues");
    return queues.handleQueue(batch, env);
  },

  // Awaited rather than left to waitUntil, so a pass asked for by `npm run cron` answers once it has finished. Every
  // pass takes its "now" from the scheduled time, never the wall clock (DESIGN.md contract 12).
  async scheduled(controller: ScheduledController, env: Env, _ctx: ExecutionContext): Promise<void> {
    cron ??= await import("./cron");
    await cron.runCron(env, new Date(controller.scheduledTime));
  },
} satisfies ExportedHandler<Env>;
