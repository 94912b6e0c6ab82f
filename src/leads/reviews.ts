import { and, asc, count, desc, eq, lt } from "drizzle-orm";
import { matchContacts } from "../intake/service";
import { decodeNewestFirstCursor, olderThan, paginate } from "../crm/pagination";
import type { Db } from "../db/client";
import { leadReviews } from "../db/schema";
import { expectRow, withRetries } from "../db/write";
import { NotFound } from "../lib/errors";
import { createLogger, loggableError } from "../lib/log";
import { idsOf } from "../lib/sql";
import { findProperty } from "../properties/service";
import type { ServiceContext } from "../service-context";
import type { LeadReview, LeadReviewListQuery } from "./schemas";
import { type ContactAnswer, type Intake, leadActivity, type Property, takeIn } from "./service";

/**
 * Leads kept for review: a lead with only phone numbers that match no contact, kept by intake
 * (leads/service.ts `keepForReview`) for the team to accept into a contact given an e-mail, or to dismiss. A review
 * holds a person's name and numbers: an erasure deletes those with the erased person's numbers (erasure/erase.ts),
 * and the cron those nobody settled within REVIEW_RETENTION_DAYS.
 */

/** How long a lead waits for review before the cron deletes it. */
export const REVIEW_RETENTION_DAYS = 90;
/** Reviews one retention pass deletes at most, per shard. */
const RETENTION_BATCH = 500;

type ReviewRow = typeof leadReviews.$inferSelect;

const byId = (ctx: ServiceContext, id: string) => and(eq(leadReviews.organizationId, ctx.organizationId), eq(leadReviews.id, id));

function toReview(r: ReviewRow): LeadReview {
  return {
    id: r.id,
    source: r.source,
    sourceEventId: r.sourceEventId,
    type: r.type as LeadReview["type"],
    person: { firstName: r.firstName, lastName: r.lastName, phones: r.phones, address: r.address },
    message: r.message,
    propertyId: r.propertyId,
    createdAt: r.createdAt,
  };
}

/** GET /v1/leads/reviews: newest first, keyset-paginated on (createdAt, id). */
export async function listReviews(ctx: ServiceContext, q: LeadReviewListQuery) {
  const after = decodeNewestFirstCursor(q.cursor);
  const t = leadReviews;
  const scope = eq(t.organizationId, ctx.organizationId);
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(t)
      .where(after ? and(scope, olderThan(t.createdAt, t.id, after)) : scope)
      .orderBy(desc(t.createdAt), desc(t.id))
      .limit(q.limit + 1),
    ctx.db.select({ n: count() }).from(t).where(scope),
  ]);
  const { page, pagination } = paginate(rows, q.limit, total?.n ?? 0, (r) => ({ at: r.createdAt, id: r.id }));
  return { data: page.map(toReview), pagination };
}

async function findReview(ctx: ServiceContext, id: string): Promise<ReviewRow> {
  const row = await ctx.db.select().from(leadReviews).where(byId(ctx, id)).get();
  if (!row) throw new NotFound("Lead review");
  return row;
}

/** The property the review asked about, while it is still ours (a deleted one names none: the contact is still made). */
const propertyOf = (ctx: ServiceContext, review: ReviewRow): Promise<Property | null> =>
  review.propertyId === null
    ? Promise.resolve(null)
    : findProperty(ctx, review.propertyId).catch((err) => (err instanceof NotFound ? null : Promise.reject(err)));

/**
 * POST /v1/leads/reviews/{id}/accept: the lead taken in as intake would have with this e-mail (leads/service.ts
 * `takeIn`): a new contact routed by `settings.leadRouting` (201), or the contact the e-mail or a number now matches
 * (200), with the lead's activity and inquiry; the event's kept answer becomes this one. The batch deletes the review
 * and is guarded on it, so of concurrent accepts one takes the lead in and the others find it gone (404).
 */
export function acceptReview(ctx: ServiceContext, id: string, email: string): Promise<ContactAnswer> {
  return withRetries(async () => {
    const review = await findReview(ctx, id);
    const person = {
      firstName: review.firstName ?? undefined,
      lastName: review.lastName ?? undefined,
      emails: [email],
      phones: review.phones,
      address: review.address ?? undefined,
    };
    const [property, [match]] = await Promise.all([
      propertyOf(ctx, review),
      matchContacts(ctx, [{ emails: person.emails, phones: person.phones }]),
    ]);
    const lead = {
      type: review.type as LeadReview["type"],
      source: review.source,
      sourceEventId: review.sourceEventId ?? undefined,
      message: review.message ?? undefined,
    };
    const intake: Intake = { ...lead, person, activity: leadActivity(lead, property), property, zip: property?.zipCode ?? review.zipCode };
    const settle = [expectRow(ctx.db, leadReviews, byId(ctx, id)), ctx.db.delete(leadReviews).where(byId(ctx, id))];
    return takeIn(ctx, intake, match, { statements: settle, kept: "settled" });
  });
}

/** DELETE /v1/leads/reviews/{id}: the lead dismissed; of concurrent dismissals one deletes it, the others answer 404. */
export async function dismissReview(ctx: ServiceContext, id: string): Promise<void> {
  const deleted = await ctx.db.delete(leadReviews).where(byId(ctx, id)).returning({ id: leadReviews.id });
  if (deleted.length === 0) throw new NotFound("Lead review");
}

/**
 * The cron's retention pass on one shard: reviews older than REVIEW_RETENTION_DAYS go, oldest first, a bounded number
 * a pass, one organization at a time (an organization being moved refuses the delete, its fence, without holding up
 * the others; the pass after the move deletes its reviews wherever they are). Answers how many went.
 */
export async function pruneLeadReviews(db: Db, now = new Date()): Promise<number> {
  const before = new Date(now.getTime() - REVIEW_RETENTION_DAYS * 86_400_000).toISOString();
  const t = leadReviews;
  const due = await db
    .select({ id: t.id, organizationId: t.organizationId })
    .from(t)
    .where(lt(t.createdAt, before))
    .orderBy(asc(t.createdAt))
    .limit(RETENTION_BATCH);
  const byOrganization = new Map<string, string[]>();
  for (const r of due) byOrganization.set(r.organizationId, [...(byOrganization.get(r.organizationId) ?? []), r.id]);
  const deleted = await Promise.all(
    [...byOrganization].map(async ([organizationId, ids]) => {
      try {
        return (
          await db
            .delete(t)
            .where(and(idsOf(t, organizationId, ids), lt(t.createdAt, before)))
            .returning({ id: t.id })
        ).length;
      } catch (err) {
        createLogger().warn("lead review retention: rows left for the next pass", { organizationId, error: loggableError(err) });
        return 0;
      }
    }),
  );
  return deleted.reduce((a, b) => a + b, 0);
}
