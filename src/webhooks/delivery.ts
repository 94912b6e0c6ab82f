import { and, eq, inArray, ne, sql } from "drizzle-orm";
import type { z } from "zod";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { webhookDeliveries, webhookDeliveryAttempts, webhookSubscriptions } from "../db/schema";
import type { Env } from "../env";
import { readConfig } from "../env";
import { newId } from "../lib/ids";
import { addSeconds, nowIso } from "../lib/time";
import { hasRetryLeft } from "./backoff";
import { disableFailingEndpoint, failedLongEnough, failureRunWrite } from "./healing";
import { masterKey } from "./guards";
import { decryptSecret } from "./secret-box";
import { carries } from "./catalogue";
import { checkOutboundUrl, urlPolicyFor } from "../lib/ssrf";
import type { WebhookDeps } from "./transport";
import { signStandardWebhook, signWebhook } from "./verify";
import { OrganizationMoving } from "../lib/errors";
import { type Logger, loggableError } from "../lib/log";
import { DeliveryMessageSchema } from "../lib/queue-messages";
import { ORGANIZATION_MOVING, WEBHOOK_DELIVERY } from "../lib/retry";
import { type QueueMessage, queueConsumer } from "../events/queue-consumer";
import { organizationsOfIds, routeToShards } from "../shards/tenants";

export const USER_AGENT = "BrokerageEdge-Webhooks/1.0";

type Outcome = { kind: "ack" } | { kind: "retry"; delaySeconds: number };

/** What one attempt came to: the receiver's status, or why nothing was received. Never a secret or a signature. */
interface AttemptResult {
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

/** Where and with what a delivery is signed: the secret, and during a rotation's overlap the one it replaced. */
interface Signer {
  url: string;
  subscriptionId: string;
  secretCiphertext: string;
  previousSecretCiphertext: string | null;
  previousSecretExpiresAt: string | null;
}

/** The secrets that sign now: the current one, then the replaced one while its overlap lasts (service.ts rotation). */
async function signingSecrets(env: Env, target: Signer, now: Date): Promise<string[]> {
  const key = masterKey(env);
  const current = await decryptSecret(key, target.subscriptionId, target.secretCiphertext);
  const overlapping =
    target.previousSecretCiphertext !== null && target.previousSecretExpiresAt !== null && target.previousSecretExpiresAt > nowIso(now);
  return overlapping ? [current, await decryptSecret(key, target.subscriptionId, target.previousSecretCiphertext!)] : [current];
}

async function send(
  env: Env,
  deps: WebhookDeps,
  target: Signer,
  delivery: { id: string; eventId: string; event: string; body: string },
): Promise<AttemptResult> {
  const started = Date.now();
  const refusal = await checkOutboundUrl(target.url, urlPolicyFor(readConfig(env).ENVIRONMENT), deps.resolver).catch((err) => ({
    message: `DNS lookup failed: ${String(err)}`,
  }));
  if (refusal) return { statusCode: null, error: `refused before sending: ${refusal.message}`, durationMs: Date.now() - started };
  const [secret, ...previous] = await signingSecrets(env, target, new Date(started));
  // A fresh timestamp and signature on every attempt (receivers reject timestamps older than 300 s); same body.
  const timestamp = Math.floor(Date.now() / 1000);
  const headers = {
    "Content-Type": "application/json",
    "User-Agent": USER_AGENT,
    "X-Service-Event": delivery.event,
    "X-Service-Delivery": delivery.id,
    "X-Service-Timestamp": String(timestamp),
    // The spec's single signature, with the current secret only: during an overlap a receiver tries both of its secrets.
    "X-Service-Signature": await signWebhook(secret!, timestamp, delivery.body),
    // Standard Webhooks (verify.ts): the event id identifies the message across retries and replays. During a
    // rotation's overlap one signature per secret, space-separated, so a receiver holding either verifies.
    "webhook-id": delivery.eventId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": (
      await Promise.all([secret!, ...previous].map((s) => signStandardWebhook(s, delivery.eventId, timestamp, delivery.body)))
    ).join(" "),
  };
  const sentAt = Date.now();
  try {
    const { status } = await deps.transport.send({ url: target.url, headers, body: delivery.body });
    return {
      statusCode: status,
      error: status >= 200 && status < 300 ? null : `receiver answered ${status}`,
      durationMs: Date.now() - sentAt,
    };
  } catch (err) {
    const timedOut = err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError");
    return {
      statusCode: null,
      error: timedOut ? "no answer within 30 s" : `network error: ${String(err)}`,
      durationMs: Date.now() - sentAt,
    };
  }
}

