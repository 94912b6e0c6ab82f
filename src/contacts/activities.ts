import { and, count, desc, eq } from "drizzle-orm";
import { decodeNewestFirstCursor, olderThan, paginate } from "../crm/pagination";
import { contactActivities } from "../db/schema";
import { withRetries } from "../db/write";
import { commit } from "../events/commit";
import { newId } from "../lib/ids";
import type { ServiceContext } from "../service-context";
import { toActivity } from "./includes";
import { CONVERSATION_TYPES } from "./lead-score";
import type { Activity, ActivityCreate } from "./schemas";
import { findContact } from "./service";
import { facetMoves } from "./facets";
import { applyInput, bumpCounters, changeEvents, readContactForWrite, replaceContact } from "./writes";

/** Activity types that mean someone was in touch with the contact (they move lastContactedAt). */
const TOUCH_TYPES = new Set(["EMAIL_SENT", "EMAIL_RECEIVED", "PHONE_CALL", "SMS_SENT", "SMS_RECEIVED", "MEETING", "SHOWING"]);

/** GET /v1/contacts/{id}/activities: newest first, keyset-paginated, the page and the total in one round trip. */
export async function listActivities(ctx: ServiceContext, contactId: string, q: { limit: number; cursor?: string }) {
  const after = decodeNewestFirstCursor(q.cursor);
  await findContact(ctx, contactId);
  const scope = and(eq(contactActivities.organizationId, ctx.organizationId), eq(contactActivities.contactId, contactId));
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(contactActivities)
      .where(after ? and(scope, olderThan(contactActivities.createdAt, contactActivities.id, after)) : scope)
      .orderBy(desc(contactActivities.createdAt), desc(contactActivities.id))
      .limit(q.limit + 1),
    ctx.db.select({ n: count() }).from(contactActivities).where(scope),
  ]);
  const { page, pagination } = paginate(rows, q.limit, total?.n ?? 0, (r) => ({ at: r.createdAt, id: r.id }));
  return { data: page.map(toActivity), pagination };
}

/**
 * Logs an activity. A touch that has happened (not one scheduled for later) moves the contact's lastContactedAt, and
 * a contact with the automatic lead score gets it recomputed; either change is a contact.updated event. Activities are
 * inputs of the contact (its score, its include=activities), so every one bumps the contact's version in the same
 * guarded batch: concurrent activities each see the others, and none can be written under a contact being deleted.
 */
export async function createActivity(ctx: ServiceContext, contactId: string, input: ActivityCreate): Promise<Activity> {
  return withRetries(async () => {
    const { before, figures: prior } = await readContactForWrite(ctx, contactId);
    const now = new Date();
    const at = now.toISOString();
    const row = {
      id: newId(),
      organizationId: ctx.organizationId,
      contactId,
      type: input.type,
      description: input.description ?? null,
      scheduledAt: input.scheduledAt ? new Date(input.scheduledAt).toISOString() : null,
      metadata: input.metadata ?? null,
      createdBy: ctx.actor.userId ?? null,
      createdAt: at,
    };
    // A touch counts from when it happened: its scheduledAt when that is in the past, else now; never moving backwards.
    const touchedAt = row.scheduledAt && row.scheduledAt <= at ? row.scheduledAt : row.scheduledAt ? null : at;
    const withThis = {
      count: prior.count + 1,
      conversations: prior.conversations + ((CONVERSATION_TYPES as readonly string[]).includes(input.type) ? 1 : 0),
      lastActivityAt: at,
    };
    const moves = TOUCH_TYPES.has(input.type) && touchedAt !== null && (before.lastContactedAt === null || touchedAt > before.lastContactedAt);
    const touched = { ...before, lastContactedAt: moves ? touchedAt : before.lastContactedAt };
    const changed = { ...applyInput(touched, {}, withThis, now), updatedAt: at, version: before.version + 1 };
    const events = changeEvents(ctx, before, changed);
    // Without a visible change the contact keeps its updatedAt; only its version moves.
    const after = events.length ? changed : { ...before, version: before.version + 1 };
    await commit(ctx, [...replaceContact(ctx, before, after), ctx.db.insert(contactActivities).values(row), ...(events.length ? [bumpCounters(ctx, 0)] : []), ...facetMoves(ctx, before, after)], events);
    return toActivity(row);
  });
}
