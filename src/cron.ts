import { runDuePlanSteps } from "./action-plans/runner";
import { pruneStaleListTotals } from "./crm/list-totals";
import { resumeErasures } from "./erasure/service";
import { createDb } from "./db/client";
import { sendObligationNotices } from "./documents/obligation-notices";
import { noteOverdueObligations } from "./documents/obligations";
import type { Env } from "./env";
import { relayDueDirectoryEvents } from "./events/directory-outbox";
import { resendUnsentEvents } from "./events/outbox";
import { disconnectExpired } from "./integrations/service";
import { withDeferred } from "./lib/deferred";
import { createLogger, loggableError } from "./lib/log";
import { pruneOAuth } from "./oauth/prune";
import { pruneIdempotencyKeys } from "./platform/idempotency";
import { onEveryShard } from "./shards/tenants";
import { expireSurveys, sendDueSurveys } from "./surveys/scheduling";
import { sendDueReminders, sweepOverdueEnvelopes } from "./signatures/sweeps";
import { purgeTrash } from "./trash/service";
import { sweepPendingUploads } from "./files/uploads";
import { resumeStalledImports } from "./imports/chunks";
import { expireExportArchives } from "./exports/retention";
import { drainLeadInbox } from "./leads/inbox";
import { pruneLeadReviews } from "./leads/reviews";
import { reassignSlowLeads, routeExpiredOffers } from "./ponds/service";
import { resendStalledDeliveries } from "./webhooks/fanout";
import { announceDueTasks } from "./tasks/service";
import { healEndpoints } from "./webhooks/healing";
import { refreshSmartLists } from "./smart-lists/membership";

/**
 * One cron pass at `now` (the scheduled time: DESIGN.md contract 12) (loaded by the Worker's scheduled handler at its first pass, not at startup).
 * Every pass judges what is due or expired at `now`, never by the wall clock, so `npm run cron -- --at <time>` runs them
 * as if then; what a pass records of what it did (a mail's sent time, a delivery's attempt) may keep the wall clock.
 * The list-totals prune alone has no time in it (a total is stale by version). Organization data lives
 * in the tenant shards, so each task runs once per shard, with that shard's database, all side by side: a
 * failure on one shard (or of one task) is logged and the rest go on. What lives in the directory (OAuth, integration
 * events) runs once.
 */
export function runCron(env: Env, now: Date): Promise<unknown> {
  return Promise.all([
    onEveryShard(env, "outbox resend", ({ db }) => resendUnsentEvents(env.EVENTS, db, { now })),
    onEveryShard(env, "stalled webhook deliveries", ({ db }) => resendStalledDeliveries(env, db, { now })),
    onEveryShard(env, "failing webhook endpoints", ({ db }) => healEndpoints(env, db, { now })),
    onEveryShard(env, "list totals prune", ({ d1 }) => pruneStaleListTotals(d1)),
    onEveryShard(env, "idempotency keys prune", ({ db }) => pruneIdempotencyKeys(db, { now })),
    onEveryShard(env, "overdue envelopes", ({ db }) => sweepOverdueEnvelopes(env, db, { now })),
    onEveryShard(env, "signing reminders", ({ db }) => sendDueReminders(env, db, { now })),
    onEveryShard(env, "overdue obligations", ({ db }) => noteOverdueObligations(db, { now })),
    onEveryShard(env, "obligation notices", ({ db }) => sendObligationNotices(env, db, { now })),
    onEveryShard(env, "due surveys", ({ db }) => sendDueSurveys(env, db, { now })),
    onEveryShard(env, "survey expiry", ({ db }) => expireSurveys(db, { now })),
    onEveryShard(env, "trash purge", ({ db }) => purgeTrash(env, db, { now })),
    onEveryShard(env, "pending erasures", ({ db }) => resumeErasures(env, db, { now })),
    onEveryShard(env, "due tasks", ({ db }) => announceDueTasks(env, db, now)),
    onEveryShard(env, "pending uploads sweep", ({ db }) => sweepPendingUploads(env, db, { now })),
    onEveryShard(env, "stalled imports", ({ db }) => resumeStalledImports(env, db, { now })),
    onEveryShard(env, "export retention", ({ db }) => expireExportArchives(env, db, now)),
    onEveryShard(env, "lead review retention", ({ db }) => pruneLeadReviews(db, now)),
    onEveryShard(env, "stored leads", ({ db }) => drainLeadInbox(env, db, now)),
    // Lead routing (issue 46): first-to-claim offers timed out to their fallback; leads not contacted in time reassigned.
    onEveryShard(env, "expired lead offers", ({ db }) => routeExpiredOffers(env, db, now)),
    onEveryShard(env, "speed to lead", ({ db }) => reassignSlowLeads(env, db, now)),
    onEveryShard(env, "smart lists through time", ({ db }) => refreshSmartLists(env, db, now)),
    onEveryShard(env, "action plan steps", ({ db }) => runDuePlanSteps(env, db, now)),
    onDirectory("oauth prune", () => pruneOAuth(createDb(env.DB), { now: now.getTime() })),
    // Integration events of directory changes whose shard write did not finish, then connections whose grants ran out.
    onDirectory("directory events relay", () =>
      withDeferred((defer) => relayDueDirectoryEvents({ env, directory: createDb(env.DB), defer }, { now })),
    ),
    onDirectory("expired OAuth connections", () =>
      withDeferred((defer) => disconnectExpired({ env, directory: createDb(env.DB), defer }, { now })),
    ),
  ]);
}

/** A task on the directory, once per pass; a failure is logged and the next pass retries. */
function onDirectory(task: string, run: () => Promise<unknown>): Promise<unknown> {
  return run().catch((err) => createLogger().error("cron task failed; next pass retries", { task, error: loggableError(err) }));
}
