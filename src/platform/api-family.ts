import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { RouteFamily } from "./route";

/**
 * The /api family's bodies (DESIGN.md "Shapes"): 401 `{error: "Unauthorized"}`, bad input 400 `{error:
 * "invalid_request", issues[{message, path[]}]}`, a refused state move 409 `{error, message}`, 429 `{error:
 * "rate_limited"}`, anything else `{error, message}` (with the request id on a 5xx).
 */
export const ApiError = z
  .object({
    error: z.string().openapi({ example: "invalid_request" }),
    message: z.string().optional(),
    issues: z.array(z.object({ message: z.string(), path: z.array(z.union([z.string(), z.number()])) })).optional(),
    requestId: z.string().optional().openapi({ description: "On 5xx answers only" }),
  })
  .openapi("ApiError");

export const apiError = (description: string) => ({ description, content: { "application/json": { schema: ApiError } } });

/** A public capability route's uniform 404: unknown, expired, used or withdrawn alike (spec: Errors, state 'gone'). */
export const Gone = z.object({ state: z.literal("gone") }).openapi("Gone");
export const gone = (c: Context) => c.json({ state: "gone" as const }, 404);

export const API: RouteFamily = { name: "api", error: apiError };

/** A JSON answer of the /api family, as a response declaration. */
export const apiJson = <T extends z.ZodType>(description: string, schema: T, headers?: Record<string, { description: string; schema: { type: "string"; example?: string } }>) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { "application/json": { schema } },
});
