import { and, eq, isNotNull, isNull, lte } from "drizzle-orm";
import type { Db } from "../db/client";
import { organizations, users, webhookSubscriptions } from "../db/schema";
import { atVersion, expectRow, type Statement, withRetries } from "../db/write";
import type { Env } from "../env";
import { commit } from "../events/commit";
import { newEvent } from "../events/outbox";
import { withDeferred } from "../lib/deferred";
import { createLogger, loggableError } from "../lib/log";
import { addSeconds, nowIso } from "../lib/time";
import { mailerFor } from "../mail/mailer";
import { systemContext } from "../shards/tenants";
import { ENDPOINT_DISABLED } from "./catalogue";
import { DISABLE_AFTER_DAYS } from "./limits";
import { toWebhook, WEBHOOKS } from "./service";

/**
 * Endpoints that heal (what Svix and Stripe do; docs/decisions/0005-endpoints-that-heal.md): an endpoint every delivery
 * of which has failed for 5 days is turned off, once, with `webhook.endpoint_disabled` to the organization's other
 * endpoints in the same batch; its owners are mailed after that commit, and the cron mails them when that failed.
 */

const DISABLE_AFTER_MS = DISABLE_AFTER_DAYS * 86_400_000;
export const AUTO_DISABLED_REASON = `every delivery failed for ${DISABLE_AFTER_DAYS} days`;
/** The mail after the commit has this long before the cron takes it over (it would otherwise race it). */
const NOTICE_GRACE_SECONDS = 300;
/** A notice the cron has taken waits this long before another pass sends it again (the send failed). */
const NOTICE_RETRY_SECONDS = 600;

type Row = typeof webhookSubscriptions.$inferSelect;

/**
 * The write that keeps an endpoint's failure run after one attempt (in the delivery log's batch), or null when the
 * run stays as it was read: a success ends it, a failure starts it unless one is under way. Conditional, so a
 * concurrent attempt that changed it first is not undone; `version` does not move (bookkeeping, not an edit).
 */
export function failureRunWrite(
  db: Db,
  subscriptionId: string,
  failingSince: string | null,
  succeeded: boolean,
  at: string,
): Statement | null {
  const s = webhookSubscriptions;
  if (succeeded)
    return failingSince === null
      ? null
      : db
          .update(s)
          .set({ failingSince: null })
          .where(and(eq(s.id, subscriptionId), isNotNull(s.failingSince)));
  return failingSince !== null
    ? null
    : db
        .update(s)
        .set({ failingSince: at })
        .where(and(eq(s.id, subscriptionId), isNull(s.failingSince)));
}

export const failedLongEnough = (failingSince: string | null, now: Date): boolean =>
  failingSince !== null && now.getTime() - Date.parse(failingSince) >= DISABLE_AFTER_MS;

/**
 * Turns off an endpoint whose failure run has lasted 5 days, if it still has: the change and its
 * `webhook.endpoint_disabled` commit together, guarded on the row as read (its version and its failure run), so of
 * failures and cron passes finding it at once exactly one turns it off and emits; the others re-read it off. Then the
 * owners are mailed. Answers whether this call turned it off. `now`: the cron pass's time (DESIGN.md contract 12), else the
 * failure's.
 */
export function disableFailingEndpoint(
  env: Env,
  db: Db,
  organizationId: string,
  subscriptionId: string,
  now: Date = new Date(),
): Promise<boolean> {
  return withDeferred(async (defer) => {
    const ctx = systemContext(env, db, organizationId, `heal:${subscriptionId}`, defer);
    const s = webhookSubscriptions;
    const disabled = await withRetries(async () => {
      const row = await db
        .select()
        .from(s)
        .where(and(eq(s.organizationId, organizationId), eq(s.id, subscriptionId)))
        .get();
      if (!row?.enabled || !failedLongEnough(row.failingSince, now)) return null;
      const at = nowIso(now);
      const changes = {
        enabled: false,
        disabledReason: AUTO_DISABLED_REASON,
        disabledAt: at,
        ownersNoticeDueAt: nowIso(addSeconds(now, NOTICE_GRACE_SECONDS)),
        updatedAt: at,
        version: row.version + 1,
      };
      const next: Row = { ...row, ...changes };
      const event = newEvent(ctx, ENDPOINT_DISABLED, {
        object: toWebhook(next),
        previousAttributes: { enabled: true, disabledReason: row.disabledReason, disabledAt: row.disabledAt },
        changes: ["enabled", "disabledReason", "disabledAt"],
      });
      await commit(
        ctx,
        [
          expectRow(db, s, and(atVersion(WEBHOOKS, organizationId, subscriptionId, row.version), eq(s.failingSince, row.failingSince!))),
          db
            .update(s)
            .set(changes)
            .where(and(eq(s.organizationId, organizationId), eq(s.id, subscriptionId))),
        ],
        [event],
      );
      return next;
    });
    if (disabled) await noticeOwners(env, db, disabled, disabled.ownersNoticeDueAt!);
    return disabled !== null;
  });
}

