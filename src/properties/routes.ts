import { CUSTOM_FILTER_DOC } from "../crm/custom-fields";
import { NoQuery } from "../crm/list-query";
import { OpenAPIHono, z } from "@hono/zod-openapi";
import { CRM, CRM_FILES_NOT_CONFIGURED, CRM_PRECONDITION_ERROR, crmDeleted, crmError, crmSuccess, keptAnswer, Page } from "../crm/body";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { ETAG_HEADER, withEtag } from "../platform/etag";
import { validationHook } from "../platform/openapi";
import { rateLimit } from "../platform/rate-limit";
import { defineRoute, jsonBody } from "../platform/route";
import { getAnalytics, recordSignal } from "./analytics";
import { syncFromMls } from "./mls";
import { MAX_PHOTO_BYTES, MAX_PHOTOS_PER_UPLOAD, reorderPhotos, uploadPhotos } from "./photos";
import { createReport, REPORT_URL_TTL_SECONDS } from "./reports";
import {
  AnalyticsQuery,
  IdParam,
  MAX_PHOTOS,
  PhotoOrder,
  PhotoUploadForm,
  Property,
  PropertyAnalytics,
  PropertyCreate,
  PropertyListQuery,
  PropertyPhoto,
  PropertyReadQuery,
  PropertySignal,
  PropertyUpdate,
  Report,
  ReportRequest,
  SignalRecorded,
  SyncResult,
  Valuation,
} from "./schemas";
import { createProperty, deleteProperty, getProperty, listProperties, restoreProperty, updateProperty } from "./service";
import { RESTORE_DAYS } from "../crm/trash";
import { latestValuation, requestValuation, VALUATION_METHOD } from "./valuation";

const tags = ["Properties"];
const security = [{ bearerAuth: [] }];
const NOT_FOUND = { 404: crmError("No property with this id in your organization (not_found)") };
const CONTENDED = { 409: crmError("Changed by too many requests at once (concurrent_modification); retry") };
const CONDITIONAL = "Send the property's ETag in `If-Match` to make the write conditional: 412 when it has changed since.";
const LISTING_RULES = `Listing rules: a new listing is ACTIVE with daysOnMarket 0, listDate today (or the past date given) and a LISTED
entry in priceHistory. A listPrice change appends PRICE_REDUCTION or PRICE_INCREASE and emits property.price_changed; a
status change emits property.status_changed, and into SOLD records soldPrice (default listPrice) and soldDate (default
today). daysOnMarket counts from listDate while ACTIVE or PENDING and keeps its last count in other statuses. Read-only
fields (id, organizationId, createdAt, updatedAt, valuation, analytics, listing.priceHistory, listing.daysOnMarket) are
ignored, so a fetched property can be sent back; unknown fields are a 422.`;

const list = defineRoute(CRM, {
  operationId: "listProperties",
  method: "get",
  path: "/v1/properties",
  tags,
  security,
  summary: "List and search properties",
  description: `Keyset-paginated (pass \`pagination.nextCursor\` back as \`cursor\`). Every filter combines with the others.
\`bounds\` is a box (south-west corner, north-east corner; a west longitude greater than the east one crosses the antimeridian);
\`radius\` is great-circle distance, exact on a spherical Earth, correct across the antimeridian and around the poles.
Properties without coordinates never match a geo filter. Signed photo links (media.photos) come with include=photos.
Searching is this route: POST /v1/properties/search does not exist.${CUSTOM_FILTER_DOC}`,
  request: { query: PropertyListQuery },
  responses: {
    200: { description: "A page of properties", content: { "application/json": { schema: Page(Property) } } },
    ...CRM_FILES_NOT_CONFIGURED,
  },
});

const create = defineRoute(CRM, {
  operationId: "createProperty",
  method: "post",
  path: "/v1/properties",
  tags,
  security,
  summary: "Create a listing",
  description: LISTING_RULES,
  request: jsonBody(PropertyCreate),
  responses: {
    201: crmSuccess("The created property", Property, ETAG_HEADER),
    409: crmError("Another property of your organization has this mlsId (duplicate_mls_id)"),
  },
});

