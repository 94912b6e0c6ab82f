import { and, asc, eq, gte, isNotNull, lt, ne, sql } from "drizzle-orm";
import { appointmentAttendees, appointments, calendarFeeds, tasks, users } from "../db/schema";
import { appUrlOf, readConfig } from "../env";
import { newToken, sha256Hex } from "../lib/crypto";
import { inJsonList } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import { registerPublicKeys, removePublicKeys } from "../shards/directory";
import { feedIcal } from "./ical";
import { ofUser } from "./list";
import type { AttendeeRecord } from "./mapping";

/**
 * A user's calendar feed (issue 46): a secret URL Google Calendar, Apple Calendar and Outlook subscribe to, serving
 * the user's appointments (as attendee or maker) and dated open tasks. The token is a capability: kept only as its
 * SHA-256, in calendar_feeds and in the directory (public key `calendar_feed`), which finds the organization's shard
 * for the public route. One live feed per user: issuing again replaces the row in one batch, so of racing issues the
 * last batch's URL is the live one and every other answers 404.
 */

/** What the feed shows: from 90 days back to a year ahead, at most this many of each. */
export const FEED_PAST_DAYS = 90;
export const FEED_FUTURE_DAYS = 365;
export const FEED_MAX_ITEMS = 1000;
const DAY_MS = 86_400_000;

const feedUrl = (ctx: ServiceContext, token: string) => `${appUrlOf(readConfig(ctx.env))}/calendar/${token}.ics`;
const mine = (ctx: ServiceContext, userId: string) =>
  and(eq(calendarFeeds.organizationId, ctx.organizationId), eq(calendarFeeds.userId, userId));

/** GET /v1/users/me/calendar-feed: whether the user has a live feed and since when (never its URL). */
export async function calendarFeedState(ctx: ServiceContext, userId: string): Promise<{ exists: boolean; createdAt: string | null }> {
  const row = await ctx.db.select({ createdAt: calendarFeeds.createdAt }).from(calendarFeeds).where(mine(ctx, userId)).get();
  return { exists: row !== undefined, createdAt: row?.createdAt ?? null };
}

/** POST /v1/users/me/calendar-feed: a new secret URL, answered once; the previous one stops. */
export async function issueCalendarFeed(ctx: ServiceContext, userId: string): Promise<{ url: string; createdAt: string }> {
  const token = newToken("cal");
  const tokenHash = await sha256Hex(token);
  const createdAt = new Date().toISOString();
  const before = await ctx.db.select({ tokenHash: calendarFeeds.tokenHash }).from(calendarFeeds).where(mine(ctx, userId)).all();
  // The directory learns the key before the shard write that makes it live (as signing and template links do).
  await registerPublicKeys(ctx.directory, ctx.organizationId, "calendar_feed", [tokenHash]);
  await ctx.db.batch([
    ctx.db.delete(calendarFeeds).where(mine(ctx, userId)),
    ctx.db.insert(calendarFeeds).values({ tokenHash, organizationId: ctx.organizationId, userId, createdAt }),
  ]);
  await forgetKeys(
    ctx,
    before.map((r) => r.tokenHash),
  );
  return { url: feedUrl(ctx, token), createdAt };
}

/** DELETE /v1/users/me/calendar-feed: the URL stops answering. */
export async function revokeCalendarFeed(ctx: ServiceContext, userId: string): Promise<{ exists: false; createdAt: null }> {
  const gone = await ctx.db.delete(calendarFeeds).where(mine(ctx, userId)).returning({ tokenHash: calendarFeeds.tokenHash });
  await forgetKeys(
    ctx,
    gone.map((r) => r.tokenHash),
  );
  return { exists: false, createdAt: null };
}

/** Old keys leave the directory after the shard write; one left behind by a failure resolves to no feed (404) anyway. */
async function forgetKeys(ctx: ServiceContext, hashes: string[]): Promise<void> {
  await removePublicKeys(ctx.directory, ctx.organizationId, "calendar_feed", hashes).catch((err) =>
    ctx.log.warn("calendar feed keys not removed from the directory", { error: String(err) }),
  );
}

/**
 * The feed of a token (its hash), as iCalendar text, or null when it is not live. `now` places the window (the
 * route passes the request's time).
 */
export async function calendarFeedIcs(ctx: ServiceContext, tokenHash: string, now: Date): Promise<string | null> {
  const feed = await ctx.db
    .select({ userId: calendarFeeds.userId })
    .from(calendarFeeds)
    .where(and(eq(calendarFeeds.organizationId, ctx.organizationId), eq(calendarFeeds.tokenHash, tokenHash)))
    .get();
  if (!feed) return null;
  const org = ctx.organizationId;
  const from = new Date(now.getTime() - FEED_PAST_DAYS * DAY_MS).toISOString();
  const to = new Date(now.getTime() + FEED_FUTURE_DAYS * DAY_MS).toISOString();
  const [rows, taskRows, [user]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(appointments)
      .where(
        and(
          eq(appointments.organizationId, org),
          ne(appointments.status, "cancelled"),
          gte(appointments.endsAt, from),
          lt(appointments.startsAt, to),
          ofUser(org, feed.userId),
        ),
      )
      .orderBy(asc(appointments.startsAt), asc(appointments.id))
      .limit(FEED_MAX_ITEMS),
    ctx.db
      .select({ id: tasks.id, title: tasks.title, dueAt: tasks.dueAt, notes: tasks.notes, updatedAt: tasks.updatedAt })
      .from(tasks)
      .where(
        and(
          eq(tasks.organizationId, org),
          eq(tasks.assignedTo, feed.userId),
          eq(tasks.completed, false),
          isNotNull(tasks.dueAt),
          // Day-only due dates (`YYYY-MM-DD`) sort with the timestamps: the bounds compare as text.
          gte(tasks.dueAt, from.slice(0, 10)),
          lt(tasks.dueAt, to),
        ),
      )
      .orderBy(asc(tasks.dueAt), asc(tasks.id))
      .limit(FEED_MAX_ITEMS),
    ctx.db
      .select({ name: users.name, email: users.email })
      .from(users)
      .where(and(eq(users.organizationId, org), eq(users.id, feed.userId))),
  ]);
  const attendees = rows.length
    ? await ctx.db
        .select()
        .from(appointmentAttendees)
        .where(
          and(
            eq(appointmentAttendees.organizationId, org),
            inJsonList(
              appointmentAttendees.appointmentId,
              rows.map((r) => r.id),
            ),
          ),
        )
        .orderBy(sql`rowid`)
        .all()
    : [];
  const byAppointment = new Map<string, AttendeeRecord[]>();
  for (const a of attendees) byAppointment.set(a.appointmentId, [...(byAppointment.get(a.appointmentId) ?? []), a]);
  const host = new URL(appUrlOf(readConfig(ctx.env))).hostname;
  return feedIcal(`Appointments and tasks: ${user?.name ?? user?.email ?? "agent"}`, host, now, {
    appointments: rows.map((row) => ({ row, description: describe(row.notes, byAppointment.get(row.id) ?? []) })),
    tasks: taskRows.map((t) => ({ ...t, dueAt: t.dueAt! })),
  });
}

/** The user's own view of an appointment: who comes and the notes (a subscriber's private calendar). */
function describe(notes: string | null, attendees: AttendeeRecord[]): string {
  const who = attendees.map((a) => a.name ?? a.email).filter(Boolean);
  return [who.length ? `With: ${who.join(", ")}` : null, notes].filter(Boolean).join("\n\n");
}
