import { and, asc, eq, lte, sql } from "drizzle-orm";
import { bumpCounters, changeEvents, type ContactRecord, facetMoves, readContactForWrite, replaceContact } from "../contacts/service";
import type { Db } from "../db/client";
import { contactRouting, contacts } from "../db/schema";
import { StaleWrite } from "../db/write";
import type { Env } from "../env";
import { commit } from "../events/commit";
import { withDeferred } from "../lib/deferred";
import { createLogger, loggableError } from "../lib/log";
import { nowIso } from "../lib/time";
import type { LeadRouting, RouteTarget } from "../organization/schemas";
import { organizationSettings } from "../organization/service";
import type { ServiceContext } from "../service-context";
import { systemContext } from "../shards/tenants";
import { expectRouting } from "./claims";
import { type Decision, placementOf, readKnown, readTurn, resolveTarget, routingColumns } from "./targets";

/**
 * The cron's two routing passes (issue 46), each taking `now` from the scheduled time (DESIGN contract 12): a
 * first-to-claim offer nobody claimed in time goes to its fallback (`offer_expired`), and a routed lead its agent did
 * not contact within speed to lead's minutes goes to its reassign target, once (`speed_to_lead`). Each move is one
 * batch guarded on the routing row's version (and the contact's): of concurrent passes, and of a pass racing a claim,
 * exactly one moves the lead; the others skip it.
 */

type RoutingRow = typeof contactRouting.$inferSelect;

/** Rows one pass takes per shard; the next pass takes the rest. */
const PASS_BATCH = 100;

/** A contact in the trash keeps its routing row (a restore brings it back) but is not moved meanwhile. */
const liveContact = sql`EXISTS (SELECT 1 FROM ${contacts} WHERE ${contacts.id} = ${contactRouting.contactId})`;

/** One row's move as the system, on its organization; false when another pass or a claim moved it first. Never throws. */
async function onRow(env: Env, db: Db, row: RoutingRow, task: string, move: (ctx: ServiceContext) => Promise<void>): Promise<boolean> {
  try {
    await withDeferred((defer) => move(systemContext(env, db, row.organizationId, `${task}:${row.contactId}`, defer)));
    return true;
  } catch (err) {
    if (err instanceof StaleWrite) return false;
    createLogger().error("lead routing move failed; the next pass retries", { task, contactId: row.contactId, error: loggableError(err) });
    return false;
  }
}

/** The contact and its routing row after `d`, in one guarded batch with the contact's events. */
async function moveLead(
  ctx: ServiceContext,
  row: RoutingRow,
  before: ContactRecord,
  d: Decision,
  speed: LeadRouting["speedToLead"],
  event: string,
  now: Date,
): Promise<void> {
  const at = nowIso(now);
  const changed: ContactRecord = { ...before, ...placementOf(d), updatedAt: at, version: before.version + 1 };
  const events = changeEvents(ctx, before, changed);
  const after = events.length ? changed : { ...before, ...placementOf(d), version: before.version + 1 };
  const columns = routingColumns(d, speed, row.trail, event, at);
  await commit(
    ctx,
    [
      expectRouting(ctx, row),
      ...replaceContact(ctx, before, after),
      bumpCounters(ctx, 0),
      ...facetMoves(ctx, before, after),
      ...d.statements,
      ctx.db
        .update(contactRouting)
        .set({ ...columns, version: row.version + 1 })
        .where(and(eq(contactRouting.organizationId, ctx.organizationId), eq(contactRouting.contactId, row.contactId))),
    ],
    events,
  );
}

/** The routing row with nothing left for the cron (speed to lead met or moot, an offer overtaken by hand), guarded like any move. */
async function settleRow(ctx: ServiceContext, row: RoutingRow, now: Date, also: Partial<RoutingRow> = {}): Promise<void> {
  await commit(ctx, [
    expectRouting(ctx, row),
    ctx.db
      .update(contactRouting)
      .set({ speedDueAt: null, speedReassignTo: null, ...also, updatedAt: nowIso(now), version: row.version + 1 })
      .where(and(eq(contactRouting.organizationId, ctx.organizationId), eq(contactRouting.contactId, row.contactId))),
  ]);
}

/** Cron pass on one shard: first-to-claim offers whose timeout passed by `now`, each to its fallback. Answers how many moved. */
export async function routeExpiredOffers(env: Env, db: Db, now: Date): Promise<number> {
  const due = await db
    .select()
    .from(contactRouting)
    .where(and(eq(contactRouting.state, "offered"), lte(contactRouting.offerExpiresAt, nowIso(now)), liveContact))
    .orderBy(asc(contactRouting.offerExpiresAt))
    .limit(PASS_BATCH);
  let moved = 0;
  for (const row of due) {
    const done = await onRow(env, db, row, "offer-expiry", async (ctx) => {
      const [{ before }, settings] = await Promise.all([readContactForWrite(ctx, row.contactId), organizationSettings(ctx)]);
      // Assigned by hand while it was offered: the offer is over, and nobody's assignment is undone.
      if (before.assignedTo !== null)
        return settleRow(ctx, row, now, { state: "assigned", offeredTo: null, offerExpiresAt: null, fallback: null });
      const fallback = row.fallback as { userId: string } | { pondId: string };
      const d: Decision =
        "userId" in fallback
          ? { kind: "user", userId: fallback.userId, reason: "offer expired unclaimed: fallback user", statements: [] }
          : { kind: "pond", pondId: fallback.pondId, reason: "offer expired unclaimed: fallback pond", statements: [] };
      await moveLead(ctx, row, before, d, settings.leadRouting.speedToLead, "offer_expired", now);
    });
    if (done) moved++;
  }
  return moved;
}

/**
 * Cron pass on one shard: leads whose speed-to-lead deadline passed by `now`. One its agent contacted after the
 * assignment (lastContactedAt), or that someone reassigned by hand since, is left as it is; any other goes to the
 * reassign target, once (no deadline follows a reassignment). Answers how many were reassigned.
 */
export async function reassignSlowLeads(env: Env, db: Db, now: Date): Promise<number> {
  const due = await db
    .select()
    .from(contactRouting)
    .where(and(lte(contactRouting.speedDueAt, nowIso(now)), liveContact))
    .orderBy(asc(contactRouting.speedDueAt))
    .limit(PASS_BATCH);
  let moved = 0;
  for (const row of due) {
    let reassigned = false;
    const done = await onRow(env, db, row, "speed-to-lead", async (ctx) => {
      const { before } = await readContactForWrite(ctx, row.contactId);
      const assignment = row.trail.findLast((s) => s.target.type === "user");
      const contacted = before.lastContactedAt !== null && assignment !== undefined && before.lastContactedAt >= assignment.at;
      const stillTheirs = assignment !== undefined && before.assignedTo === assignment.target.id;
      const target = row.speedReassignTo as RouteTarget | null;
      const decision =
        contacted || !stillTheirs || !target
          ? null
          : resolveTarget(
              ctx,
              target,
              "speedToLead",
              "not contacted in time: speed to lead",
              ...(await Promise.all([readKnown(ctx, [target]), readTurn(ctx)])),
            );
      if (!decision) return settleRow(ctx, row, now);
      await moveLead(ctx, row, before, decision, undefined, "speed_to_lead", now);
      reassigned = true;
    });
    if (done && reassigned) moved++;
  }
  return moved;
}
