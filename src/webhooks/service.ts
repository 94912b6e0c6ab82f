import { and, count, desc, eq, inArray } from "drizzle-orm";
import { webhookDeliveries, webhookDeliveryAttempts, webhookSubscriptions } from "../db/schema";
import { expectVersion, expectVersionMatch, versioned, type VersionedTable, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { NotFound } from "../lib/errors";
import { newId } from "../lib/ids";
import { decodeNewestFirstCursor as decodeCursor, olderThan, paginate } from "../crm/pagination";
import { addSeconds, nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { assertDeliverableUrl, masterKey } from "./guards";
import type { CreateWebhook, UpdateWebhook, Webhook } from "./schemas";
import { newWebhookSecret, encryptSecret } from "./secret-box";
import type { DnsResolver } from "../lib/dns";
import type { DeliveryReach } from "./catalogue";
export { webhooksErasable } from "./erasure";

type Row = typeof webhookSubscriptions.$inferSelect;

export const WEBHOOKS: VersionedTable = {
  table: webhookSubscriptions,
  id: webhookSubscriptions.id,
  organizationId: webhookSubscriptions.organizationId,
  version: webhookSubscriptions.version,
};

const byId = (organizationId: string, id: string) =>
  and(eq(webhookSubscriptions.organizationId, organizationId), eq(webhookSubscriptions.id, id));

/** The subscription as the API shows it: everything but the secrets, which are never shown after create or rotation. */
export function toWebhook(row: Row): Webhook {
  const {
    id,
    url,
    events,
    filters,
    enabled,
    description,
    disabledReason,
    disabledAt,
    failingSince,
    previousSecretExpiresAt,
    createdAt,
    updatedAt,
  } = row;
  return {
    id,
    url,
    events,
    filters,
    enabled,
    description,
    disabledReason,
    disabledAt,
    failingSince,
    previousSecretExpiresAt,
    createdAt,
    updatedAt,
  };
}

/** The subscription as the API shows it, marked with its version for the ETag. */
export const shownWebhook = (row: Row): Webhook => versioned(toWebhook(row), row.version);

/** The subscription row of this organization, or 404 (another organization's id answers the same). */
export async function findWebhook(ctx: Pick<ServiceContext, "db" | "organizationId">, id: string): Promise<Row> {
  const row = await ctx.db.select().from(webhookSubscriptions).where(byId(ctx.organizationId, id)).get();
  if (!row) throw new NotFound("Webhook");
  return row;
}

/**
 * POST /v1/webhooks. The secret (the caller's, or a generated one) is in this answer and nowhere after it. `reach`
 * refuses events whose objects the caller may not read (catalogue.ts `DeliveryReach`), as on every write below.
 */
export async function createWebhook(
  ctx: ServiceContext,
  input: CreateWebhook,
  resolver: DnsResolver,
  reach: DeliveryReach,
): Promise<Webhook & { secret: string }> {
  reach(input.events);
  const key = masterKey(ctx.env);
  await assertDeliverableUrl(ctx.env, input.url, resolver);
  const id = newId();
  const now = nowIso();
  const secret = input.secret ?? newWebhookSecret();
  const row: Row = {
    id,
    organizationId: ctx.organizationId,
    url: input.url,
    events: input.events,
    filters: input.filters,
    enabled: input.enabled,
    description: input.description,
    secretCiphertext: await encryptSecret(key, id, secret),
    disabledReason: null,
    createdAt: now,
    updatedAt: now,
    version: 1,
    disabledAt: null,
    failingSince: null,
    ownersNoticeDueAt: null,
    previousSecretCiphertext: null,
    previousSecretExpiresAt: null,
  };
  await ctx.db.insert(webhookSubscriptions).values(row).run();
  return versioned({ ...toWebhook(row), secret }, row.version);
}

/** GET /v1/webhooks: newest first, keyset on (createdAt, id). */
export async function listWebhooks(ctx: ServiceContext, { limit, cursor }: { limit: number; cursor?: string }) {
  const after = decodeCursor(cursor);
  const mine = eq(webhookSubscriptions.organizationId, ctx.organizationId);
  const page = after ? and(mine, olderThan(webhookSubscriptions.createdAt, webhookSubscriptions.id, after)) : mine;
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(webhookSubscriptions)
      .where(page)
      .orderBy(desc(webhookSubscriptions.createdAt), desc(webhookSubscriptions.id))
      .limit(limit + 1),
    ctx.db.select({ n: count() }).from(webhookSubscriptions).where(mine),
  ]);
  const { page: items, pagination } = paginate(rows, limit, total?.n ?? 0, (r) => ({ at: r.createdAt, id: r.id }));
  return { data: items.map(toWebhook), pagination };
}

/**
 * PATCH /v1/webhooks/{id}. A new URL passes the same checks as on create; turning it on clears a shutdown by the
 * service and, when it was off, starts its failure run afresh (healing.ts). Only the fields sent change, applied to
 * the subscription as it is when the write lands (compare-and-set on its version), so a rotated secret is the one
 * deliveries sign with however many other changes race it. A secret set here switches at once: no overlap, and any
 * overlap of an earlier rotation ends. The delivery consumer's bookkeeping (`failingSince`) is never written back.
 * Whatever the fields sent, the caller must reach every event the subscription holds after the change, checked on the
 * row each attempt writes (a URL alone redirects what the owner subscribed to).
 */
