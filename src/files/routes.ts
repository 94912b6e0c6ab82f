import { OpenAPIHono, z } from "@hono/zod-openapi";
import { and, eq } from "drizzle-orm";
import type { Context } from "hono";
import { trashEntries } from "../db/schema";
import { API, apiError } from "../platform/api-family";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { rateLimit } from "../platform/rate-limit";
import { defineRoute } from "../platform/route";
import { openShard } from "../platform/session";
import { placementOf } from "../shards/directory";
import { verifyFileUrl } from "./signed-url";

/** What R2 holds behind signed links: PDFs, images of the types uploads accept (properties/photos.ts), Office files (deals/files.ts). */
const FILE_TYPES = [
  "application/pdf",
  "image/jpeg",
  "image/png",
  "image/gif",
  "image/webp",
  "image/avif",
  "image/heic",
  "image/heif",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  "application/msword",
  "application/vnd.ms-excel",
  "application/vnd.ms-powerpoint",
];

const download = defineRoute(API, {
  operationId: "downloadFile",
  security: [],
  method: "get",
  path: "/api/public/files/{key}",
  tags: ["Files"],
  summary: "Download a file through a signed link",
  description: "The links are handed out by the routes that own the files (a certificate of completion, a property's photos and reports, a deal's documents); they expire. An invalid, expired or unknown link answers 404 alike.",
  middleware: [rateLimit("public-files:get")] as const,
  request: {
    params: z.object({ key: z.string().min(1).max(500).openapi({ param: { name: "key", in: "path" } }) }),
    query: z.strictObject({
      expires: z.string().max(20),
      for: z.string().max(100).optional().openapi({ description: "Whom the link was handed to (a signer's document link), bound by the signature" }),
      signature: z.string().max(128),
    }),
  },
  responses: {
    200: { description: "The file: a PDF (certificates, reports) or an image (property photos)", content: Object.fromEntries(FILE_TYPES.map((t) => [t, { schema: z.string().openapi({ format: "binary" }) }])) },
    404: apiError("Invalid, expired or unknown link"),
    429: apiError("Too many requests from this address (rate_limited)"),
  },
});

/** The organization and the deal or property a file belongs to, from its key (deals/files.ts, properties/files.ts). */
const OWNER = /^(?:deals|properties)\/([^/]+)\/([^/]+)\//;

/**
 * A file of a deal or property that is in the trash (or purged) is not served: its record reads 404, and so do links
 * handed out before the delete. The files stay in R2 for a restore. The key names the organization, so its shard
 * comes from the directory by placement (issue 24); an organization the directory no longer knows serves nothing.
 */
async function inTrash(c: Context<AppBindings>, key: string): Promise<boolean> {
  const [, organizationId, owner] = OWNER.exec(key) ?? [];
  if (!organizationId || !owner) return false;
  const placement = await placementOf(c.get("directory"), organizationId);
  if (!placement) return true;
  openShard(c, placement.shard);
  const db = c.get("db");
  const row = await db
    .select({ id: trashEntries.recordId })
    .from(trashEntries)
    .where(and(eq(trashEntries.organizationId, organizationId), eq(trashEntries.recordId, owner)))
    .get();
  return row !== undefined;
}

export const fileRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook }).openapi(download, async (c) => {
  const { key } = c.req.valid("param");
  const { expires, signature, for: scope } = c.req.valid("query");
  const object = (await verifyFileUrl(c.env, key, expires, signature, scope)) && !(await inTrash(c, key)) ? await c.env.FILES.get(key) : null;
  if (!object) return c.json({ error: "not_found", message: "This link is invalid or has expired" }, 404);
  return new Response(object.body, {
    headers: {
      "content-type": object.httpMetadata?.contentType ?? "application/octet-stream",
      ...(object.httpMetadata?.contentDisposition ? { "content-disposition": object.httpMetadata.contentDisposition } : {}),
      // A link is the same URL for minutes (files/signed-url.ts): the browser may keep what it showed until the link expires.
      "cache-control": `private, max-age=${Math.max(0, Math.min(300, Number(expires) - Math.floor(Date.now() / 1000)))}`,
      "x-content-type-options": "nosniff",
    },
  }) as never;
});
