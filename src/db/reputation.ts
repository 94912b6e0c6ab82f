import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export type TestimonialStatus = "PENDING" | "APPROVED" | "PUBLISHED" | "REJECTED";
export type Visibility = "PRIVATE" | "INTERNAL" | "PUBLIC";

/**
 * Testimonials (spec: Testimonial). The display fields and the three consent flags are ours to name (the spec leaves
 * them open): a public feed shows the author's name, location and photo only where the matching flag is set.
 */
export const testimonials = sqliteTable(
  "testimonials",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    agentUserId: text().notNull(),
    authorPersonId: text(),
    dealId: text(),
    source: text().notNull(),
    category: text().notNull(),
    rating: integer().notNull(),
    headline: text(),
    body: text().notNull(),
    displayName: text(),
    displayLocation: text(),
    displayPhotoUrl: text(),
    permissionToPublishName: integer({ mode: "boolean" }).notNull(),
    permissionToPublishLocation: integer({ mode: "boolean" }).notNull(),
    permissionToPublishPhoto: integer({ mode: "boolean" }).notNull(),
    status: text().$type<TestimonialStatus>().notNull(),
    visibility: text().$type<Visibility>().notNull(),
    isFeatured: integer({ mode: "boolean" }).notNull(),
    sortOrder: integer().notNull(),
    approvedByUserId: text(),
    approvedAt: text(),
    publishedAt: text(),
    rejectedAt: text(),
    rejectionReason: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    version: integer().notNull().default(1),
  },
  (t) => [
    index("testimonials_org_order_idx").on(t.organizationId, t.sortOrder, t.createdAt, t.id),
    // The aggregates and the public feed read an agent's published testimonials.
    index("testimonials_org_agent_status_idx").on(t.organizationId, t.agentUserId, t.status, t.publishedAt),
  ],
);

/**
 * Rating rollups per agent (scope AGENT) and per organization (scope ORG, agentUserId ''), recomputed in the same
 * batch as every publish and unpublish, so a read is one row, never a scan.
 */
export const reputationAggregates = sqliteTable(
  "reputation_aggregates",
  {
    organizationId: text().notNull(),
    /** '' for the ORG row. */
    agentUserId: text().notNull(),
    totalReviews: integer().notNull().default(0),
    ratingSum: integer().notNull().default(0),
    averageRating: real(),
    rating1: integer().notNull().default(0),
    rating2: integer().notNull().default(0),
    rating3: integer().notNull().default(0),
    rating4: integer().notNull().default(0),
    rating5: integer().notNull().default(0),
    firstPublishedAt: text(),
    /** Survey figures (moved by the surveys' batches): NPS answers by class, surveys sent and answered. */
    npsPromoters: integer().notNull().default(0),
    npsPassives: integer().notNull().default(0),
    npsDetractors: integer().notNull().default(0),
    surveysSent: integer().notNull().default(0),
    surveysCompleted: integer().notNull().default(0),
    updatedAt: text().notNull(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.agentUserId] })],
);

export type ProfileStatus = "DRAFT" | "PUBLISHED" | "DELETED";

/** Agent public profiles (spec: Agent public profile): a draft and a published configuration, a unique slug. */
export const agentProfiles = sqliteTable(
  "agent_profiles",
  {
    organizationId: text().notNull(),
    userId: text().notNull(),
    slug: text().notNull(),
    status: text().$type<ProfileStatus>().notNull(),
    draftConfig: text({ mode: "json" }).$type<Record<string, unknown>>().notNull(),
    publishedConfig: text({ mode: "json" }).$type<Record<string, unknown>>(),
    publishedAt: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    version: integer().notNull().default(1),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.userId] }), uniqueIndex("agent_profiles_slug_unique").on(t.slug)],
);