/**
 * Mails the organization's owners that `endpoint` was turned off, then clears its notice, unless another pass has
 * taken it since (`dueAt` is the mark this pass holds). A failure is logged and left to the cron: the notice stays due.
 */
async function noticeOwners(env: Env, db: Db, endpoint: Row, dueAt: string): Promise<void> {
  try {
    const [owners, [org]] = await db.batch([
      db
        .select({ email: users.email, name: users.name })
        .from(users)
        .where(and(eq(users.organizationId, endpoint.organizationId), eq(users.role, "owner"))),
      db.select({ name: organizations.name }).from(organizations).where(eq(organizations.id, endpoint.organizationId)),
    ]);
    const mailer = mailerFor(env, db);
    for (const owner of owners) {
      await mailer.send({
        organizationId: endpoint.organizationId,
        to: owner.email,
        subject: `A webhook endpoint of ${org?.name ?? "your organization"} was disabled`,
        text: [
          `${`Hello ${owner.name ?? ""}`.trimEnd()},`,
          "",
          `Every delivery to the webhook endpoint ${endpoint.url}${endpoint.description ? ` (${endpoint.description})` : ""} has failed since ${endpoint.failingSince}, so it was disabled at ${endpoint.disabledAt}. Nothing more is sent to it.`,
          "",
          `Once the receiver works again, turn the endpoint back on (PATCH /v1/webhooks/${endpoint.id} with {"enabled": true}) and re-send what it missed (POST /v1/webhooks/${endpoint.id}/recover with "since").`,
        ].join("\n"),
      });
    }
    const s = webhookSubscriptions;
    await db
      .update(s)
      .set({ ownersNoticeDueAt: null })
      .where(and(eq(s.id, endpoint.id), eq(s.ownersNoticeDueAt, dueAt)));
  } catch (err) {
    createLogger().error("disabled endpoint's owners not mailed; the cron retries", {
      subscriptionId: endpoint.id,
      organizationId: endpoint.organizationId,
      error: loggableError(err),
    });
  }
}

/**
 * Cron pass, on one shard: endpoints whose failure run has lasted 5 days without a failure landing since (nothing
 * left to send them) are turned off, and notices whose mail failed are sent again, each taken first by moving its
 * due time on, so two passes never send the same one. All of it judged at the pass's `now` (DESIGN.md contract 12).
 */
export async function healEndpoints(env: Env, db: Db, { now = new Date(), max = 100 } = {}): Promise<number> {
  const s = webhookSubscriptions;
  const [failing, due] = await db.batch([
    db
      .select({ id: s.id, organizationId: s.organizationId })
      .from(s)
      .where(and(lte(s.failingSince, new Date(now.getTime() - DISABLE_AFTER_MS).toISOString()), eq(s.enabled, true)))
      .limit(max),
    db
      .select()
      .from(s)
      .where(lte(s.ownersNoticeDueAt, nowIso(now)))
      .limit(max),
  ]);
  let done = 0;
  for (const endpoint of failing) {
    try {
      if (await disableFailingEndpoint(env, db, endpoint.organizationId, endpoint.id, now)) done++;
    } catch (err) {
      createLogger().error("failing webhook endpoint not disabled; next pass retries", {
        subscriptionId: endpoint.id,
        error: loggableError(err),
      });
    }
  }
  for (const endpoint of due) {
    const mark = nowIso(addSeconds(now, NOTICE_RETRY_SECONDS));
    const taken = await db
      .update(s)
      .set({ ownersNoticeDueAt: mark })
      .where(and(eq(s.id, endpoint.id), eq(s.ownersNoticeDueAt, endpoint.ownersNoticeDueAt!)))
      .returning({ id: s.id })
      .catch(
        (err) => (
          createLogger().error("disabled endpoint's notice not taken; next pass retries", {
            subscriptionId: endpoint.id,
            error: loggableError(err),
          }),
          []
        ),
      );
    if (taken.length === 0) continue;
    await noticeOwners(env, db, endpoint, mark);
    done++;
  }
  return done;
}
