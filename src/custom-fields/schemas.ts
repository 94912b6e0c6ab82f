import { z } from "@hono/zod-openapi";
import { Pagination } from "../crm/body";
import { CUSTOM_FIELD_OBJECTS, CUSTOM_FIELD_TYPES, KEY_PATTERN, MAX_TEXT_CHARS } from "../crm/custom-fields";
import { listQuery } from "../crm/list-query";
import { oneLineText, pattern } from "../lib/validation";

/** Choices a select field offers at most. */
export const MAX_OPTIONS = 100;

/** POST /v1/custom-fields. */
export const CustomFieldCreate = z
  .strictObject({
    object: z.enum(CUSTOM_FIELD_OBJECTS).openapi({ description: "The records the field is on" }),
    key: pattern(KEY_PATTERN, "invalid_key", "A key is a lower-case letter, then up to 39 lower-case letters, digits or _").openapi({
      example: "budget",
      description:
        "How the value is named in `customFields` and in list parameters (`customFields.budget[gte]=…`); unique per object in your organization",
    }),
    label: oneLineText(100).openapi({ example: "Budget" }),
    type: z.enum(CUSTOM_FIELD_TYPES).openapi({
      description: `text (up to ${MAX_TEXT_CHARS} characters), number, date (YYYY-MM-DD), boolean, or select (one of \`options\`)`,
    }),
    options: z
      .array(oneLineText(100))
      .min(1)
      .max(MAX_OPTIONS)
      .refine((o) => new Set(o).size === o.length, { message: "Each option once", params: { code: "duplicate_option" } })
      .optional()
      .openapi({
        description: `The choices of a select field (required for it, refused for the other types), at most ${MAX_OPTIONS}`,
        example: ["buyer", "seller"],
      }),
  })
  .superRefine((f, ctx) => {
    if (f.type === "select" && !f.options)
      ctx.addIssue({ code: "custom", path: ["options"], message: "A select field needs its options", params: { code: "required" } });
    if (f.type !== "select" && f.options)
      ctx.addIssue({ code: "custom", path: ["options"], message: "Only a select field has options", params: { code: "unexpected_field" } });
  })
  .openapi("CustomFieldCreate");
export type CustomFieldCreate = z.infer<typeof CustomFieldCreate>;

export const CustomField = z
  .object({
    id: z.string(),
    object: z.enum(CUSTOM_FIELD_OBJECTS),
    key: z.string(),
    label: z.string(),
    type: z.enum(CUSTOM_FIELD_TYPES),
    options: z.array(z.string()).nullable(),
    createdAt: z.string(),
  })
  .openapi("CustomField");
export type CustomField = z.infer<typeof CustomField>;

export const CustomFieldList = z.object({ success: z.literal(true), data: z.array(CustomField), pagination: Pagination });

export const CustomFieldListQuery = listQuery({
  object: z.enum(CUSTOM_FIELD_OBJECTS).optional().openapi({ description: "Only the fields of these records" }),
});
export type CustomFieldListQuery = z.infer<typeof CustomFieldListQuery>;

export const CustomFieldIdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "id", in: "path" } }),
});
