import { and, asc, desc, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { agentProfiles, organizations, reputationAggregates, testimonials } from "../db/schema";
import { toAggregate } from "../reputation/aggregates";

/**
 * The public reviews feed (spec: GET /api/public/reviews/{agentSlug}; rule 3): an agent's published, public
 * testimonials with only the consented display fields, the agent's rollup and the profile's minimal branding, plus
 * schema.org JSON-LD for the pages that embed it. Built from one D1 round trip on a miss; cached one minute at the
 * edge (Cache API), and purged from this location's cache when it changes.
 */
export const FEED_TTL_SECONDS = 60;
/** Reviews a feed carries at most: featured first, then by sort order, newest first. */
export const FEED_REVIEWS = 50;

/**
 * The feed of a PUBLISHED profile of `organizationId` (the slug's holder in the directory, whose shard `db` is), or
 * null for any other slug (unknown, draft, deleted: the same 404).
 */
export async function buildFeed(db: Db, organizationId: string, slug: string) {
  const agentOf = sql`(SELECT user_id FROM agent_profiles WHERE organization_id = ${organizationId} AND slug = ${slug} AND status = 'PUBLISHED')`;
  const [profiles, reviews, aggregates, orgs] = await db.batch([
    db
      .select({ userId: agentProfiles.userId, publishedConfig: agentProfiles.publishedConfig })
      .from(agentProfiles)
      .where(and(eq(agentProfiles.organizationId, organizationId), eq(agentProfiles.slug, slug), eq(agentProfiles.status, "PUBLISHED"))),
    db
      .select()
      .from(testimonials)
      .where(
        and(
          eq(testimonials.organizationId, organizationId),
          sql`${testimonials.agentUserId} = ${agentOf}`,
          eq(testimonials.status, "PUBLISHED"),
          eq(testimonials.visibility, "PUBLIC"),
        ),
      )
      .orderBy(desc(testimonials.isFeatured), asc(testimonials.sortOrder), desc(testimonials.publishedAt), desc(testimonials.id))
      .limit(FEED_REVIEWS),
    db
      .select()
      .from(reputationAggregates)
      .where(and(eq(reputationAggregates.organizationId, organizationId), sql`${reputationAggregates.agentUserId} = ${agentOf}`)),
    db.select({ name: organizations.name }).from(organizations).where(eq(organizations.id, organizationId)),
  ]);
  const owner = profiles[0];
  if (!owner) return null;
  const blocks = (owner.publishedConfig ?? {}) as {
    displayName?: string;
    headline?: string;
    photoUrl?: string;
    featuredTestimonialIds?: string[];
  };
  // Featured on the profile page first, in the order the profile names them.
  const featured = blocks.featuredTestimonialIds ?? [];
  const ordered = [...reviews].sort((a, b) => rank(featured, a.id) - rank(featured, b.id));
  const aggregate = toAggregate(aggregates[0], owner.userId);
  const items = ordered.map((t) => ({
    id: t.id,
    rating: t.rating,
    headline: t.headline,
    body: t.body,
    category: t.category,
    publishedAt: t.publishedAt,
    // Only what the author allowed (spec: Public feed entries expose only consent-allowed public fields).
    author: {
      ...(t.permissionToPublishName && t.displayName ? { name: t.displayName } : {}),
      ...(t.permissionToPublishLocation && t.displayLocation ? { location: t.displayLocation } : {}),
      ...(t.permissionToPublishPhoto && t.displayPhotoUrl ? { photoUrl: t.displayPhotoUrl } : {}),
    },
  }));
  const agentName = blocks.displayName ?? "";
  return {
    agent: { slug, displayName: agentName, headline: blocks.headline ?? null, photoUrl: blocks.photoUrl ?? null },
    branding: { brokerage: orgs[0]?.name ?? "" },
    aggregate: {
      totalReviews: aggregate.totalReviews,
      averageRating: aggregate.averageRating,
      ratingDistribution: aggregate.ratingDistribution,
    },
    reviews: items,
    jsonLd: {
      "@context": "https://schema.org",
      "@type": "RealEstateAgent",
      name: agentName,
      ...(aggregate.totalReviews > 0
        ? {
            aggregateRating: {
              "@type": "AggregateRating",
              ratingValue: aggregate.averageRating,
              reviewCount: aggregate.totalReviews,
              bestRating: 5,
              worstRating: 1,
            },
          }
        : {}),
      review: items.map((r) => ({
        "@type": "Review",
        reviewRating: { "@type": "Rating", ratingValue: r.rating, bestRating: 5, worstRating: 1 },
        author: { "@type": "Person", name: r.author.name ?? "Client" },
        ...(r.headline ? { name: r.headline } : {}),
        reviewBody: r.body,
        datePublished: r.publishedAt,
      })),
    },
  };
}

const rank = (featured: string[], id: string) => {
  const i = featured.indexOf(id);
  return i === -1 ? featured.length : i;
};
