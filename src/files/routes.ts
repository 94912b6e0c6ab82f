import { OpenAPIHono, z } from "@hono/zod-openapi";
import { and, eq } from "drizzle-orm";
import type { Context } from "hono";
import type { Db } from "../db/client";
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
  description:
    "The links are handed out by the routes that own the files (a certificate of completion, a property's photos and reports, a deal's documents, the document a signer reads); they expire. An invalid, expired or unknown link answers 404 alike, and so does a signer's link once that signer has signed or declined or the envelope has ended.",
  middleware: [rateLimit("public-files:get")] as const,
  request: {
    params: z.object({
      key: z
        .string()
        .min(1)
        .max(500)
        .openapi({ param: { name: "key", in: "path" } }),
    }),
    query: z.strictObject({
      expires: z.string().max(20),
      for: z
        .string()
        .max(100)
        .optional()
        .openapi({ description: "Whom the link was handed to (a signer's document link), bound by the signature" }),
      signature: z.string().max(128),
    }),
  },
  responses: {
    200: {
      description: "The file: a PDF (certificates, reports) or an image (property photos)",
      content: Object.fromEntries(FILE_TYPES.map((t) => [t, { schema: z.string().openapi({ format: "binary" }) }])),
    },
    404: apiError("Invalid, expired or unknown link; a signer's link once the signer signed or declined or the envelope ended"),
    429: apiError("Too many requests from this address (rate_limited)"),
  },
});

/** Every stored key starts `<kind>/<organizationId>/` (deals/files.ts, properties/files.ts, signatures/service.ts …). */
const ORGANIZATION = /^[a-z]+\/([^/]+)\//;
/** The deal or property a file belongs to, from its key. */
const OWNER = /^(?:deals|properties)\/[^/]+\/([^/]+)\//;

/** The key's organization with its shard opened (by placement); null when the directory no longer knows it. */
async function openOwner(c: Context<AppBindings>, key: string): Promise<string | null> {
  const organizationId = ORGANIZATION.exec(key)?.[1];
  const placement = organizationId ? await placementOf(c.get("directory"), organizationId) : null;
  if (!organizationId || !placement) return null;
  openShard(c, placement.shard);
  return organizationId;
}

/**
 * A file of a deal or property that is in the trash (or purged) is not served: its record reads 404, and so do links
 * handed out before the delete. The files stay in R2 for a restore. An organization the directory no longer knows
 * serves nothing.
 */
async function inTrash(c: Context<AppBindings>, key: string): Promise<boolean> {
  const owner = OWNER.exec(key)?.[1];
  if (!owner) return false;
  const organizationId = await openOwner(c, key);
  if (!organizationId) return true;
  const row = await c
    .get("db")
    .select({ id: trashEntries.recordId })
    .from(trashEntries)
    .where(and(eq(trashEntries.organizationId, organizationId), eq(trashEntries.recordId, owner)))
    .get();
  return row !== undefined;
}

export interface FileDeps {
  /**
   * Whether the person a link was made for (`for=`, a signer's id) may still read the file, asked at each download
   * (signatures/document-link.ts: not once they signed or declined, nor once the envelope ended). Passed down by the
   * app: the rule is the signatures domain's, above this layer.
   */
  holderMayRead(db: Db, organizationId: string, key: string, holder: string): Promise<boolean>;
}

/** Whether a link whose signature holds may be served now. */
async function servable(c: Context<AppBindings>, deps: FileDeps, key: string, holder: string | undefined): Promise<boolean> {
  if (holder === undefined) return !(await inTrash(c, key));
  const organizationId = await openOwner(c, key);
  return organizationId !== null && (await deps.holderMayRead(c.get("db"), organizationId, key, holder));
}

export const createFileRoutes = (deps: FileDeps) =>
  new OpenAPIHono<AppBindings>({ defaultHook: validationHook }).openapi(download, async (c) => {
    const { key } = c.req.valid("param");
    const { expires, signature, for: holder } = c.req.valid("query");
    const object =
      (await verifyFileUrl(c.env, key, expires, signature, holder)) && (await servable(c, deps, key, holder))
        ? await c.env.FILES.get(key)
        : null;
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
