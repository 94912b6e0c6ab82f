import { z } from "@hono/zod-openapi";
import { boundedJsonObject } from "../lib/json-bounds";
import { oneLineText } from "../lib/validation";

const httpsUrl = z.url({ protocol: /^https$/, message: "Must be an https URL" }).max(2048);

export const AgentQuery = z.strictObject({
  agentUserId: z.string().min(1).max(100).optional().openapi({ description: "Default: the caller" }),
});

/**
 * The approved-block schema of a profile page: what a published profile may show. A draft may be anything
 * bounded; publishing checks it against this.
 */
export const ProfileBlocks = z
  .strictObject({
    displayName: oneLineText(100),
    headline: oneLineText(160).optional(),
    bio: z.string().trim().min(1).max(2000).optional(),
    photoUrl: httpsUrl.optional(),
    featuredTestimonialIds: z
      .array(z.string().min(1).max(100))
      .max(6)
      .optional()
      .openapi({ description: "Published testimonials of this agent, shown first" }),
    contactButton: z.strictObject({ label: oneLineText(40), url: z.url({ protocol: /^(https|mailto|tel)$/ }).max(2048) }).optional(),
  })
  .openapi("ProfileBlocks");

export const ProfileUpsert = z
  .strictObject({
    agentUserId: z.string().min(1).max(100).optional(),
    slug: z
      .string()
      .regex(/^[a-z0-9](?:-?[a-z0-9]){2,59}$/, "3 to 60 lower-case letters, digits and single hyphens")
      .optional()
      .openapi({ description: "The public address (/api/public/reviews/{slug}); made from the agent's name when left out" }),
    draftConfig: boundedJsonObject({ maxChars: 16 * 1024 }).openapi({
      description: "Anything bounded; publishing checks it against ProfileBlocks",
    }),
  })
  .openapi("ProfileUpsert");

export const ProfilePublish = z.strictObject({ agentUserId: z.string().min(1).max(100).optional() }).openapi("ProfilePublish");

export const Profile = z
  .object({
    agentUserId: z.string(),
    slug: z.string(),
    status: z.enum(["DRAFT", "PUBLISHED", "DELETED"]),
    draftConfig: z.record(z.string(), z.unknown()),
    publishedConfig: z.record(z.string(), z.unknown()).nullable(),
    publishedAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("AgentProfile");