type Target = Omit<Signer, "subscriptionId"> & {
  delivery: typeof webhookDeliveries.$inferSelect;
  enabled: boolean;
  events: string[];
  failingSince: string | null;
};

/** The deliveries of a batch with their subscriptions, in one D1 round trip. */
function loadTargets(db: Db, deliveryIds: string[]): Promise<Target[]> {
  const s = webhookSubscriptions;
  return db
    .select({
      delivery: webhookDeliveries,
      url: s.url,
      enabled: s.enabled,
      events: s.events,
      failingSince: s.failingSince,
      secretCiphertext: s.secretCiphertext,
      previousSecretCiphertext: s.previousSecretCiphertext,
      previousSecretExpiresAt: s.previousSecretExpiresAt,
    })
    .from(webhookDeliveries)
    .innerJoin(webhookSubscriptions, eq(webhookSubscriptions.id, webhookDeliveries.subscriptionId))
    .where(inArray(webhookDeliveries.id, deliveryIds));
}

/**
 * One attempt of one delivery (spec: Events, Delivery): 2xx acknowledges; 410 turns the subscription off; anything
 * else is retried on the backoff schedule until the queue hands the message to the dead-letter queue.
 * `queueAttempt` is the message's `attempts`; the logged attempt number counts across replays too. Returns the
 * writes that record it, so a batch's log goes to D1 in one round trip, and whether the attempt was a failure that
 * ends 5 days of them (`overdue`: the endpoint is to be turned off, healing.ts).
 */
