import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { RouteFamily } from "./route";

/** One problem of a 400 invalid_request: the FieldIssue of lib/errors.ts, as the CRM error body's errors[] carry it too. */
export const ApiIssue = z
  .object({
    field: z
      .string()
      .openapi({ description: 'Dotted path of the offending field ("" for the whole body or request)', example: "lease.tenants.0.email" }),
    path: z
      .array(z.union([z.string(), z.number()]))
      .openapi({ description: "The same path as segments", example: ["lease", "tenants", 0, "email"] }),
    code: z.string().openapi({
      description:
        "Machine-readable reason, the same codes as the CRM routes' errors[].code: required, invalid_type, too_small, too_big, invalid_enum_value, unknown_field, invalid_email, invalid_url, invalid_uuid, invalid_format, invalid_unicode, invalid_character, invalid_reference, malformed_json …",
      example: "invalid_email",
    }),
    message: z.string().openapi({ example: "Invalid email address" }),
  })
  .openapi("ApiIssue");

/**
 * The /api family's bodies (DESIGN.md "Shapes"): 401 `{error: "Unauthorized"}`, bad input 400 `{error:
 * "invalid_request", issues[{field, path[], code, message}]}`, a refused state move 409 `{error, message}`, 429 `{error:
 * "rate_limited"}`, anything else `{error, message}` (with the request id on a 5xx).
 */
export const ApiError = z
  .object({
    error: z.string().openapi({ example: "invalid_request" }),
    message: z.string().optional(),
    issues: z.array(ApiIssue).optional(),
    requestId: z.string().optional().openapi({ description: "On 5xx answers only" }),
  })
  .openapi("ApiError");

export const apiError = (description: string) => ({ description, content: { "application/json": { schema: ApiError } } });

/** A public capability route's uniform 404: unknown, expired, used or withdrawn alike (spec: Errors, state 'gone'). */
export const Gone = z.object({ state: z.literal("gone") }).openapi("Gone");
export const gone = (c: Context) => c.json({ state: "gone" as const }, 404);

export const API: RouteFamily = { name: "api", error: apiError };

/** A JSON answer of the /api family, as a response declaration. */
export const apiJson = <T extends z.ZodType>(
  description: string,
  schema: T,
  headers?: Record<string, { description: string; schema: { type: "string"; example?: string } }>,
) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { "application/json": { schema } },
});
