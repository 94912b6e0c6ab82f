import { and, asc, eq, lt, lte, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { leadInbox } from "../db/schema";
import { expectRow } from "../db/write";
import type { Env } from "../env";
import { withDeferred } from "../lib/deferred";
import { createLogger, loggableError } from "../lib/log";
import { LEAD_INTAKE } from "../lib/retry";
import { newId } from "../lib/ids";
import { inJsonList } from "../lib/sql";
import { addSeconds, nowIso } from "../lib/time";
import { organizationSettings } from "../organization/service";
import type { ServiceContext } from "../service-context";
import { systemContext } from "../shards/tenants";
import type { LeadCreate } from "./schemas";
import { checkPhones, intakeLead, namedProperty } from "./service";

/**
 * Leads from a credential that may not read contacts (a web form's key), taken in after the answer
 * (docs/decisions/0024-lead-intake-tells-a-form-nothing.md): the request checks what any lead is checked for (its
 * numbers, a propertyId), stores the lead and answers 202; the intake runs as deferred work, so the answer, its headers
 * and its time are the same for a client's number and a stranger's (the adversarial pass told them apart by 20 ms; the
 * D1 bookmark, which counted the intake's writes, is encrypted: platform/session.ts). The intake deletes the stored lead
 * in its own batch, so a lead is taken in exactly once however often it is tried; what the deferred work did not
 * finish, the cron drains (`drainLeadInbox`), backing off a lead that keeps failing and deleting it after a week.
 */

/** Seconds before the cron may take a stored lead: the answer's deferred work has it until then. */
const FIRST_TRY_SECONDS = 60;
/** Tries of one lead before it is left for its retention (its failure is logged on every try). */
const MAX_ATTEMPTS = 10;
/** How long a lead that never went in is kept (it holds a person's details). */
const KEEP_DAYS = 7;
/** Stored leads one drain takes per shard. */
const DRAIN_BATCH = 50;
/**
 * How long the deferred intake waits before it starts: the answer (and what the middleware does after the handler)
 * goes out first, so the intake's work, which differs between a match and a new person, does not share its time.
 */
const HEADSTART_MS = 50;

type InboxRow = typeof leadInbox.$inferSelect;

const byId = (organizationId: string, id: string) => and(eq(leadInbox.organizationId, organizationId), eq(leadInbox.id, id));

/**
 * POST /v1/leads for a credential without `contacts:read`: the checks any lead gets (422 for a number that is none,
 * a propertyId that is no property of ours), then the lead stored and its intake deferred.
 */
export async function receiveLead(ctx: ServiceContext, lead: LeadCreate): Promise<void> {
  checkPhones(ctx, lead.person.phones);
  if (lead.propertyId !== undefined) await namedProperty(ctx, lead);
  const now = new Date();
  const row: InboxRow = {
    id: newId(),
    organizationId: ctx.organizationId,
    userId: ctx.actor.userId ?? "",
    lead,
    receivedAt: nowIso(now),
    attempts: 0,
    lastError: null,
    dueAt: nowIso(addSeconds(now, FIRST_TRY_SECONDS)),
  };
  await ctx.db.insert(leadInbox).values(row);
  ctx.defer(new Promise((resolve) => setTimeout(resolve, HEADSTART_MS)).then(() => takeInStored(ctx, row)));
}

/**
 * One try at a stored lead: the intake with the row's removal in its batch; a repeat of an event taken in already
 * answers from its kept answer without a batch, so its row is removed after. A failure is recorded on the row, which
 * waits its backoff for the next drain. Never throws.
 */
async function takeInStored(ctx: ServiceContext, row: InboxRow, now = new Date()): Promise<void> {
  const mine = byId(row.organizationId, row.id);
  try {
    await intakeLead(ctx, row.lead as LeadCreate, [expectRow(ctx.db, leadInbox, mine), ctx.db.delete(leadInbox).where(mine)]);
    await ctx.db.delete(leadInbox).where(mine).run();
  } catch (err) {
    ctx.log.error("stored lead not taken in; the cron tries again", {
      leadId: row.id,
      organizationId: row.organizationId,
      attempt: row.attempts + 1,
      error: loggableError(err),
    });
    const backoff = LEAD_INTAKE.delaySeconds(row.attempts + 1);
    await ctx.db
      .update(leadInbox)
      .set({
        attempts: sql`${leadInbox.attempts} + 1`,
        lastError: String(err).slice(0, 500),
        // From the drain's time (DESIGN.md contract 12), else the request's.
        dueAt: nowIso(addSeconds(now, backoff)),
      })
      .where(mine)
      .run()
      .catch(() => undefined);
  }
}

/**
 * Cron pass on one shard: stored leads whose time has come, claimed by pushing their due time out in one statement
 * (so two drains never take the same lead), each taken in as its sender (the organization's phone region set, as a
 * request's authentication would); then those that failed for a week go.
 */
export async function drainLeadInbox(env: Env, db: Db, now = new Date()): Promise<number> {
  const t = leadInbox;
  await db.delete(t).where(lt(t.receivedAt, nowIso(addSeconds(now, -KEEP_DAYS * 86_400))));
  const due = await db
    .select({ id: t.id })
    .from(t)
    .where(and(lte(t.dueAt, nowIso(now)), lt(t.attempts, MAX_ATTEMPTS)))
    .orderBy(asc(t.dueAt))
    .limit(DRAIN_BATCH);
  if (due.length === 0) return 0;
  const claimed = await db
    .update(t)
    .set({ dueAt: nowIso(addSeconds(now, FIRST_TRY_SECONDS)) })
    .where(
      and(
        inJsonList(
          t.id,
          due.map((d) => d.id),
        ),
        lte(t.dueAt, nowIso(now)),
      ),
    )
    .returning();
  for (const row of claimed) {
    await withDeferred(async (defer) => {
      const ctx: ServiceContext = {
        ...systemContext(env, db, row.organizationId, `lead-inbox:${row.id}`, defer),
        actor: { type: "user", userId: row.userId },
      };
      ctx.phoneRegion = (await organizationSettings(ctx)).defaultPhoneRegion;
      await takeInStored(ctx, row, now);
    }).catch((err) =>
      createLogger().error("stored lead not taken in; the cron tries again", { leadId: row.id, error: loggableError(err) }),
    );
  }
  return claimed.length;
}
