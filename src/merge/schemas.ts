import { z } from "@hono/zod-openapi";
import { listQuery } from "../crm/list-query";

// POST /v1/contacts/{id}/merge and GET /v1/contacts/duplicates (declared with the contact routes, contacts/routes.ts).

/** Contacts one merge takes at most: its batch holds a few statements per source. */
export const MAX_MERGE_SOURCES = 20;

export const ContactMerge = z
  .strictObject({
    sourceIds: z
      .array(z.string().min(1).max(100))
      .min(1)
      .max(MAX_MERGE_SOURCES)
      .superRefine((ids, ctx) => {
        ids.forEach((id, i) => {
          if (ids.indexOf(id) !== i)
            ctx.addIssue({ code: "custom", path: [i], message: "This id is listed twice", params: { code: "duplicate_id" } });
        });
      })
      .openapi({
        description: `The contacts to merge into this one (1–${MAX_MERGE_SOURCES}, distinct, not this one): their records move here and they go to the trash`,
      }),
  })
  .openapi("ContactMerge");
export type ContactMerge = z.infer<typeof ContactMerge>;

export const DUPLICATE_REASONS = ["phone", "name_zip"] as const;
export type DuplicateReason = (typeof DUPLICATE_REASONS)[number];

export const DuplicatesQuery = listQuery({
  reason: z.enum(DUPLICATE_REASONS).optional().openapi({ description: "Only groups of this kind (default: both, phone groups first)" }),
});
export type DuplicatesQuery = z.infer<typeof DuplicatesQuery>;

export const DuplicateGroup = z
  .object({
    reason: z.enum(DUPLICATE_REASONS).openapi({
      description: "phone: the same number (E.164) in either phone field; name_zip: the same first and last name (any case) and zip code",
    }),
    key: z.string().openapi({
      description: "What they share: the number in E.164 (`+14155550100`), or `first|last|ZIP` folded",
      example: "+14155550100",
    }),
    contactCount: z.int().min(2).openapi({ description: "How many live contacts share the key (at most 20 are listed)" }),
    contacts: z.array(
      z.object({
        id: z.string(),
        firstName: z.string(),
        lastName: z.string(),
        email: z.string(),
        phone: z.string().nullable(),
        secondaryPhone: z.string().nullable(),
        createdAt: z.string(),
      }),
    ),
  })
  .openapi("ContactDuplicateGroup");
export type DuplicateGroup = z.infer<typeof DuplicateGroup>;
