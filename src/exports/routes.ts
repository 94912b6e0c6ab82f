import { OpenAPIHono, z } from "@hono/zod-openapi";
import { CRM, crmError, crmSuccess } from "../crm/body";
import { API, apiError } from "../platform/api-family";
import { rateLimit } from "../platform/rate-limit";
import { openShard } from "../platform/session";
import { placementOf } from "../shards/directory";
import { DownloadParams, ExportIdParam, OrganizationExport } from "./schemas";
import { getOrganizationExport, openDownload, startOrganizationExport } from "./service";
import { EXPORT_PAGE, type ExportFormat, exportHeaders, type ExportPage, exportStream } from "../crm/export";
import { type CustomFieldObject, readDefinitions } from "../crm/custom-fields";
import type { Permission } from "../platform/permissions";
import type { ServiceContext } from "../service-context";
import { requirePermission, serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute } from "../platform/route";
import { Contact, ContactExportQuery } from "../contacts/schemas";
import { contactExportWalk } from "../contacts/service";
import { Deal, DealExportQuery } from "../deals/schemas";
import { dealExportWalk } from "../deals/service";
import { Property, PropertyExportQuery } from "../properties/schemas";
import { propertyExportWalk } from "../properties/service";

const security = [{ bearerAuth: [] }];

const DESCRIPTION = (what: string, list: string) =>
  `Every ${what} the filters select, streamed as the walk goes (pages of ${EXPORT_PAGE} rows, one query each), so 100,000 rows pass without being held. Takes every filter, \`q\` and \`sort\` of \`GET ${list}\` (no \`limit\`, \`cursor\` or \`include\`). Rows are the objects \`GET ${list}\` answers; in CSV nested fields are dotted columns (\`address.city\`) and lists are joined with \`; \`. Needs \`exports:read\` and the list's own read permission.`;

/** The 200 of an export: the bytes, described per format. */
const EXPORTED = {
  description: "The export, as an attachment (Content-Disposition names the file)",
  headers: { "Content-Disposition": { description: 'attachment; filename="<kind>-<date>.<format>"', schema: { type: "string" as const } } },
  content: { "text/csv": { schema: z.string() }, "application/x-ndjson": { schema: z.string() } },
};

/** The walk of one domain's export: its page reader, once the filters are checked (a bad one is a 422 before any byte). */
type ExportWalk<Q> = (ctx: ServiceContext, q: Q) => Promise<(cursor: string | null, size: number) => Promise<ExportPage>>;

/**
 * One list's export route (its document and its handler): the list's own read permission besides `exports:read`,
 * then the walk streamed as CSV or NDJSON. Mounted before its domain's routes in the group (app.ts), so
 * /v1/contacts/export is not taken for /v1/contacts/{id}.
 */
function exportRoutes<Q extends z.ZodObject>(o: {
  operationId: string;
  path: string;
  tag: string;
  what: string;
  list: string;
  query: Q;
  permission: Permission;
  schema: z.ZodType;
  object: CustomFieldObject;
  walk: ExportWalk<z.infer<Q>>;
}) {
  const route = defineRoute(CRM, {
    operationId: o.operationId,
    method: "get",
    path: o.path,
    tags: [o.tag],
    security,
    summary: `Export ${o.what} as CSV or NDJSON`,
    description: DESCRIPTION(o.what, o.list),
    request: { query: o.query },
    responses: { 200: EXPORTED },
  });
  return new OpenAPIHono<AppBindings>({ defaultHook: validationHook }).openapi(route, async (c) => {
    requirePermission(c, o.permission);
    // The route's type is generic here, so its validated query is named by hand (the route's own schema validated it).
    const q = (c.req.valid.bind(c.req) as (target: "query") => z.infer<Q> & { format: ExportFormat })("query");
    const ctx = serviceContext(c);
    // Every custom field defined is a CSV column, whether or not the first rows carry a value for it.
    const [pageOf, defined] = await Promise.all([o.walk(ctx, q), q.format === "csv" ? readDefinitions(ctx, o.object) : []]);
    const customColumns = defined.map((d) => `customFields.${d.key}`);
    return new Response(
      exportStream(q.format, o.schema, (cursor) => pageOf(cursor, EXPORT_PAGE), customColumns),
      { headers: exportHeaders(o.what, q.format) },
    ) as never;
  });
}

