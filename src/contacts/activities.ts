import { and, desc, eq } from "drizzle-orm";
import { contactActivities } from "../db/schema";
import { newId } from "../lib/ids";
import { deferPublish, stageEvent } from "../events/outbox";
import type { ServiceContext } from "../platform/context";
import { toActivity } from "./includes";
import { CONVERSATION_TYPES } from "./lead-score";
import type { Activity, ActivityCreate } from "./schemas";
import { findContact } from "./service";
import { activityFigures, applyInput, bumpCounters, changeEvents, type Statement, updateStatement } from "./writes";

/** GET …/activities answers at most this many, newest first. */
export const MAX_ACTIVITIES = 500;

/** Activity types that mean someone was in touch with the contact (they move lastContactedAt). */
const TOUCH_TYPES = new Set(["EMAIL_SENT", "EMAIL_RECEIVED", "PHONE_CALL", "SMS_SENT", "SMS_RECEIVED", "MEETING", "SHOWING"]);

export async function listActivities(ctx: ServiceContext, contactId: string): Promise<Activity[]> {
  await findContact(ctx, contactId);
  const rows = await ctx.db
    .select()
    .from(contactActivities)
    .where(and(eq(contactActivities.organizationId, ctx.organizationId), eq(contactActivities.contactId, contactId)))
    .orderBy(desc(contactActivities.createdAt), desc(contactActivities.id))
    .limit(MAX_ACTIVITIES)
    .all();
  return rows.map(toActivity);
}

/**
 * Logs an activity. A touch that has happened (not one scheduled for later) moves the contact's lastContactedAt, and
 * a contact with the automatic lead score gets it recomputed; either change is a contact.updated event.
 */
export async function createActivity(ctx: ServiceContext, contactId: string, input: ActivityCreate): Promise<Activity> {
  const [before, figures] = await Promise.all([findContact(ctx, contactId), activityFigures(ctx, [contactId])]);
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
  const prior = figures.get(contactId) ?? { count: 0, conversations: 0, lastActivityAt: null };
  const withThis = {
    count: prior.count + 1,
    conversations: prior.conversations + ((CONVERSATION_TYPES as readonly string[]).includes(input.type) ? 1 : 0),
    lastActivityAt: at,
  };
  const moves = TOUCH_TYPES.has(input.type) && touchedAt !== null && (before.lastContactedAt === null || touchedAt > before.lastContactedAt);
  const touched = { ...before, lastContactedAt: moves ? touchedAt : before.lastContactedAt };
  const after = { ...applyInput(touched, {}, withThis, now), updatedAt: at };
  const events = changeEvents(ctx, before, after);
  const statements: Statement[] = [ctx.db.insert(contactActivities).values(row)];
  if (events.length) {
    statements.push(updateStatement(ctx, after), bumpCounters(ctx, 0));
  }
  await ctx.db.batch([...statements, ...events.map((e) => stageEvent(ctx.db, e))] as [Statement, ...Statement[]]);
  deferPublish(ctx, events);
  return toActivity(row);
}
