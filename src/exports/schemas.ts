import { z } from "@hono/zod-openapi";

export const EXPORT_STATUSES = ["queued", "running", "completed", "failed", "expired", "deleted"] as const;

export const OrganizationExport = z
  .object({
    id: z.string(),
    status: z.enum(EXPORT_STATUSES).openapi({
      description:
        "queued → running → completed (the link is mailed), or failed; expired once the link ran out (the zip is deleted then); deleted once a person's erasure removed the zip",
    }),
    progress: z.object({
      tablesDone: z.int(),
      tablesTotal: z.int(),
      rows: z.int().openapi({ description: "Rows written so far" }),
      files: z.int().openapi({ description: "Files written (counted once the tables are done)" }),
      bytes: z.int().openapi({ description: "Bytes of the zip written so far" }),
    }),
    expiresAt: z.string().nullable().openapi({ description: "When the mailed download link dies (7 days after completion)" }),
    error: z.string().nullable(),
    createdAt: z.string(),
    completedAt: z.string().nullable(),
  })
  .openapi("OrganizationExport");
export type OrganizationExport = z.infer<typeof OrganizationExport>;

export const ExportIdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "id", in: "path" } }),
});
export const DownloadParams = z.object({
  organizationId: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "organizationId", in: "path" } }),
  token: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: "token", in: "path" } }),
});
