import { z } from "@hono/zod-openapi";
import { listQuery } from "../crm/list-query";
import { oneLineText } from "../lib/validation";

/**
 * Reputation values the spec leaves open ("not shown"), decided here and documented in /docs: rating is an integer
 * 1–5; the category and source lists below; the display fields are the author's name, location and photo, each shown
 * publicly only with its consent flag (permissionToPublishName, …Location, …Photo).
 */
export const CATEGORIES = ["BUYER", "SELLER", "INVESTOR", "LANDLORD", "TENANT", "OTHER"] as const;
export const SOURCES = ["MANUAL", "SURVEY", "EMAIL", "WEBSITE", "GOOGLE", "ZILLOW", "IMPORT", "OTHER"] as const;
export const STATUSES = ["PENDING", "APPROVED", "PUBLISHED", "REJECTED"] as const;
export const VISIBILITIES = ["PRIVATE", "INTERNAL", "PUBLIC"] as const;

const httpsUrl = z.url({ protocol: /^https$/, message: "Must be an https URL" }).max(2048);

export const TestimonialCreate = z
  .strictObject({
    agentUserId: z.string().min(1).max(100).openapi({ description: "The agent (a user of your organization) the testimonial is about" }),
    authorPersonId: z.string().min(1).max(100).optional().openapi({ description: "The author, a contact of your organization" }),
    dealId: z.string().min(1).max(100).optional(),
    source: z.enum(SOURCES).default("MANUAL"),
    category: z.enum(CATEGORIES),
    rating: z.int().min(1).max(5),
    headline: z.string().trim().min(1).max(200).optional(),
    body: z.string().trim().min(1).max(5000),
    displayName: oneLineText(100).optional(),
    displayLocation: oneLineText(100).optional(),
    displayPhotoUrl: httpsUrl.optional(),
    permissionToPublishName: z.boolean().default(false),
    permissionToPublishLocation: z.boolean().default(false),
    permissionToPublishPhoto: z.boolean().default(false),
    // Accepted and ignored: a new testimonial always starts PENDING and PRIVATE (spec: Testimonial state table).
    status: z.enum(STATUSES).optional().openapi({ description: "Ignored: every testimonial starts PENDING" }),
    visibility: z.enum(VISIBILITIES).optional().openapi({ description: "Ignored: every testimonial starts PRIVATE" }),
    isFeatured: z.boolean().default(false),
    sortOrder: z.int().min(-1_000_000).max(1_000_000).default(0),
  })
  .openapi("TestimonialCreate");
export type TestimonialCreate = z.infer<typeof TestimonialCreate>;

export const TestimonialUpdate = z
  .strictObject({
    headline: z.string().trim().min(1).max(200).nullable().optional(),
    body: z.string().trim().min(1).max(5000).optional(),
    isFeatured: z.boolean().optional(),
    sortOrder: z.int().min(-1_000_000).max(1_000_000).optional(),
    visibility: z.enum(["PRIVATE", "INTERNAL"]).optional().openapi({
      description:
        "Only down: a published testimonial moved to PRIVATE or INTERNAL is unpublished (back to APPROVED). Publish makes it PUBLIC.",
    }),
    displayName: oneLineText(100).nullable().optional(),
    displayLocation: oneLineText(100).nullable().optional(),
    displayPhotoUrl: httpsUrl.nullable().optional(),
    permissionToPublishName: z.boolean().optional(),
    permissionToPublishLocation: z.boolean().optional(),
    permissionToPublishPhoto: z.boolean().optional(),
  })
  .refine((u) => Object.keys(u).length > 0, { message: "Nothing to update", params: { code: "empty_update" } })
  .openapi("TestimonialUpdate");
export type TestimonialUpdate = z.infer<typeof TestimonialUpdate>;

export const Syndication = z.object({ channel: z.literal("REVIEWS_FEED"), url: z.string(), since: z.string() }).openapi("Syndication");

export const Testimonial = z
  .object({
    id: z.string(),
    agentUserId: z.string(),
    authorPersonId: z.string().nullable(),
    dealId: z.string().nullable(),
    source: z.string(),
    category: z.string(),
    rating: z.int(),
    headline: z.string().nullable(),
    body: z.string(),
    displayName: z.string().nullable(),
    displayLocation: z.string().nullable(),
    displayPhotoUrl: z.string().nullable(),
    permissionToPublishName: z.boolean(),
    permissionToPublishLocation: z.boolean(),
    permissionToPublishPhoto: z.boolean(),
    status: z.enum(STATUSES),
    visibility: z.enum(VISIBILITIES),
    isFeatured: z.boolean(),
    sortOrder: z.int(),
    approvedByUserId: z.string().nullable(),
    approvedAt: z.string().nullable(),
    publishedAt: z.string().nullable(),
    rejectedAt: z.string().nullable(),
    rejectionReason: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    syndications: z.array(Syndication).optional().openapi({ description: "On the single read: where the testimonial is shown publicly" }),
  })
  .openapi("Testimonial");
export type Testimonial = z.infer<typeof Testimonial>;

export const TestimonialList = z.object({
  testimonials: z.array(Testimonial),
  pagination: z.object({ hasMore: z.boolean(), nextCursor: z.string().nullable(), limit: z.int() }),
});

export const TestimonialListQuery = listQuery({
  status: z.enum(STATUSES).optional(),
  visibility: z.enum(VISIBILITIES).optional(),
  agentUserId: z.string().min(1).max(100).optional(),
  category: z.enum(CATEGORIES).optional(),
});

export const RejectBody = z.strictObject({ reason: z.string().trim().min(1).max(1000).optional() }).openapi("TestimonialReject");

export const Aggregate = z
  .object({
    scope: z.enum(["AGENT", "ORG"]),
    agentUserId: z.string().nullable(),
    totalReviews: z.int(),
    averageRating: z.number().nullable(),
    ratingDistribution: z.object({ 1: z.int(), 2: z.int(), 3: z.int(), 4: z.int(), 5: z.int() }),
    reviewVelocity: z.number().openapi({ description: "Published testimonials per 30 days since the first one" }),
    nps: z.number().nullable().openapi({ description: "Net Promoter Score from survey answers; null until there are some" }),
    responseRate: z.number().nullable().openapi({ description: "Share of sent surveys answered; null until a survey is sent" }),
    updatedAt: z.string().nullable(),
  })
  .openapi("ReputationAggregate");

export const IdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "id", in: "path" } }),
});
