import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import type { ServiceContext } from "../service-context";
import { keepAnswerInBatch } from "../platform/idempotency";
import type { RouteFamily } from "../platform/route";

/** The CRM success body `{success: true, data}` (spec: Endpoints, "Success responses use {success: true, data}"). */
export const Success = <T extends z.ZodType>(data: T) => z.object({ success: z.literal(true), data });

export const Pagination = z
  .object({
    hasMore: z.boolean(),
    nextCursor: z.string().nullable().openapi({ description: "Opaque; pass back as `cursor` for the next page. null on the last page." }),
    total: z.int().openapi({ description: "Items matching the filters, across all pages; a lower bound when `totalExact` is false" }),
    totalExact: z.boolean().optional().openapi({
      description:
        "On searched lists (`q`): false when `total` counts only the matches among the list's first rows (a broad search, see `q`), so more may follow",
    }),
    limit: z.int(),
  })
  .openapi("Pagination");

export const Page = <T extends z.ZodType>(item: T) => z.object({ success: z.literal(true), data: z.array(item), pagination: Pagination });

/** The CRM error body, for the OpenAPI document; the error handler produces it. */
export const CrmError = z
  .object({
    success: z.literal(false),
    error: z.object({
      type: z.string().openapi({ example: "validation_error" }),
      code: z.string().openapi({
        example: "duplicate_email",
        description:
          "The machine-readable reason (duplicate_email, concurrent_modification, idempotency_key_in_flight …); errors[] has one per field for validation",
      }),
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
export const crmSuccess = <T extends z.ZodType>(
  description: string,
  data: T,
  headers?: Record<string, { description: string; schema: { type: "string"; example?: string } }>,
) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { "application/json": { schema: Success(data) } },
});

/** The error of a write that honours If-Match. */
export const CRM_PRECONDITION_ERROR = {
  412: crmError("If-Match named a version the resource is no longer at (precondition_failed); read it again"),
} as const;

/** The CRM family: its routes declare errors in the CRM error body. */
/** Routes that hand out signed file links answer 503 while the deployment has no FILES_URL_SECRET. */
export const CRM_FILES_NOT_CONFIGURED = {
  503: crmError("FILES_URL_SECRET is not configured, so no file link can be signed (not_configured)"),
} as const;

/** The 200 of a CRM delete: `{success: true, message, data: {id, deleted: true}}`. */
export const crmDeleted = {
  description: "Deleted",
  content: {
    "application/json": {
      schema: z.object({ success: z.literal(true), message: z.string(), data: z.object({ id: z.string(), deleted: z.literal(true) }) }),
    },
  },
};

export const CRM: RouteFamily = { name: "crm", error: crmError };

/**
 * For a CRM write whose verb keeps its answer in the batch of its write (platform/idempotency.ts `keepAnswerInBatch`:
 * a retry replays it even when D1's reply to that batch was lost): the service context that carries the keeping, and
 * the answer's shape, `{success: true, data}` (with `message` when given), for the route to return with `status`.
 * A verb whose status depends on what it did (created or matched) passes `status` as a function of its answer.
 */
type KeptStatus<T> = 200 | 201 | ((data: T) => 200 | 201);
export function keptAnswer<T extends object>(
  c: Context<AppBindings>,
  status: KeptStatus<T>,
): { ctx: ServiceContext; answer: (data: T) => { success: true; data: T } };
export function keptAnswer<T extends object>(
  c: Context<AppBindings>,
  status: KeptStatus<T>,
  message: string,
): { ctx: ServiceContext; answer: (data: T) => { success: true; message: string; data: T } };
export function keptAnswer<T extends object>(
  c: Context<AppBindings>,
  status: KeptStatus<T>,
  message?: string,
): { ctx: ServiceContext; answer: (data: T) => object } {
  const answer = (data: T) => (message === undefined ? { success: true as const, data } : { success: true as const, message, data });
  const claim = c.get("idempotencyClaim");
  const keep = (data: T) => keepAnswerInBatch(claim, typeof status === "function" ? status(data) : status, answer, c.get("replayOmits"));
  const keepAnswer: ServiceContext["keepAnswer"] = claim ? (data) => keep(data as T)!(data) : undefined;
  return { ctx: { ...serviceContext(c), keepAnswer }, answer };
}