const read = defineRoute(CRM, {
  operationId: "getProperty",
  method: "get",
  path: "/v1/properties/{id}",
  tags,
  security,
  summary: "Read a property",
  description: "media.photos always carries signed links (valid 10 to 15 minutes).",
  request: { params: IdParam, query: PropertyReadQuery },
  responses: { 200: crmSuccess("The property", Property, ETAG_HEADER), ...NOT_FOUND, ...CRM_FILES_NOT_CONFIGURED },
});

const update = defineRoute(CRM, {
  operationId: "updateProperty",
  method: "put",
  path: "/v1/properties/{id}",
  tags,
  security,
  summary: "Update a property (partial groups)",
  description: `Any group, and within a group any field; null clears an optional field or group. Concurrent updates of different
fields all land. media.photos, when sent, is the whole photo list (see the schema). ${LISTING_RULES}\n\n${CONDITIONAL}`,
  request: { params: IdParam, ...jsonBody(PropertyUpdate) },
  responses: {
    200: crmSuccess("The updated property", Property, ETAG_HEADER),
    ...NOT_FOUND,
    409: crmError("Another property has this mlsId (duplicate_mls_id), or too many concurrent changes (concurrent_modification; retry)"),
    ...CRM_PRECONDITION_ERROR,
    ...CRM_FILES_NOT_CONFIGURED,
  },
});

const remove = defineRoute(CRM, {
  operationId: "deleteProperty",
  method: "delete",
  path: "/v1/properties/{id}",
  tags,
  security,
  summary: "Delete a property (to the trash)",
  description: `Moves the property with its photos, valuations and analytics to the trash: reads answer 404 and lists and
totals leave it out, and \`POST /v1/properties/{id}/restore\` brings it back as it was for ${RESTORE_DAYS} days, after which it is
purged with its files. Deals that name it show it as \`{id, deleted: true}\`. ${CONDITIONAL}`,
  request: { params: IdParam, query: NoQuery },
  responses: {
    200: crmDeleted,
    ...NOT_FOUND,
    ...CONTENDED,
    ...CRM_PRECONDITION_ERROR,
  },
});

const restore = defineRoute(CRM, {
  operationId: "restoreProperty",
  method: "post",
  path: "/v1/properties/{id}/restore",
  tags,
  security,
  summary: "Restore a property from the trash",
  description: `Within ${RESTORE_DAYS} days of its delete: the property returns as it was, with its photos, valuations and analytics (emits property.restored).`,
  request: { params: IdParam, query: NoQuery },
  responses: {
    200: crmSuccess("The restored property", Property, ETAG_HEADER),
    404: crmError("No property with this id in your organization's trash (not_found_error)"),
    409: crmError("Another property of your organization has its mlsId now (duplicate_mls_id)"),
  },
});

const upload = defineRoute(CRM, {
  operationId: "uploadPropertyPhotos",
  method: "post",
  path: "/v1/properties/{id}/photos",
  tags,
  security,
  summary: "Upload photos",
  description: `multipart/form-data: \`photos\` (a file, repeated; at most ${MAX_PHOTOS_PER_UPLOAD} per request, ${MAX_PHOTO_BYTES / 1024 / 1024} MiB each, 25 MiB
in all), \`captions\` (repeated, in the order of the files), \`order\` (one number, the first photo's position, or one per file;
default: after the existing photos). JPEG, PNG, GIF, WebP, AVIF and HEIC, judged by the file's bytes, not its name. A
property holds at most ${MAX_PHOTOS} photos. Emits property.photos_uploaded.`,
  request: { params: IdParam, body: { required: true, content: { "multipart/form-data": { schema: PhotoUploadForm } } } },
  responses: {
    201: crmSuccess("The uploaded photos, with signed links", z.array(PropertyPhoto)),
    ...NOT_FOUND,
    ...CONTENDED,
    ...CRM_PRECONDITION_ERROR,
    413: crmError(`A file over ${MAX_PHOTO_BYTES / 1024 / 1024} MiB, or a request over 25 MiB`),
    ...CRM_FILES_NOT_CONFIGURED,
  },
});