export async function updateWebhook(
  ctx: ServiceContext,
  id: string,
  input: UpdateWebhook,
  resolver: DnsResolver,
  reach: DeliveryReach,
): Promise<Webhook & { secret?: string }> {
  const first = await findWebhook(ctx, id);
  reach(input.events ?? first.events);
  if (input.url !== undefined && input.url !== first.url) await assertDeliverableUrl(ctx.env, input.url, resolver);
  const secret = input.rotateSecret ? newWebhookSecret() : input.secret;
  // Encrypted once: every attempt below stores this secret, the one this answer returns.
  const secretCiphertext = secret === undefined ? undefined : await encryptSecret(masterKey(ctx.env), id, secret);
  return withRetries(async (n) => {
    const row = n === 1 ? first : await findWebhook(ctx, id);
    expectVersionMatch(ctx, row.version);
    const changes = {
      url: input.url ?? row.url,
      events: input.events ?? row.events,
      filters: input.filters ?? row.filters,
      enabled: input.enabled ?? row.enabled,
      description: input.description ?? row.description,
      ...(input.enabled === true ? { disabledReason: null, disabledAt: null } : {}),
      ...(input.enabled === true && !row.enabled ? { failingSince: null } : {}),
      ...(secretCiphertext === undefined ? {} : { secretCiphertext, previousSecretCiphertext: null, previousSecretExpiresAt: null }),
      updatedAt: nowIso(),
      version: row.version + 1,
    } satisfies Partial<Row>;
    reach(changes.events);
    const next: Row = { ...row, ...changes };
    await commit(ctx, [
      expectVersion(ctx.db, WEBHOOKS, ctx.organizationId, row),
      ctx.db.update(webhookSubscriptions).set(changes).where(byId(ctx.organizationId, id)),
    ]);
    return versioned(secret === undefined ? toWebhook(next) : { ...toWebhook(next), secret }, next.version);
  });
}

/**
 * POST /v1/webhooks/{id}/rotate-secret: a new secret, in this answer only, signing from now on; the one it replaced
 * keeps signing beside it (a second `webhook-signature`) for `overlapSeconds`. Of rotations racing each other the
 * last to land wins, and its overlap holds the secret it replaced as it landed (re-read on every attempt): always
 * one an answer has handed out, never one lost in the race. An earlier overlap still open ends. The secret verifies
 * (and so lets one accept) deliveries of every event of the subscription: the caller must reach them all.
 */
export async function rotateWebhookSecret(
  ctx: ServiceContext,
  id: string,
  { overlapSeconds }: { overlapSeconds: number },
  reach: DeliveryReach,
): Promise<Webhook & { secret: string }> {
  const key = masterKey(ctx.env);
  reach((await findWebhook(ctx, id)).events);
  const secret = newWebhookSecret();
  const secretCiphertext = await encryptSecret(key, id, secret);
  return withRetries(async () => {
    const row = await findWebhook(ctx, id);
    reach(row.events);
    expectVersionMatch(ctx, row.version);
    const now = new Date();
    const overlap = overlapSeconds > 0;
    const changes = {
      secretCiphertext,
      previousSecretCiphertext: overlap ? row.secretCiphertext : null,
      previousSecretExpiresAt: overlap ? nowIso(addSeconds(now, overlapSeconds)) : null,
      updatedAt: nowIso(now),
      version: row.version + 1,
    } satisfies Partial<Row>;
    await commit(ctx, [
      expectVersion(ctx.db, WEBHOOKS, ctx.organizationId, row),
      ctx.db.update(webhookSubscriptions).set(changes).where(byId(ctx.organizationId, id)),
    ]);
    const next: Row = { ...row, ...changes };
    return versioned({ ...toWebhook(next), secret }, next.version);
  });
}

/** DELETE /v1/webhooks/{id}: the subscription with its deliveries and their log, in one atomic batch. */
export async function deleteWebhook(ctx: ServiceContext, id: string): Promise<void> {
  const { db, organizationId } = ctx;
  await withRetries(async () => {
    const row = await findWebhook(ctx, id);
    expectVersionMatch(ctx, row.version);
    const deliveries = db
      .select({ id: webhookDeliveries.id })
      .from(webhookDeliveries)
      .where(and(eq(webhookDeliveries.organizationId, organizationId), eq(webhookDeliveries.subscriptionId, id)));
    await commit(ctx, [
      expectVersion(db, WEBHOOKS, organizationId, row),
      db
        .delete(webhookDeliveryAttempts)
        .where(and(eq(webhookDeliveryAttempts.organizationId, organizationId), inArray(webhookDeliveryAttempts.deliveryId, deliveries))),
      db
        .delete(webhookDeliveries)
        .where(and(eq(webhookDeliveries.organizationId, organizationId), eq(webhookDeliveries.subscriptionId, id))),
      db.delete(webhookSubscriptions).where(byId(organizationId, id)),
    ]);
  });
}
