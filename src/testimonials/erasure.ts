import { and, eq, sql } from "drizzle-orm";
import { type Copy, rewriteCopies } from "../crm/copies";
import type { Erasable } from "../crm/erasure";
import { testimonials } from "../db/schema";
import { idsOf } from "../lib/sql";
import { purgeFeed } from "../reputation/feed-cache";
import type { ServiceContext } from "../service-context";

// The testimonials' share of a person's erasure (crm/erasure.ts, erasure/erase.ts).

/** An agent's public feed shows their testimonials: a rewrite of one purges it at once. */
const purgeTestimonialFeeds = async (ctx: ServiceContext, ids: string[]) => {
  const agents = await ctx.db
    .selectDistinct({ agentUserId: testimonials.agentUserId })
    .from(testimonials)
    .where(and(idsOf(testimonials, ctx.organizationId, ids)));
  for (const { agentUserId } of agents) purgeFeed(ctx, agentUserId);
};

const COPIES: Copy[] = [
  { kind: "testimonial_texts", table: testimonials, key: "id", column: "headline", versioned: true, after: purgeTestimonialFeeds },
  { kind: "testimonial_texts", table: testimonials, key: "id", column: "body", versioned: true, after: purgeTestimonialFeeds },
  // Imported reviews have no author id: a display name that is theirs is theirs all the same (the public feed shows it).
  {
    kind: "testimonial_texts",
    table: testimonials,
    key: "id",
    column: "displayName",
    versioned: true,
    clear: true,
    after: purgeTestimonialFeeds,
  },
  { kind: "testimonial_texts", table: testimonials, key: "id", column: "rejectionReason", versioned: true },
];

/** The fields of a testimonial they wrote (in a testimonial.* event) that show them: cleared as on the row itself. */
const AUTHOR_FIELDS = ["displayName", "displayLocation", "displayPhotoUrl"];

export const testimonialsErasable: Erasable = {
  /**
   * What they wrote stays (the ratings and counts are the agent's), without them as its author on display: their name,
   * place and photo, and the permissions to show them. The feeds of the agents they reviewed show it from the next read.
   */
  begin(ctx, { id, at }) {
    const theirs = and(eq(testimonials.organizationId, ctx.organizationId), eq(testimonials.authorPersonId, id));
    return {
      reads: [ctx.db.select({ agentUserId: testimonials.agentUserId }).from(testimonials).where(theirs)],
      write([rows]) {
        const authored = rows as { agentUserId: string }[];
        const agents = new Set(authored.map((t) => t.agentUserId));
        return {
          statements: [
            ctx.db
              .update(testimonials)
              .set({
                displayName: null,
                displayLocation: null,
                displayPhotoUrl: null,
                permissionToPublishName: false,
                permissionToPublishLocation: false,
                permissionToPublishPhoto: false,
                updatedAt: at,
                version: sql`${testimonials.version} + 1`,
              })
              .where(theirs),
          ],
          erased: { testimonials: authored.length },
          committed: () => {
            for (const agentUserId of agents) purgeFeed(ctx, agentUserId);
          },
        };
      },
    };
  },
  async erase(ctx, scrub, counted) {
    return { name_mentions: await rewriteCopies(ctx, scrub, counted, COPIES) };
  },
  objects: [{ is: (obj, person) => obj.authorPersonId === person.id, fields: AUTHOR_FIELDS, clear: true }],
};