async function attemptDelivery(
  env: Env,
  db: Db,
  deps: WebhookDeps,
  target: Target | undefined,
  message: { attempts: number; chain: number },
): Promise<{ outcome: Outcome; writes: BatchItem<"sqlite">[]; overdue?: { organizationId: string; subscriptionId: string } }> {
  const queueAttempt = message.attempts;
  // Deleted with its subscription, already acknowledged by an earlier copy of this message, or of a retry chain a
  // recover has replaced (recover.ts): nothing to do.
  if (!target || target.delivery.status === "delivered" || target.delivery.chain !== message.chain)
    return { outcome: { kind: "ack" }, writes: [] };
  const { delivery } = target;
  const now = new Date();
  // The URL and the events are read together: a delivery goes to the URL only while the subscription still carries
  // its event (catalogue.ts `carries`), so a retry in flight cannot be redirected by narrowing the events first.
  const refusal = !target.enabled
    ? "subscription is disabled"
    : !carries(target.events, delivery.event)
      ? `the subscription no longer carries ${delivery.event}`
      : null;
  if (refusal) {
    const write = db
      .update(webhookDeliveries)
      .set({ status: "failed", lastError: refusal, nextAttemptAt: null, updatedAt: nowIso(now) })
      .where(and(eq(webhookDeliveries.id, delivery.id), eq(webhookDeliveries.chain, message.chain)));
    return { outcome: { kind: "ack" }, writes: [write] };
  }

  const result = await send(env, deps, { ...target, subscriptionId: delivery.subscriptionId }, delivery);
  const delivered = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
  const gone = result.statusCode === 410;
  const delaySeconds = WEBHOOK_DELIVERY.delaySeconds(queueAttempt);
  const retrying = !delivered && !gone;
  const nextAttemptAt = retrying && hasRetryLeft(queueAttempt) ? nowIso(addSeconds(now, delaySeconds)) : null;

  const writes: BatchItem<"sqlite">[] = [
    // Only while the delivery exists: one deleted with its subscription during the attempt leaves no orphan log row.
    // Columns in table order: id, organization_id, delivery_id, attempt, status_code, duration_ms, error, next_attempt_at, attempted_at.
    db.insert(webhookDeliveryAttempts).select(
      sql`SELECT ${newId()}, ${delivery.organizationId}, ${delivery.id}, ${delivery.attemptCount + 1}, ${result.statusCode}, ${result.durationMs}, ${result.error}, ${nextAttemptAt}, ${nowIso(now)}
            WHERE EXISTS (SELECT 1 FROM ${webhookDeliveries} WHERE ${eq(webhookDeliveries.id, delivery.id)})`,
    ),
    db
      .update(webhookDeliveries)
      .set({
        status: delivered ? "delivered" : gone ? "failed" : "retrying",
        attemptCount: sql`${webhookDeliveries.attemptCount} + 1`,
        lastStatusCode: result.statusCode,
        lastError: result.error,
        nextAttemptAt,
        deliveredAt: delivered ? nowIso(now) : delivery.deliveredAt,
        updatedAt: nowIso(now),
      })
      // Not over a chain a recover started meanwhile: that one's own attempt decides the state.
      .where(and(eq(webhookDeliveries.id, delivery.id), eq(webhookDeliveries.chain, message.chain))),
  ];
  const run = gone ? null : failureRunWrite(db, delivery.subscriptionId, target.failingSince, delivered, nowIso(now));
  if (run) writes.push(run);
  // Spec gives no rule for 410; it is the receiver saying the endpoint is gone for good, so stop sending.
  if (gone) {
    // A write of the subscription like any other: its version moves, so a PATCH computed from the row before cannot
    // switch it back on unawares (db/write.ts).
    writes.push(
      db
        .update(webhookSubscriptions)
        .set({
          enabled: false,
          disabledReason: "receiver answered 410 Gone",
          disabledAt: nowIso(now),
          updatedAt: nowIso(now),
          version: sql`${webhookSubscriptions.version} + 1`,
        })
        .where(eq(webhookSubscriptions.id, delivery.subscriptionId)),
    );
  }
  // The last retry is still a retry: the queue then moves the message to the dead-letter queue (max_retries).
  const overdue =
    retrying && failedLongEnough(target.failingSince, now)
      ? { organizationId: delivery.organizationId, subscriptionId: delivery.subscriptionId }
      : undefined;
  return { outcome: retrying ? { kind: "retry", delaySeconds } : { kind: "ack" }, writes, overdue };
}

type DeliveryBody = z.infer<typeof DeliveryMessageSchema>;

interface Addressed {
  message: QueueMessage<DeliveryBody>;
  deliveryId: string;
  organizationId: string | null;
  chain: number;
}

/**
 * The deliveries a batch names, each with its organization. A message queued before messages named one is looked
 * for on every shard (one query per shard for the batch).
 */
async function addressBatch(env: Env, messages: QueueMessage<DeliveryBody>[]): Promise<Addressed[]> {
  const items = messages.map((message) => ({
    message,
    deliveryId: message.body.deliveryId,
    organizationId: message.body.organizationId ?? null,
    chain: message.body.chain ?? 0,
  }));
  const lost = items.filter((a) => a.organizationId === null);
  const orgOf = await organizationsOfIds(
    env,
    webhookDeliveries,
    webhookDeliveries,
    lost.map((a) => a.deliveryId),
  );
  for (const a of lost) a.organizationId = orgOf.get(a.deliveryId) ?? null;
  return items;
}

/**
 * Routes a batch to the shards of its organizations (one directory read per organization): a message of an
 * organization the directory no longer knows is dropped; one of an organization that is moving waits for the move (a
 * retry, not a dead letter).
 */
async function routeBatch(env: Env, messages: QueueMessage<DeliveryBody>[], log: Logger) {
  const items = await addressBatch(env, messages);
  const { byShard, fenced, unknown } = await routeToShards(env, items, (a) => a.organizationId);
  for (const { message, deliveryId, organizationId } of unknown) {
    log.warn("webhook delivery of no known organization; dropped", { messageId: message.id, deliveryId, organizationId });
    message.ack();
  }
  for (const { message } of fenced) message.retry(ORGANIZATION_MOVING.delaySeconds(message.attempts));
  return byShard;
}

