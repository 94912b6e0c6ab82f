import { z } from "@hono/zod-openapi";

/** The CRM error envelope of every /v1 route (spec: Errors; DESIGN.md "Shapes"), for route declarations. */
export const CrmErrorSchema = z
  .object({
    success: z.literal(false),
    error: z.object({
      type: z.string().openapi({ example: "validation_error" }),
      title: z.string(),
      status: z.int(),
      detail: z.string(),
      errors: z.array(z.object({ field: z.string(), code: z.string(), message: z.string() })),
      requestId: z.string().optional(),
    }),
  })
  .openapi("CrmError");

export const crmError = (description: string) => ({ description, content: { "application/json": { schema: CrmErrorSchema } } });

/** `{success: true, data}` around a schema, as a response declaration. */
export const crmSuccess = <T extends z.ZodType>(description: string, data: T) => ({
  description,
  content: { "application/json": { schema: z.object({ success: z.literal(true), data }) } },
});

/** The errors every authenticated /v1 route can give, whatever it does. */
export const CRM_COMMON_ERRORS = {
  401: crmError("Missing, unknown, revoked or expired token"),
  500: crmError("Unexpected failure; carries the request id, never a stack trace"),
} as const;

/** The errors of a /v1 route that takes a JSON body. */
export const CRM_BODY_ERRORS = {
  400: crmError("Body is not valid JSON"),
  413: crmError("Body over 1 MiB"),
  415: crmError("Content-Type is not application/json"),
  422: crmError("The body broke the schema; errors[] lists every problem with field, code and message"),
} as const;
