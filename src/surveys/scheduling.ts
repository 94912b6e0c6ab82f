import { and, eq, inArray, isNull, lte, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { deals, surveys, users } from "../db/schema";
import { expectRow, StaleWrite } from "../db/write";
import { commit } from "../events/commit";
import { type Env, readConfig } from "../env";
import type { EventConsumer } from "../events/consumers";
import type { DomainEvent } from "../events/event";
import { NotConfigured, OrganizationMoving, Validation } from "../lib/errors";
import { type Defer, withDeferred } from "../lib/deferred";
import { loggableError } from "../lib/log";
import { decryptText } from "../lib/secret-box";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { systemContext } from "../shards/tenants";
import { bumpSurveyFigures } from "../reputation/aggregates";
import { atVersion, createSurvey, LIVE, type SurveyRow } from "./service";
import { inTrash, mailInvitation, RecipientChanged, RecipientGone, TOKEN_PURPOSE } from "./invitations";
import { defaultTemplate } from "./templates";

/** How long the cron's claim on a due survey lasts: a send that crashed mid-way is tried again after it. */
const SEND_LEASE_MS = 10 * 60_000;

/**
 * Cron: mails the EMAIL surveys whose send time has come and that were not mailed yet (SCHEDULED, or OPENED through
 * the link of the creating answer before the mail went out). Each is claimed first (its sendAt moved on by a lease, a
 * compare-and-set, so two cron runs never both mail it); after the mail went out the survey is SENT, its encrypted token
 * erased and one survey sent counted. A failed mail is tried again when the lease ends.
 */
export function sendDueSurveys(env: Env, db: Db, { now = new Date(), max = 50 } = {}): Promise<number> {
  return withDeferred((defer) => sendDue(env, db, defer, now, max));
}

/** What is due, and the claim's lease, follow the pass's `at` (DESIGN.md contract 12); `sentAt` records when the mail left. */
async function sendDue(env: Env, db: Db, defer: Defer, at: Date, max: number): Promise<number> {
  const now = nowIso(at);
  const due = await db
    .select()
    .from(surveys)
    .where(
      and(
        inArray(surveys.status, ["SCHEDULED", "OPENED"]),
        lte(surveys.sendAt, now),
        eq(surveys.channel, "EMAIL"),
        isNull(surveys.sentAt),
        sql`${surveys.expiresAt} > ${now}`,
      ),
    )
    .limit(max);
  const key = readConfig(env).SURVEY_TOKEN_KEY;
  let sent = 0;
  await Promise.all(
    due.map(async (before) => {
      const ctx = systemContext(env, db, before.organizationId, "cron:surveys", defer);
      try {
        if (!key || !before.pendingToken) throw new Error(key ? "survey has no encrypted token" : "SURVEY_TOKEN_KEY is not configured");
        const token = await decryptText(key, TOKEN_PURPOSE, before.id, before.pendingToken);
        const claimed: SurveyRow = { ...before, sendAt: new Date(at.getTime() + SEND_LEASE_MS).toISOString(), version: before.version + 1 };
        await commit(ctx, [
          expectRow(db, surveys, atVersion(before)),
          db.update(surveys).set({ sendAt: claimed.sendAt, version: claimed.version }).where(atVersion(before)),
        ]);
        const sentAt = nowIso();
        try {
          await mailInvitation(env, db, claimed, token);
        } catch (err) {
          const skip = () =>
            commit(ctx, [
              expectRow(db, surveys, atVersion(claimed)),
              db
                .update(surveys)
                .set({ status: "SKIPPED", skippedAt: sentAt, pendingToken: null, updatedAt: sentAt, version: claimed.version + 1 })
                .where(atVersion(claimed)),
            ]);
          if (err instanceof RecipientChanged) {
            // Re-addressed or merged since it was scheduled: not this survey's recipient any more; skipped, not retried.
            ctx.log.info("survey not mailed: its contact's address changed since it was scheduled; skipped", { surveyId: claimed.id });
            await skip();
            return;
          }
          if (!(err instanceof RecipientGone)) throw err;
          // The contact is in the trash: it may be restored, so the survey waits (it is tried again when the lease ends).
          if (await inTrash(db, claimed.recipientPersonId)) return;
          // The contact was purged or erased: nothing to send, ever; the survey is skipped rather than retried until it expires.
          await skip();
          return;
        }
        // The mail went out: record it unless the survey was closed or its token replaced meanwhile. An open in between
        // (a version bump) must not make the cron mail it again once the lease ends.
        const stillMine = and(
          eq(surveys.id, before.id),
          inArray(surveys.status, LIVE),
          isNull(surveys.sentAt),
          eq(surveys.sendAt, claimed.sendAt),
          eq(surveys.accessTokenHash, before.accessTokenHash),
        );
        await commit(ctx, [
          expectRow(db, surveys, stillMine),
          db
            .update(surveys)
            .set({
              status: sql`CASE ${surveys.status} WHEN 'SCHEDULED' THEN 'SENT' ELSE ${surveys.status} END`,
              sentAt,
              sendAt: before.sendAt,
              pendingToken: null,
              updatedAt: sentAt,
              version: sql`${surveys.version} + 1`,
            })
            .where(stillMine),
          ...bumpSurveyFigures(db, before.organizationId, before.agentUserId, { surveysSent: 1 }),
        ]);
        sent++;
      } catch (err) {
        // Lost the claim (another run, or the survey was opened, skipped or re-issued meanwhile): nothing to do.
        if (err instanceof StaleWrite) return;
        // Its organization is moving: the shard refused the claim, so the next pass takes the survey up
        // (on the organization's new shard once the move is done).
        if (OrganizationMoving.raisedBy(err)) return;
        ctx.log.error("survey invitation not sent", { surveyId: before.id, error: loggableError(err) });
      }
    }),
  );
  return sent;
}

/** Cron: surveys still open 30 days after creation become EXPIRED at the pass's `now` (their token already answers gone by then). */
export async function expireSurveys(db: Db, { now = new Date(), max = 500 } = {}): Promise<number> {
  const at = nowIso(now);
  const overdue = db
    .select({ id: surveys.id })
    .from(surveys)
    .where(and(inArray(surveys.status, LIVE), lte(surveys.expiresAt, at)))
    .limit(max);
  const done = await db
    .update(surveys)
    .set({ status: "EXPIRED", expiredAt: at, pendingToken: null, updatedAt: at, version: sql`${surveys.version} + 1` })
    .where(and(inArray(surveys.id, overdue), inArray(surveys.status, LIVE)))
    .returning({ id: surveys.id });
  return done.length;
}

/* ------------------------------------------------------------------ DEAL_WON */

/**
 * DEAL_WON → a survey of the deal's contact about its agent (the deal's assignee, else whoever closed it), with the
 * organization's default template (the standard one when it has none), mailed after the template's delay. Once per
 * deal however often the event arrives: the unique DEAL_WON survey per deal, checked in the insert's batch.
 */
export function scheduleForWonDeal(env: Env, db: Db, event: DomainEvent): Promise<string | null> {
  return withDeferred((defer) => surveyWonDeal(systemContext(env, db, event.organizationId, `event:${event.id}`, defer), event));
}

async function surveyWonDeal(ctx: ServiceContext, event: DomainEvent): Promise<string | null> {
  const { db } = ctx;
  const data = event.data as { dealId?: unknown; contactId?: unknown; assignedTo?: unknown; contactEmailKey?: unknown };
  if (typeof data.dealId !== "string") return null;
  const current = await db
    .select({ contactId: deals.contactId, assignedTo: deals.assignedTo })
    .from(deals)
    .where(and(eq(deals.organizationId, ctx.organizationId), eq(deals.id, data.dealId)))
    .get();
  if (!current) return null;
  // The deal as it was won, which the event carries: the consumer runs a moment later, and a contact or assignee
  // swapped in meanwhile must not redirect the survey (else an agent watching the event log could put their
  // own contact on a colleague's deal within that second and answer the survey about them).
  const deal = {
    contactId: typeof data.contactId === "string" ? data.contactId : current.contactId,
    assignedTo: typeof data.assignedTo === "string" || data.assignedTo === null ? (data.assignedTo as string | null) : current.assignedTo,
  };
  const agentUserId = deal.assignedTo ?? event.actor.userId ?? null;
  if (!agentUserId) {
    ctx.log.warn("won deal has no agent to survey about", { dealId: data.dealId, eventId: event.id });
    return null;
  }
  // A deal another agent won is not theirs to have surveyed about a colleague (else an agent could assign a deal of a
  // contact they control to a colleague, win it, and answer the survey to sink the colleague's NPS); owners and
  // admins closing a deal for its agent still survey.
  const closer = event.actor.userId;
  if (closer && closer !== agentUserId && (await roleOf(ctx, closer)) === "agent") {
    ctx.log.info("won deal not surveyed: another agent won it", { dealId: data.dealId, eventId: event.id });
    return null;
  }
  const template = await defaultTemplate(ctx);
  // Mailed to the address the client had at the win (a contact re-addressed within the moment before this runs is
  // skipped). A contact with none then (in the trash at the win) is surveyed at no address: nobody is.
  if (data.contactEmailKey === null) {
    ctx.log.info("won deal not surveyed: its contact had no address at the win", { dealId: data.dealId, eventId: event.id });
    return null;
  }
  const atWin = typeof data.contactEmailKey === "string" ? data.contactEmailKey : undefined;
  const created = await createSurvey(
    ctx,
    { templateId: template.id, recipientPersonId: deal.contactId, agentUserId, dealId: data.dealId, channel: "EMAIL" },
    { trigger: "DEAL_WON", recipientEmailKey: atWin },
  ).catch((err) => {
    // A deal whose contact or agent went away meanwhile has no one to survey; anything else is retried.
    if (err instanceof Validation) return null;
    if (err instanceof NotConfigured) {
      ctx.log.error("won deal not surveyed: SURVEY_TOKEN_KEY is not configured", { dealId: data.dealId, eventId: event.id });
      return null;
    }
    throw err;
  });
  return created?.id ?? null;
}

/** The role of a user of the organization (the shard's copy), or null for one who is gone. */
const roleOf = async (ctx: ServiceContext, userId: string) =>
  (
    await ctx.db
      .select({ role: users.role })
      .from(users)
      .where(and(eq(users.organizationId, ctx.organizationId), eq(users.id, userId)))
      .get()
  )?.role ?? null;

export const dealWonSurveyConsumer: EventConsumer = {
  name: "deal-won-survey",
  accepts: (type) => type === "DEAL_WON",
  async handle(events, { env, db }) {
    for (const event of events) await scheduleForWonDeal(env, db, event);
  },
};