/**
 * One shard's deliveries of a batch: two D1 round trips (load, log), the POSTs side by side; then, rarely, the
 * endpoints whose failures have run 5 days are turned off (healing.ts; the cron finds any this misses).
 */
async function deliverOnShard(env: Env, db: Db, deps: WebhookDeps, work: Addressed[], log: Logger): Promise<void> {
  const targets = new Map(
    (
      await loadTargets(
        db,
        work.map((w) => w.deliveryId),
      )
    ).map((t) => [t.delivery.id, t]),
  );
  const results = await Promise.all(
    work.map(async ({ message, deliveryId, chain }) => {
      try {
        return { message, ...(await attemptDelivery(env, db, deps, targets.get(deliveryId), { attempts: message.attempts, chain })) };
      } catch (err) {
        log.error("webhook delivery failed", { deliveryId, error: loggableError(err) });
        return {
          message,
          outcome: { kind: "retry", delaySeconds: WEBHOOK_DELIVERY.delaySeconds(message.attempts) } as Outcome,
          writes: [],
        };
      }
    }),
  );
  const writes = results.flatMap((r) => r.writes);
  if (writes.length > 0) await db.batch(writes as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  const overdue = new Map(results.flatMap((r) => (r.overdue ? [[r.overdue.subscriptionId, r.overdue.organizationId] as const] : [])));
  for (const [subscriptionId, organizationId] of overdue) {
    await disableFailingEndpoint(env, db, organizationId, subscriptionId).catch((err) =>
      log.error("failing webhook endpoint not disabled; the cron retries", { subscriptionId, error: loggableError(err) }),
    );
  }
  for (const { message, outcome } of results) {
    if (outcome.kind === "ack") message.ack();
    else message.retry(outcome.delaySeconds);
  }
}

/**
 * The `webhook-deliveries` queue handler: each shard's deliveries are handled side by side, and each message is
 * still acked or retried on its own; one failing message, or one shard, never fails the others. A shard that refuses
 * the log (an organization fenced for its move meanwhile) retries its messages: the receiver may see a delivery
 * twice, which it handles by webhook-id anyway.
 */
export function createDeliveryConsumer(deps: WebhookDeps) {
  return queueConsumer({ schema: DeliveryMessageSchema, retry: WEBHOOK_DELIVERY }, async (messages, env, log) => {
    const byShard = await routeBatch(env, messages, log);
    await Promise.all(
      byShard.map(({ shard, items }) =>
        deliverOnShard(env, shard.db, deps, items, log).catch((err) => {
          const moving = OrganizationMoving.raisedBy(err);
          log[moving ? "warn" : "error"]("webhook deliveries not recorded on their shard; retried", {
            shard: shard.shard,
            error: loggableError(err),
          });
          for (const { message } of items) message.retry(moving ? ORGANIZATION_MOVING.delaySeconds(message.attempts) : undefined);
        }),
      ),
    );
  });
}

/** The `webhook-deliveries-dlq` handler: the delivery is marked dead and kept, so it can be replayed. */
export const markDeadDeliveries = queueConsumer({ schema: DeliveryMessageSchema, retry: WEBHOOK_DELIVERY }, async (messages, env, log) => {
  const byShard = await routeBatch(env, messages, log);
  await Promise.all(
    byShard.map(async ({ shard: { db }, items }) => {
      for (const { message, deliveryId, chain } of items) {
        try {
          // The end of this message's chain only: one a recover has replaced meanwhile leaves the new chain running.
          await db
            .update(webhookDeliveries)
            .set({ status: "dead", nextAttemptAt: null, updatedAt: nowIso() })
            .where(
              and(eq(webhookDeliveries.id, deliveryId), ne(webhookDeliveries.status, "delivered"), eq(webhookDeliveries.chain, chain)),
            );
          message.ack();
        } catch (err) {
          const moving = OrganizationMoving.raisedBy(err);
          log[moving ? "warn" : "error"]("dead delivery not marked; retried", { deliveryId, error: loggableError(err) });
          message.retry(moving ? ORGANIZATION_MOVING.delaySeconds(message.attempts) : undefined);
        }
      }
    }),
  );
});