export const contactExportRoutes = exportRoutes({
  operationId: "exportContacts",
  path: "/v1/contacts/export",
  tag: "Contacts",
  what: "contacts",
  list: "/v1/contacts",
  query: ContactExportQuery,
  permission: "contacts:read",
  schema: Contact,
  object: "contact",
  walk: contactExportWalk,
});
export const dealExportRoutes = exportRoutes({
  operationId: "exportDeals",
  path: "/v1/deals/export",
  tag: "Deals",
  what: "deals",
  list: "/v1/deals",
  query: DealExportQuery,
  permission: "deals:read",
  schema: Deal,
  object: "deal",
  walk: dealExportWalk,
});
export const propertyExportRoutes = exportRoutes({
  operationId: "exportProperties",
  path: "/v1/properties/export",
  tag: "Properties",
  what: "properties",
  list: "/v1/properties",
  query: PropertyExportQuery,
  permission: "properties:read",
  schema: Property,
  object: "property",
  walk: propertyExportWalk,
});

const start = defineRoute(CRM, {
  operationId: "createOrganizationExport",
  method: "post",
  path: "/v1/organization/export",
  tags: ["Organization"],
  security,
  summary: "Export the whole organization as one zip",
  description:
    "Starts a job that writes one `.zip` to storage: NDJSON per table of every record the organization holds (credentials left out) and every file (deal documents, property photos and reports, envelopes' documents, certificates and the sealed PDFs of signed envelopes). When it is done, whoever asked is mailed a download link valid 7 days (the zip is deleted when it expires); `GET /v1/organization/exports/{id}` shows its progress. One export per organization may be queued or running at a time. Owners and admins only (403 `insufficient_role` for an agent), with `exports:read`.",
  responses: {
    202: crmSuccess("The export job, queued", OrganizationExport),
    409: crmError(
      "An export of your organization is already queued or running (export_running; `errors[0].message` is its id); ask again once it has ended",
    ),
  },
});

const status = defineRoute(CRM, {
  operationId: "getOrganizationExport",
  method: "get",
  path: "/v1/organization/exports/{id}",
  tags: ["Organization"],
  security,
  summary: "An organization export's status and progress",
  description: "Needs `exports:read`.",
  request: { params: ExportIdParam },
  responses: {
    200: crmSuccess("The export job", OrganizationExport),
    404: crmError("No export with this id in your organization (not_found_error)"),
  },
});

export const organizationExportRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(start, async (c) =>
    c.json({ success: true as const, data: await startOrganizationExport(serviceContext(c), c.get("user").role) }, 202),
  )
  .openapi(status, async (c) =>
    c.json({ success: true as const, data: await getOrganizationExport(serviceContext(c), c.req.valid("param").id) }, 200),
  );

const download = defineRoute(API, {
  operationId: "downloadOrganizationExport",
  security: [],
  method: "get",
  path: "/api/public/exports/{organizationId}/{token}",
  tags: ["Organization"],
  summary: "Download an organization export through its mailed link",
  description:
    "The link mailed when an organization export completes; it lives 7 days. A wrong, expired or deleted link answers 404 alike.",
  middleware: [rateLimit("public-exports:get")] as const,
  request: { params: DownloadParams },
  responses: {
    200: { description: "The zip", content: { "application/zip": { schema: z.string().openapi({ format: "binary" }) } } },
    404: apiError("Invalid, expired or deleted link"),
    429: apiError("Too many requests from this address (rate_limited)"),
  },
});

export const exportDownloadRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook }).openapi(download, async (c) => {
  const { organizationId, token } = c.req.valid("param");
  const placement = await placementOf(c.get("directory"), organizationId);
  if (placement) openShard(c, placement.shard);
  const object = placement ? await openDownload({ db: c.get("db"), files: c.env.FILES }, organizationId, token) : null;
  if (!object) return c.json({ error: "not_found", message: "This link is invalid or has expired" }, 404);
  return new Response(object.body, {
    headers: {
      "content-type": "application/zip",
      "content-disposition": object.httpMetadata?.contentDisposition ?? "attachment",
      "content-length": String(object.size),
      "cache-control": "no-store",
    },
  }) as never;
});
