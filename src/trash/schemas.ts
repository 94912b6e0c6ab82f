import { z } from "@hono/zod-openapi";
import { listQuery } from "../crm/list-query";

export const TRASH_KINDS = ["contact", "deal", "property", "template"] as const;

export const TrashListQuery = listQuery({
  kind: z.enum(TRASH_KINDS).optional().openapi({ description: "Only records of this kind" }),
});
export type TrashListQuery = z.infer<typeof TrashListQuery>;

export const TrashItem = z
  .object({
    id: z.string().openapi({ description: "The deleted record's id: POST /v1/{kind}s/{id}/restore brings it back" }),
    kind: z.enum(TRASH_KINDS),
    label: z.string().openapi({ description: "What it was: a contact's name, a deal's title, a property's address" }),
    deletedAt: z.string(),
    deletedBy: z.string().nullable().openapi({ description: "The user who deleted it" }),
    restorableUntil: z.string().openapi({ description: "After this the purge removes it for good (files included)" }),
    mergedInto: z
      .string()
      .nullable()
      .openapi({ description: "A contact merged into another: that contact's id (it cannot be restored: 409 merged_contact)" }),
  })
  .openapi("TrashItem");
export type TrashItem = z.infer<typeof TrashItem>;
