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
import { readContactForWrite, touchContact } from "./writes";

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
 * a contact with the automatic lead score gets it recomputed with this activity counted; either change is a
 * contact.updated event. The contact's version moves in the same guarded batch (writes.ts `touchContact`).
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
    // A touch counts from when it happened: its scheduledAt when that is in the past, else now.
    const touchedAt = !TOUCH_TYPES.has(input.type)
      ? null
      : row.scheduledAt && row.scheduledAt <= at
        ? row.scheduledAt
        : row.scheduledAt
          ? null
          : at;
    const withThis = {
      count: prior.count + 1,
      conversations: prior.conversations + ((CONVERSATION_TYPES as readonly string[]).includes(input.type) ? 1 : 0),
      lastActivityAt: at,
    };
    const contact = touchContact(ctx, before, withThis, touchedAt, now);
    await commit(ctx, [...contact.statements, ctx.db.insert(contactActivities).values(row)], contact.events);
    return toActivity(row);
  });
}
