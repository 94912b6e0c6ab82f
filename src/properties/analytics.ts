import { and, eq, sql } from "drizzle-orm";
import { contacts, properties, propertyDailyReferrers, propertyDailyStats, propertyDailyVisitors } from "../db/schema";
import { expectRow, expectVersion, StaleWrite, type Statement, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { newEvent } from "../events/outbox";
import { sha256Hex } from "../lib/crypto";
import { NotFound, Validation } from "../lib/errors";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { today, toProperty } from "./mapping";
import { countSignal } from "./signals";
import type { PropertyAnalytics, PropertySignal, SignalType } from "./schemas";
import { findProperty, readPropertyForWrite } from "./service";
import { PROPERTIES } from "./writes";

/**
 * Engagement of a listing, recorded from real signals (POST …/signals: a listing page's views, saves and shares, and
 * inquiries, showings and offers, which also go out as events) into all-time counters, per-day counters, per-day
 * visitor hashes (unique views) and per-day referrer counts. Nothing is estimated: a figure nobody reported is 0.
 */
const EVENT: Partial<Record<SignalType, string>> = {
  INQUIRY: "property.inquiry_received",
  SHOWING: "property.showing_scheduled",
  OFFER: "property.offer_received",
};
const DAY_MS = 86_400_000;
const PERIOD_DAYS = { "7d": 7, "30d": 30, "90d": 90 } as const;
const TOP_REFERRERS = 5;

/**
 * A referrer as a source: the host of an http(s) URL (without www.), a plain source name (letters, digits, dot, dash,
 * underscore, space: "newsletter"), "direct" when absent, and "other" for anything else (another scheme, a broken URL),
 * so that what topReferrers shows is always a host or a name.
 */
export function referrerSource(referrer: string | undefined): string {
  const raw = referrer?.trim();
  if (!raw) return "direct";
  if (/^https?:\/\//i.test(raw)) {
    try {
      const host = new URL(raw).hostname;
      if (host) return host.replace(/^www\./, "").toLowerCase();
    } catch {
      return "other";
    }
  }
  return /^[a-z0-9][a-z0-9._ -]{0,99}$/i.test(raw) ? raw.toLowerCase() : "other";
}

/**
 * POST /v1/properties/{id}/signals: one signal, counted exactly once with its event (if any) in one batch. With
 * If-Match it counts only while the property is at a named version (412 otherwise), as every property write.
 */
export async function recordSignal(
  ctx: ServiceContext,
  id: string,
  signal: PropertySignal,
): Promise<{ type: SignalType; recordedAt: string; eventId: string | null }> {
  // A conditional signal is held to the version it was checked against until its batch lands: a change in between
  // fails the guard, and the retry reads the property again (412 now, or 404 when it went).
  if (ctx.ifMatch !== undefined) return withRetries(() => writeSignal(ctx, id, signal, true));
  return writeSignal(ctx, id, signal, false);
}

async function writeSignal(
  ctx: ServiceContext,
  id: string,
  signal: PropertySignal,
  conditional: boolean,
): Promise<{ type: SignalType; recordedAt: string; eventId: string | null }> {
  const org = ctx.organizationId;
  const eventName = EVENT[signal.type];
  // Events carry the property, so those signals read it; views and the like only need it to exist when they land.
  const record = conditional ? await readPropertyForWrite(ctx, id) : eventName ? await findProperty(ctx, id) : null;
  if (signal.contactId) {
    const found = await ctx.db
      .select({ id: contacts.id })
      .from(contacts)
      .where(and(eq(contacts.id, signal.contactId), eq(contacts.organizationId, org)))
      .get();
    if (!found)
      throw new Validation([
        { field: "contactId", path: ["contactId"], code: "invalid_reference", message: "No contact with this id in your organization" },
      ]);
  }
  const at = nowIso();
  const day = today(new Date(at));
  const seconds = signal.type === "VIEW" && signal.timeOnSiteSeconds !== undefined ? signal.timeOnSiteSeconds : null;
  const statements: Statement[] = [
    conditional
      ? expectVersion(ctx.db, PROPERTIES, org, record!)
      : expectRow(ctx.db, properties, and(eq(properties.id, id), eq(properties.organizationId, org))),
    ...countSignal(ctx, id, signal.type, at, seconds),
  ];
  if (signal.type === "VIEW") {
    if (signal.visitorId) {
      const visitorHash = (await sha256Hex(`${org}\n${signal.visitorId}`)).slice(0, 32);
      statements.push(ctx.db.insert(propertyDailyVisitors).values({ propertyId: id, day, visitorHash }).onConflictDoNothing());
    }
    statements.push(
      ctx.db
        .insert(propertyDailyReferrers)
        .values({ propertyId: id, day, source: referrerSource(signal.referrer), views: 1 })
        .onConflictDoUpdate({
          target: [propertyDailyReferrers.propertyId, propertyDailyReferrers.day, propertyDailyReferrers.source],
          set: { views: sql`${propertyDailyReferrers.views} + 1` },
        }),
    );
  }
  const { visitorId: _v, ...details } = signal;
  const event =
    eventName && record
      ? newEvent(ctx, eventName, {
          object: toProperty(record),
          previousAttributes: null,
          changes: null,
          signal: { ...details, recordedAt: at },
        })
      : null;
  await commit(ctx, statements, event ? [event] : []).catch((err) => {
    // Unconditional, the only guard is the property's existence: it is not there (any more). Conditional, the retry
    // tells a change (412) from a delete (404).
    throw err instanceof StaleWrite && !conditional ? new NotFound("Property") : err;
  });
  return { type: signal.type, recordedAt: at, eventId: event?.id ?? null };
}

/** GET /v1/properties/{id}/analytics: the figures of the last 7, 30 or 90 days (today included), from the day counters. */
export async function getAnalytics(ctx: ServiceContext, id: string, period: keyof typeof PERIOD_DAYS): Promise<PropertyAnalytics> {
  await findProperty(ctx, id);
  const days = PERIOD_DAYS[period];
  const now = Date.now();
  const from = today(new Date(now - (days - 1) * DAY_MS));
  const org = ctx.organizationId;
  const [sums, unique, referrers, byDay] = await ctx.db.batch([
    ctx.db
      .select({
        views: sql<number>`COALESCE(SUM(${propertyDailyStats.views}), 0)`,
        inquiries: sql<number>`COALESCE(SUM(${propertyDailyStats.inquiries}), 0)`,
        showings: sql<number>`COALESCE(SUM(${propertyDailyStats.showings}), 0)`,
        offers: sql<number>`COALESCE(SUM(${propertyDailyStats.offers}), 0)`,
        saves: sql<number>`COALESCE(SUM(${propertyDailyStats.saves}), 0)`,
        shares: sql<number>`COALESCE(SUM(${propertyDailyStats.shares}), 0)`,
        timeTotal: sql<number>`COALESCE(SUM(${propertyDailyStats.timeOnSiteTotal}), 0)`,
        timeCount: sql<number>`COALESCE(SUM(${propertyDailyStats.timeOnSiteCount}), 0)`,
      })
      .from(propertyDailyStats)
      .where(
        and(eq(propertyDailyStats.propertyId, id), eq(propertyDailyStats.organizationId, org), sql`${propertyDailyStats.day} >= ${from}`),
      ),
    ctx.db
      .select({ n: sql<number>`COUNT(DISTINCT ${propertyDailyVisitors.visitorHash})` })
      .from(propertyDailyVisitors)
      .where(and(eq(propertyDailyVisitors.propertyId, id), sql`${propertyDailyVisitors.day} >= ${from}`)),
    ctx.db
      .select({ source: propertyDailyReferrers.source, views: sql<number>`SUM(${propertyDailyReferrers.views})` })
      .from(propertyDailyReferrers)
      .where(and(eq(propertyDailyReferrers.propertyId, id), sql`${propertyDailyReferrers.day} >= ${from}`))
      .groupBy(propertyDailyReferrers.source)
      .orderBy(sql`SUM(${propertyDailyReferrers.views}) DESC`, propertyDailyReferrers.source)
      .limit(TOP_REFERRERS),
    ctx.db
      .select({ day: propertyDailyStats.day, views: propertyDailyStats.views })
      .from(propertyDailyStats)
      .where(
        and(eq(propertyDailyStats.propertyId, id), eq(propertyDailyStats.organizationId, org), sql`${propertyDailyStats.day} >= ${from}`),
      ),
  ]);
  const s = sums[0]!;
  const uniqueViews = unique[0]?.n ?? 0;
  const viewsOn = new Map(byDay.map((d) => [d.day, d.views]));
  const pct = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 10_000) / 100 : 0);
  return {
    period,
    views: s.views,
    uniqueViews,
    inquiries: s.inquiries,
    showings: s.showings,
    offers: s.offers,
    saveCount: s.saves,
    shareCount: s.shares,
    averageTimeOnSite: s.timeCount > 0 ? Math.round(s.timeTotal / s.timeCount) : null,
    conversionRate: pct(s.inquiries, uniqueViews),
    topReferrers: referrers.map((r) => ({ source: r.source, views: r.views, percentage: pct(r.views, s.views) })),
    viewsByDay: Array.from({ length: days }, (_, i) => {
      const date = today(new Date(now - (days - 1 - i) * DAY_MS));
      return { date, views: viewsOn.get(date) ?? 0 };
    }),
  };
}