const reorder = defineRoute(CRM, {
  operationId: "reorderPropertyPhotos",
  method: "put",
  path: "/v1/properties/{id}/photos/order",
  tags,
  security,
  summary: "Reorder photos",
  description: `The named photos take the given order; the others keep theirs. ${CONDITIONAL}`,
  request: { params: IdParam, ...jsonBody(PhotoOrder) },
  responses: {
    200: crmSuccess("Every photo of the property, in display order", z.array(PropertyPhoto)),
    ...NOT_FOUND,
    ...CONTENDED,
    ...CRM_PRECONDITION_ERROR,
    ...CRM_FILES_NOT_CONFIGURED,
  },
});

const valuation = defineRoute(CRM, {
  operationId: "getPropertyValuation",
  method: "get",
  path: "/v1/properties/{id}/valuation",
  tags,
  security,
  summary: "The latest valuation",
  request: { params: IdParam },
  responses: {
    200: crmSuccess("The latest valuation", Valuation),
    404: crmError("No property with this id, or no valuation yet (not_found)"),
  },
});

const value = defineRoute(CRM, {
  operationId: "createPropertyValuation",
  method: "post",
  path: "/v1/properties/{id}/valuation",
  tags,
  security,
  summary: "Request a fresh valuation",
  description: `The method: ${VALUATION_METHOD}\n\nThe property's valuation group keeps the summary (property.updated).`,
  request: { params: IdParam },
  responses: {
    201: crmSuccess("The valuation", Valuation),
    ...NOT_FOUND,
    ...CONTENDED,
    422: crmError("Too few comparable sales (insufficient_comparables), or no size to value by (insufficient_data)"),
    ...CRM_PRECONDITION_ERROR,
  },
});

const analytics = defineRoute(CRM, {
  operationId: "getPropertyAnalytics",
  method: "get",
  path: "/v1/properties/{id}/analytics",
  tags,
  security,
  summary: "Engagement over a period",
  description: "From the signals recorded with POST …/signals; a figure nobody reported is 0. Days are UTC; the period includes today.",
  request: { params: IdParam, query: AnalyticsQuery },
  responses: { 200: crmSuccess("The figures", PropertyAnalytics), ...NOT_FOUND },
});

const signal = defineRoute(CRM, {
  operationId: "recordPropertySignal",
  method: "post",
  path: "/v1/properties/{id}/signals",
  tags,
  security,
  summary: "Record a view, save, share, inquiry, showing or offer",
  description: `Ours (the spec shows the analytics, not how they are fed): your listing pages and tools report engagement here. VIEW
counts a view (unique by visitorId, time on site, referrer); INQUIRY, SHOWING and OFFER also emit property.inquiry_received,
property.showing_scheduled and property.offer_received. With an Idempotency-Key a retried signal counts once. At most
600 signals a minute per listing. A signal does not change the property's version. ${CONDITIONAL}`,
  middleware: [rateLimit("property-signals:post", (c) => `${c.get("organization").id}:${c.req.param("id")}`)] as const,
  request: { params: IdParam, ...jsonBody(PropertySignal) },
  responses: {
    201: crmSuccess("Recorded", SignalRecorded),
    ...NOT_FOUND,
    ...CONTENDED,
    ...CRM_PRECONDITION_ERROR,
    429: crmError("More than 600 signals a minute for this listing (rate_limited)"),
  },
});

const sync = defineRoute(CRM, {
  operationId: "syncPropertyFromMls",
  method: "post",
  path: "/v1/properties/{id}/mls-sync",
  tags,
  security,
  summary: "Sync from the MLS",
  description: `Reads the listing whose RESO ListingKey or ListingId is the property's mlsId from the RESO Web API at MLS_API_URL
and applies ListPrice, OriginalListPrice, StandardStatus, ClosePrice, CloseDate, ListingContractDate, BedroomsTotal,
BathroomsTotalInteger, BathroomsHalf, LivingArea, LotSizeSquareFeet, YearBuilt, StoriesTotal, GarageYN, PoolPrivateYN,
WaterfrontYN, ParkingTotal, PropertyType/PropertySubType, the address fields, Latitude/Longitude, PublicRemarks,
AssociationFee, TaxAnnualAmount, TaxYear and VirtualTourURLUnbranded, with the events of a PUT. Nothing is written unless
the MLS answered with a listing.`,
  request: { params: IdParam },
  responses: {
    200: crmSuccess("What changed", SyncResult),
    ...NOT_FOUND,
    409: crmError("The property has no mlsId (mls_id_missing), or too many concurrent changes (concurrent_modification)"),
    422: crmError("The MLS has no listing with this mlsId (mls_listing_not_found)"),
    ...CRM_PRECONDITION_ERROR,
    502: crmError(
      "The MLS could not be reached (mls_unreachable), refused our credentials (mls_rejected), failed (mls_error) or sent values this API cannot take (mls_invalid_data)",
    ),
    503: crmError("MLS sync is not configured in this deployment (not_configured)"),
  },
});

