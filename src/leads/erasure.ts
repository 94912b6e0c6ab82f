import { and, eq, sql } from "drizzle-orm";
import { type Copy, rewriteCopies } from "../crm/copies";
import type { Erasable } from "../crm/erasure";
import { type contacts, contactMergedKeys, contactRouting, leadReviews } from "../db/schema";
import type { ServiceContext } from "../service-context";

// The leads' share of a person's erasure (crm/erasure.ts, erasure/erase.ts).

/**
 * Leads kept for review (reviews.ts) that carry one of the person's phone numbers: the contact's own, or one a
 * merge made theirs (`contact_merged_keys`, absorbed by them or theirs before they were merged), compared in E.164.
 */
export const reviewsWithNumbersOf = (ctx: ServiceContext, contact: typeof contacts.$inferSelect) => {
  const own = [contact.phoneKey, contact.secondaryPhoneKey].filter((k): k is string => k !== null);
  const k = contactMergedKeys;
  const merged = sql`SELECT ${k.key} FROM ${k} WHERE ${k.organizationId} = ${ctx.organizationId} AND (${k.contactId} = ${contact.id} OR ${k.sourceId} = ${contact.id})`;
  return and(
    eq(leadReviews.organizationId, ctx.organizationId),
    sql`EXISTS (SELECT 1 FROM json_each(${leadReviews.phoneKeys}) n WHERE n.value IN (SELECT value FROM json_each(${JSON.stringify(own)})) OR n.value IN (${merged}))`,
  );
};

/** Leads waiting for review whose message names them (those with their numbers go in `begin`). */
const COPIES: Copy[] = [{ kind: "lead_review_texts", table: leadReviews, key: "id", column: "message" }];

export const leadsErasable: Erasable = {
  /** Leads kept for review with one of their numbers go: called before the merged keys go (merge/erasure.ts), which find some of them. */
  begin(ctx, { contact }) {
    // The person's routing row (issue 46) goes with them: its trail says who they were sent to and when.
    const routing = and(eq(contactRouting.organizationId, ctx.organizationId), eq(contactRouting.contactId, contact.id));
    return {
      reads: [
        ctx.db.select({ n: sql<number>`COUNT(*)` }).from(leadReviews).where(reviewsWithNumbersOf(ctx, contact)),
        ctx.db.select({ n: sql<number>`COUNT(*)` }).from(contactRouting).where(routing),
      ],
      write: ([reviews, routed]) => ({
        statements: [ctx.db.delete(leadReviews).where(reviewsWithNumbersOf(ctx, contact)), ctx.db.delete(contactRouting).where(routing)],
        erased: { lead_reviews: (reviews as { n: number }[])[0]!.n, lead_routing: (routed as { n: number }[])[0]!.n },
      }),
    };
  },
  async erase(ctx, scrub, counted) {
    return { name_mentions: await rewriteCopies(ctx, scrub, counted, COPIES) };
  },
};
