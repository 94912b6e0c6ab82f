import { z } from "@hono/zod-openapi";
import { Pagination } from "../crm/body";
import { oneLineText } from "../lib/validation";
import { PERMISSION_NAMES, type Permission } from "../platform/permissions";

/** The longest a key may live: a year (a key without `expiresAt` lives until it is deleted). */
export const MAX_KEY_LIFETIME_DAYS = 365;

const PermissionName = z.enum(PERMISSION_NAMES as [Permission, ...Permission[]]).openapi({ example: "contacts:read" });

/** POST /v1/api-keys. */
export const CreateApiKey = z
  .strictObject({
    name: oneLineText(100).openapi({ example: "IDX website sync" }),
    permissions: z
      .array(PermissionName)
      .min(1)
      .max(PERMISSION_NAMES.length)
      .refine((p) => new Set(p).size === p.length, { message: "Each permission once", params: { code: "duplicate_permission" } })
      .openapi({ description: 'What the key may do, within what the creator may do (README "Permissions and roles")' }),
    expiresAt: z.iso
      .datetime({ offset: true, message: "Must be an ISO 8601 timestamp" })
      .transform((v) => new Date(v).toISOString())
      .refine((v) => Date.parse(v) > Date.now(), { message: "Must be in the future", params: { code: "invalid_expiry" } })
      .refine((v) => Date.parse(v) <= Date.now() + MAX_KEY_LIFETIME_DAYS * 86_400_000, {
        message: `At most ${MAX_KEY_LIFETIME_DAYS} days from now`,
        params: { code: "invalid_expiry" },
      })
      .optional()
      .openapi({
        type: "string",
        format: "date-time",
        description: `When the key stops working; at most ${MAX_KEY_LIFETIME_DAYS} days ahead. Absent: until deleted.`,
      }),
  })
  .openapi("CreateApiKey");
export type CreateApiKey = z.infer<typeof CreateApiKey>;

export const ApiKey = z
  .object({
    id: z.uuid(),
    name: z.string(),
    prefix: z
      .string()
      .openapi({ description: "The key's first characters, to recognise it; never enough to use it", example: "bk_Xr4p0q9L" }),
    permissions: z.array(z.string()),
    createdAt: z.string(),
    createdBy: z.string().openapi({ description: "The user who created the key: it acts as them, within their current role" }),
    lastUsedAt: z.string().nullable().openapi({ description: "When the key last authenticated a request, to the minute" }),
    expiresAt: z.string().nullable(),
  })
  .openapi("ApiKey");
export type ApiKey = z.infer<typeof ApiKey>;

export const ApiKeyWithSecret = ApiKey.extend({
  key: z.string().optional().openapi({
    description:
      "The key (`bk_` + 43 characters). Shown in this answer only: only its SHA-256 is kept. Absent from an idempotent replay of this answer.",
    example: "bk_Xr4p0q9L…",
  }),
}).openapi("ApiKeyWithSecret");

export const ApiKeyList = z.object({ success: z.literal(true), data: z.array(ApiKey), pagination: Pagination });

/** An API key as GET /v1/integrations lists it and the integration events carry it. */
export const ApiKeyIntegration = ApiKey.extend({ type: z.literal("api_key") }).openapi("ApiKeyIntegration");
export type ApiKeyIntegration = z.infer<typeof ApiKeyIntegration>;

export const ApiKeyIdParam = z.object({
  id: z
    .uuid({ message: "id must be a UUID" })
    .openapi({ param: { name: "id", in: "path" }, example: "6f1c2f34-3a39-4c55-9a43-2b8f1e8f9d0e" }),
});
