import { z } from "@hono/zod-openapi";

/** CRM success envelope `{success: true, data}` (spec: Endpoints, "Success responses use {success: true, data}"). */
export const Success = <T extends z.ZodType>(data: T) => z.object({ success: z.literal(true), data });

export const Pagination = z
  .object({
    hasMore: z.boolean(),
    nextCursor: z.string().nullable().openapi({ description: "Opaque; pass back as `cursor` for the next page. null on the last page." }),
    total: z.int().openapi({ description: "Items matching the filters, across all pages" }),
    limit: z.int(),
  })
  .openapi("Pagination");

export const Page = <T extends z.ZodType>(item: T) => z.object({ success: z.literal(true), data: z.array(item), pagination: Pagination });

/** The CRM error envelope, for the OpenAPI document; the error handler produces it. */
export const CrmError = z
  .object({
    success: z.literal(false),
    error: z.object({
      type: z.string().openapi({ example: "validation_error" }),
      title: z.string(),
      status: z.int(),
      detail: z.string(),
      errors: z.array(z.object({ field: z.string(), code: z.string().openapi({ example: "invalid_email" }), message: z.string() })),
      requestId: z.string().optional().openapi({ description: "On 5xx answers only" }),
    }),
  })
  .openapi("CrmError");

/** An error response of a CRM route, described for that route. */
export const crmError = (description: string) => ({ description, content: { "application/json": { schema: CrmError } } });

/** `{success: true, data}` around a schema, as a response declaration (with its headers, such as ETag). */
export const crmSuccess = <T extends z.ZodType>(description: string, data: T, headers?: Record<string, { description: string; schema: { type: "string"; example?: string } }>) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { "application/json": { schema: Success(data) } },
});

/** The errors every authenticated /v1 route can give, whatever it does. */
export const CRM_COMMON_ERRORS = {
  401: crmError("Missing, unknown, revoked or expired token"),
  500: crmError("Unexpected failure; carries the request id, never a stack trace"),
} as const;

/** The error of a write that honours If-Match. */
export const CRM_PRECONDITION_ERROR = { 412: crmError("If-Match named a version the resource is no longer at (precondition_failed); read it again") } as const;

/** The errors of a /v1 route that takes a JSON body. */
export const CRM_BODY_ERRORS = {
  400: crmError("Body is not valid JSON"),
  413: crmError("Body over 1 MiB"),
  415: crmError("Content-Type is not application/json"),
  422: crmError("The body broke the schema; errors[] lists every problem with field, code and message"),
} as const;
