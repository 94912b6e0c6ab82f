import { pruneStaleListTotals } from "./crm/list-totals";
import { createDb } from "./db/client";
import { noteOverdueObligations } from "./documents/obligations";
import type { Env } from "./env";
import { resendUnsentEvents } from "./events/outbox";
import { pruneOAuth } from "./oauth/prune";
import { pruneIdempotencyKeys } from "./platform/idempotency";
import { expireSurveys, sendDueSurveys } from "./surveys/scheduling";
import { sweepOverdueEnvelopes } from "./signatures/expiry";
import { sendDueReminders } from "./signatures/reminders";
import { purgeTrash } from "./trash/service";
import { resendStalledDeliveries } from "./webhooks/fanout";

/** One cron pass (loaded by the Worker's scheduled handler at its first pass, not at startup). */
export function runCron(env: Env): Promise<unknown> {
  const db = createDb(env.DB);
  return Promise.all([
    resendUnsentEvents(env, db),
    resendStalledDeliveries(env, db),
    pruneStaleListTotals(env.DB),
    pruneIdempotencyKeys(db),
    sweepOverdueEnvelopes(env, db),
    sendDueReminders(env, db),
    noteOverdueObligations(db),
    sendDueSurveys(env, db),
    expireSurveys(db),
    pruneOAuth(db),
    purgeTrash(env, db),
  ]);
}
