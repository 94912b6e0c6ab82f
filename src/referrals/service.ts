import { expectReferences, references } from "../db/references";
import { and, desc, eq, gt, isNull, ne } from "drizzle-orm";
import type { Db } from "../db/client";
import { agentProfiles, referralKeys, referrals } from "../db/schema";
import { expectNoRow, expectRow, withRetries } from "../db/write";
import { commit } from "../events/commit";
import type { Env } from "../env";
import type { EventConsumer } from "../events/consumers";
import type { DomainEvent } from "../events/event";
import { newEvent } from "../events/outbox";
import { resourceEvent } from "../events/resource-event";
import { contactByEmail } from "../contacts/service";
import { decodeNewestFirstCursor, newestFirstPage, olderThan } from "../crm/pagination";
import { withDeferred } from "../lib/deferred";
import { newId } from "../lib/ids";
import { sha256Hex } from "../lib/crypto";
import { addSeconds, nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { systemContext } from "../shards/tenants";
import { checkReferences } from "../profiles/service";
import { referredKey } from "./erasure";
import type { PublicReferral, Referral, ReferralCreate } from "./schemas";

export { referralsErasable, referredIs } from "./erasure";

type Row = typeof referrals.$inferSelect;
export const toReferral = (r: Row): Referral => {
  const { organizationId: _o, version: _v, referredEmailKey: _k, ...rest } = r;
  return rest;
};

const emailKeyOf = (contact: string | undefined | null) => (contact?.includes("@") ? contact.toLowerCase() : null);

function referralRow(
  organizationId: string,
  input: Omit<Row, "id" | "organizationId" | "status" | "referredEmailKey" | "leadContactId" | "createdAt" | "updatedAt" | "version">,
): Row {
  const at = nowIso();
  return {
    ...input,
    id: newId(),
    organizationId,
    status: "RECEIVED",
    referredEmailKey: emailKeyOf(input.referredContact),
    leadContactId: null,
    createdAt: at,
    updatedAt: at,
    version: 1,
  };
}

/** REFERRAL_RECEIVED for the lead workflow, and the catalogue's referral.received carrying the referral. */
const received = (ctx: Pick<ServiceContext, "organizationId" | "actor">, r: Row) => [
  newEvent(ctx, "REFERRAL_RECEIVED", {
    referralId: r.id,
    agentUserId: r.agentUserId,
    channel: r.channel,
    referrerPersonId: r.referrerPersonId,
  }),
  resourceEvent(ctx, "referral.received", toReferral(r)),
];

/** POST /api/reputation/referrals: RECEIVED; emits REFERRAL_RECEIVED and referral.received in the same batch. */
export async function createReferral(ctx: ServiceContext, input: ReferralCreate): Promise<Referral> {
  const refs = references({ path: ["referrerPersonId"], target: "contact", id: input.referrerPersonId });
  const row = referralRow(ctx.organizationId, {
    agentUserId: input.agentUserId,
    referrerPersonId: input.referrerPersonId ?? null,
    channel: input.channel,
    referredName: input.referredName,
    referredContact: input.referredContact ?? null,
    notes: input.notes || null,
    rewardType: input.rewardType ?? null,
    rewardStatus: input.rewardStatus ?? (input.rewardType ? "PENDING" : null),
    rewardValue: input.rewardValue ?? null,
  });
  return withRetries(async () => {
    await checkReferences(ctx, input.agentUserId, refs);
    await commit(ctx, [...expectReferences(ctx, refs), ctx.db.insert(referrals).values(row)], received(ctx, row));
    return toReferral(row);
  });
}

/** GET /api/reputation/referrals: newest first, keyset-paginated. */
export async function listReferrals(ctx: ServiceContext, q: { limit: number; cursor?: string; status?: string; agentUserId?: string }) {
  const after = decodeNewestFirstCursor(q.cursor);
  const rows = await ctx.db
    .select()
    .from(referrals)
    .where(
      and(
        eq(referrals.organizationId, ctx.organizationId),
        q.status ? eq(referrals.status, q.status as Row["status"]) : undefined,
        q.agentUserId ? eq(referrals.agentUserId, q.agentUserId) : undefined,
        after ? olderThan(referrals.createdAt, referrals.id, after) : undefined,
      ),
    )
    .orderBy(desc(referrals.createdAt), desc(referrals.id))
    .limit(q.limit + 1);
  const { page, pagination } = newestFirstPage(rows, q.limit, (r) => ({ at: r.createdAt, id: r.id }));
  return { referrals: page.map(toReferral), pagination };
}

/** The PUBLISHED profile of `organizationId` at `slug`: its agent, or null (unknown, draft and deleted alike). */
export async function publishedAgent(db: Db, organizationId: string, slug: string) {
  const row = await db
    .select({ userId: agentProfiles.userId })
    .from(agentProfiles)
    .where(and(eq(agentProfiles.organizationId, organizationId), eq(agentProfiles.slug, slug), eq(agentProfiles.status, "PUBLISHED")))
    .get();
  return row ?? null;
}

/** How long a public referral of one person to one agent answers every repeat of it. */
export const REFERRAL_DEDUP_DAYS = 30;

/**
 * POST /api/public/referral/{agentSlug} (Rules 2): the referrer becomes a contact of the agent's organization (an
 * existing one with the e-mail is linked), the referral is RECEIVED with channel PUBLIC_PROFILE, REFERRAL_RECEIVED is
 * emitted, all in one batch. Answers null when no profile is published at the slug. `base` is the slug's organization,
 * found in the directory by the route, with its shard.
 *
 * The same person referred to the same agent within REFERRAL_DEDUP_DAYS of the first referral answers that referral
 * and writes nothing (no second referral, so no second lead). Race-proof: the batch guards that no live key exists
 * for the person and writes the key, so of concurrent copies one commits and the others re-read and find it.
 */
export async function captureReferral(base: Omit<ServiceContext, "actor">, slug: string, input: PublicReferral): Promise<Referral | null> {
  const agent = await publishedAgent(base.db, base.organizationId, slug);
  if (!agent) return null;
  const ctx: ServiceContext = { ...base, actor: { type: "public", userId: null } };
  const contactHash = await sha256Hex(referredKey(input.referredEmail));
  const keyOf = and(
    eq(referralKeys.organizationId, ctx.organizationId),
    eq(referralKeys.agentUserId, agent.userId),
    eq(referralKeys.contactHash, contactHash),
  );
  return withRetries(async () => {
    const now = new Date();
    const live = and(keyOf, gt(referralKeys.expiresAt, nowIso(now)));
    const held = await ctx.db.select({ referralId: referralKeys.referralId }).from(referralKeys).where(live).get();
    if (held) {
      const existing = await ctx.db
        .select()
        .from(referrals)
        .where(and(eq(referrals.organizationId, ctx.organizationId), eq(referrals.id, held.referralId)))
        .get();
      if (existing) return toReferral(existing);
    }
    const referrer = await contactByEmail(ctx, {
      name: input.referrerName,
      email: input.referrerEmail,
      type: "REFERRAL",
      source: "PUBLIC_PROFILE",
      assignedTo: agent.userId,
      notes: null,
    });
    const row = referralRow(ctx.organizationId, {
      agentUserId: agent.userId,
      referrerPersonId: referrer.id,
      channel: "PUBLIC_PROFILE",
      referredName: input.referredName,
      referredContact: input.referredEmail,
      notes: input.notes || null,
      rewardType: null,
      rewardStatus: null,
      rewardValue: null,
    });
    const expiresAt = nowIso(addSeconds(now, REFERRAL_DEDUP_DAYS * 86_400));
    const key = { organizationId: ctx.organizationId, agentUserId: agent.userId, contactHash, referralId: row.id, expiresAt };
    await commit(
      ctx,
      [
        // No live key may have appeared since the read (one whose referral is gone is replaced).
        expectNoRow(ctx.db, referralKeys, held ? and(live, ne(referralKeys.referralId, held.referralId)) : live),
        ...referrer.statements,
        ctx.db.insert(referrals).values(row),
        ctx.db
          .insert(referralKeys)
          .values(key)
          .onConflictDoUpdate({
            target: [referralKeys.organizationId, referralKeys.agentUserId, referralKeys.contactHash],
            set: { referralId: row.id, expiresAt },
          }),
      ],
      [...referrer.events, ...received(ctx, row)],
    );
    return toReferral(row);
  });
}

/**
 * The lead of one referral (Rules 2): a contact with source REFERRAL assigned to the agent, or the organization's
 * existing contact with that e-mail, linked. Once per referral: the link is written only while it is still empty,
 * so a redelivered event (or two at once) never makes a second contact.
 */
export async function leadFromReferral(ctx: ServiceContext, referralId: string): Promise<string | null> {
  return withRetries(async () => {
    const byId = and(eq(referrals.organizationId, ctx.organizationId), eq(referrals.id, referralId));
    const ref = await ctx.db.select().from(referrals).where(byId).get();
    if (!ref || ref.leadContactId || !ref.referredEmailKey || !ref.referredContact) return ref?.leadContactId ?? null;
    const lead = await contactByEmail(ctx, {
      name: ref.referredName,
      email: ref.referredContact,
      type: "LEAD",
      source: "REFERRAL",
      assignedTo: ref.agentUserId,
      notes: ref.notes,
    });
    const unlinked = and(byId, isNull(referrals.leadContactId));
    await commit(
      ctx,
      [
        expectRow(ctx.db, referrals, unlinked),
        ...lead.statements,
        ctx.db
          .update(referrals)
          .set({ leadContactId: lead.id, updatedAt: nowIso(), version: ref.version + 1 })
          .where(unlinked),
      ],
      lead.events,
    );
    return lead.id;
  });
}

/**
 * REFERRAL_RECEIVED → lead contact; idempotent on the event id (the dispatcher's claim) and on the referral's link.
 * Each event's lead is written on the shard the dispatcher read the events from.
 */
export function handleReferralEvents(env: Env, db: Db, events: DomainEvent[]): Promise<void> {
  return withDeferred(async (defer) => {
    for (const event of events) {
      const referralId = (event.data as { referralId?: unknown }).referralId;
      if (typeof referralId !== "string") continue;
      await leadFromReferral(systemContext(env, db, event.organizationId, `event:${event.id}`, defer), referralId);
    }
  });
}

export const referralLeadConsumer: EventConsumer = {
  name: "referral-lead",
  accepts: (type) => type === "REFERRAL_RECEIVED",
  handle: (events, { env, db }) => handleReferralEvents(env, db, events),
};
