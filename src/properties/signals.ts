import { and, eq, sql } from "drizzle-orm";
import { properties, propertyDailyStats, propertyStats } from "../db/schema";
import { expectRow, type Statement } from "../db/write";
import type { DomainEvent } from "../events/event";
import { newEvent } from "../events/outbox";
import type { ServiceContext } from "../service-context";
import { type PropertyRecord, today, toProperty } from "./mapping";
import type { SignalType } from "./schemas";

/** The all-time and per-day counter each signal moves. */
const COUNTER: Record<SignalType, "views" | "saves" | "shares" | "inquiries" | "showings" | "offers"> = {
  VIEW: "views",
  SAVE: "saves",
  SHARE: "shares",
  INQUIRY: "inquiries",
  SHOWING: "showings",
  OFFER: "offers",
};

/** The counter statements of one signal recorded at `at` (a view may carry its time on site, in seconds). */
export function countSignal(ctx: ServiceContext, id: string, type: SignalType, at: string, seconds: number | null = null): Statement[] {
  const org = ctx.organizationId;
  const day = today(new Date(at));
  const column = COUNTER[type];
  const increments = { [column]: 1, timeOnSiteTotal: seconds ?? 0, timeOnSiteCount: seconds === null ? 0 : 1 } as Record<string, number>;
  const bump = (t: typeof propertyStats | typeof propertyDailyStats) => ({
    [column]: sql`${t[column]} + 1`,
    timeOnSiteTotal: sql`${t.timeOnSiteTotal} + ${increments.timeOnSiteTotal}`,
    timeOnSiteCount: sql`${t.timeOnSiteCount} + ${increments.timeOnSiteCount}`,
  });
  return [
    ctx.db
      .insert(propertyStats)
      .values({ propertyId: id, organizationId: org, ...increments })
      .onConflictDoUpdate({ target: propertyStats.propertyId, set: bump(propertyStats) }),
    ctx.db
      .insert(propertyDailyStats)
      .values({ propertyId: id, day, organizationId: org, ...increments })
      .onConflictDoUpdate({ target: [propertyDailyStats.propertyId, propertyDailyStats.day], set: bump(propertyDailyStats) }),
  ];
}

/**
 * An inquiry about `property` for another domain's batch (lead intake): counted like POST …/signals with
 * type INQUIRY, guarded on the property still being there, with its `property.inquiry_received`.
 */
export function inquiryWrite(
  ctx: ServiceContext,
  property: PropertyRecord,
  signal: { contactId: string; message?: string },
  at: string,
): { statements: Statement[]; events: DomainEvent[] } {
  const exists = expectRow(ctx.db, properties, and(eq(properties.id, property.id), eq(properties.organizationId, ctx.organizationId)));
  const event = newEvent(ctx, "property.inquiry_received", {
    object: toProperty(property),
    previousAttributes: null,
    changes: null,
    signal: { type: "INQUIRY", ...signal, recordedAt: at },
  });
  return { statements: [exists, ...countSignal(ctx, property.id, "INQUIRY", at)], events: [event] };
}