const report = defineRoute(CRM, {
  operationId: "createPropertyReport",
  method: "post",
  path: "/v1/properties/{id}/reports",
  tags,
  security,
  summary: "Generate a PDF report",
  description: `MARKET_ANALYSIS (the property, its listing and the estimate from comparable sales) or LISTING_SHEET (the property, its
cover photo, description and features); includeComparables and includeMarketTrends add those sections. The link is valid
${REPORT_URL_TTL_SECONDS / 3600} hours.`,
  request: { params: IdParam, ...jsonBody(ReportRequest) },
  responses: { 201: crmSuccess("The report", Report), ...NOT_FOUND, ...CRM_FILES_NOT_CONFIGURED },
});

export const propertyRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(list, async (c) => c.json({ success: true as const, ...(await listProperties(serviceContext(c), c.req.valid("query"))) }, 200))
  .openapi(create, async (c) =>
    c.json({ success: true as const, data: withEtag(c, await createProperty(serviceContext(c), c.req.valid("json"))) }, 201),
  )
  .openapi(read, async (c) =>
    c.json(
      {
        success: true as const,
        data: withEtag(c, await getProperty(serviceContext(c), c.req.valid("param").id, c.req.valid("query").include)),
      },
      200,
    ),
  )
  .openapi(update, async (c) => {
    const { ctx, answer } = keptAnswer<Property>(c, 200);
    return c.json(answer(withEtag(c, await updateProperty(ctx, c.req.valid("param").id, c.req.valid("json")))), 200);
  })
  .openapi(remove, async (c) => {
    const { id } = c.req.valid("param");
    await deleteProperty(serviceContext(c), id);
    return c.json({ success: true as const, message: "Property deleted", data: { id, deleted: true as const } }, 200);
  })
  .openapi(restore, async (c) =>
    c.json({ success: true as const, data: withEtag(c, await restoreProperty(serviceContext(c), c.req.valid("param").id)) }, 200),
  )
  .openapi(upload, async (c) => {
    const form = c.req.valid("form");
    const { ctx, answer } = keptAnswer<PropertyPhoto[]>(c, 201);
    return c.json(
      answer(
        await uploadPhotos(ctx, c.req.valid("param").id, { photos: form.photos, captions: form.captions ?? [], order: form.order ?? [] }),
      ),
      201,
    );
  })
  .openapi(reorder, async (c) =>
    c.json(
      { success: true as const, data: await reorderPhotos(serviceContext(c), c.req.valid("param").id, c.req.valid("json").photoOrder) },
      200,
    ),
  )
  .openapi(valuation, async (c) =>
    c.json({ success: true as const, data: await latestValuation(serviceContext(c), c.req.valid("param").id) }, 200),
  )
  .openapi(value, async (c) =>
    c.json({ success: true as const, data: await requestValuation(serviceContext(c), c.req.valid("param").id) }, 201),
  )
  .openapi(analytics, async (c) =>
    c.json(
      { success: true as const, data: await getAnalytics(serviceContext(c), c.req.valid("param").id, c.req.valid("query").period) },
      200,
    ),
  )
  .openapi(signal, async (c) =>
    c.json({ success: true as const, data: await recordSignal(serviceContext(c), c.req.valid("param").id, c.req.valid("json")) }, 201),
  )
  .openapi(sync, async (c) => c.json({ success: true as const, data: await syncFromMls(serviceContext(c), c.req.valid("param").id) }, 200))
  .openapi(report, async (c) =>
    c.json({ success: true as const, data: await createReport(serviceContext(c), c.req.valid("param").id, c.req.valid("json")) }, 201),
  );
