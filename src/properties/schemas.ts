import { z } from "@hono/zod-openapi";
import { sortParam } from "../crm/keyset";
import { CUSTOM_SORT, CustomFieldsInput, CustomFieldValues, type CustomSortField, withCustomFieldParams } from "../crm/custom-fields";
import { exportQuery } from "../crm/export";
import { csv, decimalParam as decimal, intParam, listQuery } from "../crm/list-query";
import { searchParam } from "../crm/search";
import { PROPERTY_TYPES } from "../contacts/schemas";
import { oneLineText, pattern } from "../lib/validation";

export { PROPERTY_TYPES };
export const LISTING_STATUSES = ["ACTIVE", "PENDING", "SOLD", "EXPIRED", "WITHDRAWN", "CANCELLED", "COMING_SOON"] as const;
export type ListingStatus = (typeof LISTING_STATUSES)[number];
/** Statuses that stop the days-on-market clock (ours: the spec does not say when it stops). */
export const OFF_MARKET: readonly ListingStatus[] = ["SOLD", "EXPIRED", "WITHDRAWN", "CANCELLED"];

const text = oneLineText;
const list = (item: z.ZodType<string, string>, max: number) => z.array(item).max(max);
const httpsUrl = z.url({ protocol: /^https$/, message: "Must be an https URL" }).max(2000);
const money = (max: number) => z.number().nonnegative().max(max);
const price = z.number().positive().max(1e11);
const fraction = z.number().min(0).max(1);
const isoDate = pattern(/^(19|2\d)\d{2}-\d{2}-\d{2}$/, "invalid_date", "Must be a date YYYY-MM-DD from 1900 on").refine(
  (d) => !Number.isNaN(Date.parse(`${d}T00:00:00Z`)) && new Date(`${d}T00:00:00Z`).toISOString().startsWith(d),
  {
    message: "Not a calendar date",
    params: { code: "invalid_date" },
  },
);
const notFuture = (d: string) => d <= new Date().toISOString().slice(0, 10);

export const Coordinates = z
  .strictObject({ latitude: z.number().min(-90).max(90), longitude: z.number().min(-180).max(180) })
  .openapi("PropertyCoordinates");

// Each group once as a shape: the create body requires some fields, the PUT body takes any of them (null clears an
// optional one), and the response shows what is stored plus the derived fields.
const addressShape = {
  street: text(200),
  unit: text(50).nullable(),
  city: text(100),
  state: text(100),
  zipCode: pattern(/^[A-Za-z0-9][A-Za-z0-9 -]{1,11}$/, "invalid_zip_code", "Must be a postal code (letters, digits, spaces and dashes)"),
  county: text(100).nullable(),
  country: text(100).nullable(),
  coordinates: Coordinates.nullable(),
};

/** At most five years ahead (a build not finished yet), judged when the request comes: at module load workerd's clock reads 1970. */
const notTooFarAhead = (year: number) => year <= new Date().getUTCFullYear() + 5;
const detailsShape = {
  propertyType: z.enum(PROPERTY_TYPES),
  propertySubType: text(100).nullable(),
  bedrooms: z.int().min(0).max(100).nullable(),
  bathrooms: z.number().min(0).max(100).multipleOf(0.25).nullable(),
  halfBaths: z.int().min(0).max(100).nullable(),
  squareFootage: z.int().min(1).max(10_000_000).nullable(),
  lotSize: z.number().nonnegative().max(1e10).nullable().openapi({ description: "Square feet" }),
  yearBuilt: z
    .int()
    .min(1600)
    .max(2200)
    .refine(notTooFarAhead, { message: "At most five years from now", params: { code: "too_big" } })
    .nullable(),
  stories: z.int().min(0).max(200).nullable(),
  garage: z.boolean(),
  parking: z.strictObject({ spaces: z.int().min(0).max(10_000).optional(), type: text(50).optional() }).nullable(),
  pool: z.boolean(),
  waterfront: z.boolean(),
  view: text(100).nullable(),
};

const Agent = z.strictObject({
  id: z.string().min(1).max(100).optional().openapi({ description: "A user of your organization; name and email default to theirs" }),
  name: text(200).optional(),
  email: z.email().max(254).optional(),
  phone: pattern(/^\+?(?=[ ().-]*[0-9])[0-9 ().-]{3,30}( ?(x|ext\.?) ?\d{1,6})?$/i, "invalid_phone", "Invalid phone number").optional(),
});
export const Commission = z
  .strictObject({ buyerAgent: fraction.optional(), listingAgent: fraction.optional(), total: fraction.optional() })
  .refine(
    (c) =>
      c.total === undefined ||
      c.buyerAgent === undefined ||
      c.listingAgent === undefined ||
      Math.abs(c.buyerAgent + c.listingAgent - c.total) < 1e-9,
    {
      message: "total must equal buyerAgent + listingAgent",
      path: ["total"],
      params: { code: "invalid_commission" },
    },
  );

const listingShape = {
  status: z.enum(LISTING_STATUSES),
  listPrice: price,
  originalPrice: price,
  listDate: isoDate.refine(notFuture, { message: "listDate cannot be in the future", params: { code: "invalid_date" } }),
  listingAgent: Agent.nullable(),
  coListingAgent: Agent.omit({ phone: true }).nullable(),
  commission: Commission.nullable().openapi({ description: "Fractions of the price (0.03 is 3%)" }),
  soldPrice: price.nullable().openapi({ description: "Ours: the closing price; defaults to listPrice when the status moves to SOLD" }),
  soldDate: isoDate.refine(notFuture, { message: "soldDate cannot be in the future", params: { code: "invalid_date" } }).nullable(),
};

const featuresShape = { interior: list(text(100), 100), exterior: list(text(100), 100), appliances: list(text(100), 100) };
/**
 * A photo entry of media.photos in a write: with an id it names a photo the property has (an upload or an earlier
 * link; caption and order may change), without one it links a new photo by https URL.
 */
const PhotoEntry = z
  .strictObject({
    id: z.string().min(1).max(100).optional(),
    url: z.string().max(2000).optional(),
    caption: text(300).nullable().optional(),
    order: z.int().min(0).max(10_000).optional(),
    uploadedAt: z.unknown().optional(),
  })
  .superRefine((p, ctx) => {
    if (p.id !== undefined) return;
    if (!httpsUrl.safeParse(p.url).success)
      ctx.addIssue({ code: "custom", path: ["url"], message: "A new photo needs an https url", params: { code: "invalid_url" } });
  });
export type PhotoEntry = z.infer<typeof PhotoEntry>;
export const MAX_PHOTOS = 50;
const mediaShape = {
  photos: z
    .array(PhotoEntry)
    .max(MAX_PHOTOS)
    .refine(
      (list) => {
        const ids = list.flatMap((p) => (p.id ? [p.id] : []));
        return new Set(ids).size === ids.length;
      },
      { message: "A photo appears twice", params: { code: "duplicate_photo" } },
    )
    .openapi({
      description:
        "The whole list: entries with an id keep that photo (caption and order may change), entries without one link a photo by https URL, photos left out are removed. Uploads go through POST …/photos.",
    }),
  virtualTour: httpsUrl.nullable(),
  videos: z.array(z.strictObject({ url: httpsUrl, type: text(30).optional() })).max(20),
};
const OpenHouse = z
  .strictObject({
    date: z.iso.datetime({ offset: true }),
    endTime: z.iso.datetime({ offset: true }),
    type: pattern(/^[A-Z][A-Z0-9_]{0,29}$/, "invalid_code", "An UPPER_SNAKE_CASE code, e.g. PUBLIC, BROKER, VIRTUAL").optional(),
  })
  .refine((o) => Date.parse(o.endTime) > Date.parse(o.date), {
    message: "endTime must be after date",
    path: ["endTime"],
    params: { code: "invalid_range" },
  });
const marketingShape = {
  description: z.string().max(10_000).nullable(),
  keywordTags: list(text(50), 50),
  showingInstructions: z.string().max(2000).nullable(),
  virtualShowings: z.boolean(),
  openHouses: z.array(OpenHouse).max(20),
};
const hoaShape = { monthlyFee: money(1e7).nullable(), includes: list(text(100), 50), restrictions: list(text(500), 50) };
const taxesShape = {
  annualAmount: money(1e9).nullable(),
  taxYear: z.int().min(1900).max(2100).nullable(),
  exemptions: list(text(100), 20),
};
const disclosureShape = {
  floodZone: text(50).nullable(),
  environmental: list(text(1000), 50),
  structural: list(text(1000), 50),
  other: list(text(1000), 50),
};

/** Read-only fields a client may echo back; they are ignored, so a fetched property can be sent back as is. */
export const READ_ONLY_FIELDS = [
  "id",
  "organizationId",
  "createdAt",
  "updatedAt",
  "valuation",
  "analytics",
  "agent",
  "comparables",
] as const;
const ignored = <K extends string>(keys: readonly K[]) =>
  Object.fromEntries(keys.map((k) => [k, z.unknown().optional()])) as Record<K, z.ZodOptional<z.ZodUnknown>>;
const listingReadOnly = ignored(["priceHistory", "daysOnMarket"] as const);

const patch = <S extends z.ZodRawShape>(shape: S) => z.strictObject(shape).partial();

export const mlsId = pattern(
  /^[A-Za-z0-9][A-Za-z0-9._-]{0,49}$/,
  "invalid_mls_id",
  "Letters, digits, dot, dash and underscore, at most 50",
);

export const PropertyCreate = z
  .strictObject({
    mlsId: mlsId.nullable().optional(),
    address: patch(addressShape).required({ street: true, city: true, state: true, zipCode: true }),
    details: patch(detailsShape).required({ propertyType: true }),
    listing: z.strictObject({
      ...patch(listingShape).omit({ status: true, soldPrice: true, soldDate: true }).shape,
      listPrice: listingShape.listPrice,
      status: z.literal("ACTIVE", { message: "A new listing starts ACTIVE; change its status with PUT" }).optional(),
      ...listingReadOnly,
    }),
    features: patch(featuresShape).optional(),
    media: patch(mediaShape).optional(),
    marketing: patch(marketingShape).optional(),
    hoa: patch(hoaShape).optional(),
    taxes: patch(taxesShape).optional(),
    disclosure: patch(disclosureShape).optional(),
    customFields: CustomFieldsInput.optional(),
    ...ignored(READ_ONLY_FIELDS),
  })
  .openapi("PropertyCreate");
export type PropertyCreate = z.infer<typeof PropertyCreate>;

export const PropertyUpdate = z
  .strictObject({
    mlsId: mlsId.nullable().optional(),
    address: patch(addressShape).optional(),
    details: patch(detailsShape).optional(),
    listing: z.strictObject({ ...patch(listingShape).shape, ...listingReadOnly }).optional(),
    features: patch(featuresShape).nullable().optional(),
    media: patch(mediaShape).nullable().optional(),
    marketing: patch(marketingShape).nullable().optional(),
    hoa: patch(hoaShape).nullable().optional(),
    taxes: patch(taxesShape).nullable().optional(),
    disclosure: patch(disclosureShape).nullable().optional(),
    customFields: CustomFieldsInput.optional(),
    ...ignored(READ_ONLY_FIELDS),
  })
  .openapi("PropertyUpdate");
export type PropertyUpdate = z.infer<typeof PropertyUpdate>;

export const PRICE_EVENTS = ["LISTED", "PRICE_REDUCTION", "PRICE_INCREASE", "SOLD"] as const;
export const PriceHistoryEntry = z.object({ price: z.number(), date: z.string(), event: z.enum(PRICE_EVENTS) });
export type PriceHistoryEntry = z.infer<typeof PriceHistoryEntry>;

export const PropertyPhoto = z
  .object({ id: z.string(), url: z.string(), caption: z.string().nullable(), order: z.int(), uploadedAt: z.string() })
  .openapi("PropertyPhoto", {
    description: "Uploaded photos have signed links that expire (15 minutes); read the property again for fresh ones",
  });
export type PropertyPhoto = z.infer<typeof PropertyPhoto>;

const out = <S extends z.ZodRawShape>(shape: S) => z.object(shape).partial();
export const PropertyAnalyticsSummary = z.object({
  views: z.int(),
  inquiries: z.int(),
  showings: z.int(),
  offers: z.int(),
  saveCount: z.int(),
  averageTimeOnSite: z.number().nullable(),
});
export const ListingAgentProfile = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    email: z.string(),
    profileSlug: z.string().nullable(),
    averageRating: z.number().nullable(),
    totalReviews: z.int(),
  })
  .openapi("PropertyAgent");

export const Property = z
  .object({
    id: z.string(),
    organizationId: z.string(),
    mlsId: z.string().nullable(),
    address: out(addressShape),
    details: out(detailsShape),
    listing: out(listingShape).extend({ priceHistory: z.array(PriceHistoryEntry), daysOnMarket: z.int() }),
    features: out(featuresShape).nullable(),
    media: out({ ...mediaShape, photos: z.array(PropertyPhoto) }).openapi({
      description: "media.photos is always present on a single property; lists show it with include=photos",
    }),
    valuation: z
      .object({
        estimatedValue: z.number(),
        confidence: z.int(),
        valuationDate: z.string(),
        pricePerSquareFoot: z.number(),
        comparables: z.array(
          z.object({ address: z.string(), soldPrice: z.number(), soldDate: z.string(), squareFootage: z.int().nullable() }),
        ),
      })
      .nullable(),
    marketing: out(marketingShape).nullable(),
    analytics: PropertyAnalyticsSummary.optional().openapi({ description: "With include=analytics" }),
    hoa: out(hoaShape).nullable(),
    taxes: out(taxesShape).nullable(),
    disclosure: out(disclosureShape).nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    customFields: CustomFieldValues,
    agent: ListingAgentProfile.nullable().optional().openapi({
      description: "With include=agent: the listing agent's user and public profile, null when the listing agent is not a user",
    }),
    comparables: z
      .array(z.unknown())
      .optional()
      .openapi({ description: "With include=comparables (single property): the comparables of the latest valuation" }),
  })
  .openapi("Property");
export type Property = z.infer<typeof Property>;

export const IdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .openapi({ param: { name: "id", in: "path" } }),
});

const bool = z.enum(["true", "false"]).transform((v) => v === "true");
const numbers = (n: number, what: string) =>
  z
    .string()
    .max(200)
    .transform((v) => v.split(",").map((s) => s.trim()))
    .refine((parts) => parts.length === n && parts.every((p) => /^-?\d{1,4}(\.\d{1,12})?$/.test(p)), {
      message: `Must be ${what}`,
      params: { code: "invalid_geo" },
    })
    .transform((parts) => parts.map(Number));

export const Bounds = numbers(4, "lat1,lng1,lat2,lng2: the south-west and north-east corners")
  .refine(([s, w, n, e]) => [s, n].every((v) => Math.abs(v!) <= 90) && [w, e].every((v) => Math.abs(v!) <= 180), {
    message: "Latitudes within ±90, longitudes within ±180",
    params: { code: "invalid_geo" },
  })
  .refine(([s, , n]) => s! <= n!, { message: "lat1 (south) must not exceed lat2 (north)", params: { code: "invalid_geo" } })
  .transform(([south, west, north, east]) => ({ south: south!, west: west!, north: north!, east: east! }));
export const Radius = numbers(3, "lat,lng,miles")
  .refine(([lat, lng]) => Math.abs(lat!) <= 90 && Math.abs(lng!) <= 180, {
    message: "Latitude within ±90, longitude within ±180",
    params: { code: "invalid_geo" },
  })
  .refine(([, , miles]) => miles! > 0 && miles! <= 500, {
    message: "miles must be above 0 and at most 500",
    params: { code: "invalid_geo" },
  })
  .transform(([latitude, longitude, miles]) => ({ latitude: latitude!, longitude: longitude!, miles: miles! }));

export const SORT_FIELDS = ["createdAt", "updatedAt", "listPrice", "listDate"] as const;
export type SortField = (typeof SORT_FIELDS)[number];
export const LIST_INCLUDES = ["agent", "photos", "analytics"] as const;
export const READ_INCLUDES = ["photos", "agent", "analytics", "comparables"] as const;
export type Include = (typeof READ_INCLUDES)[number];

const propertyFilters = {
  q: searchParam(false, "the street, unit, city, state and zip code of the address, and the MLS id"),
  propertyType: z.enum(PROPERTY_TYPES).optional(),
  status: z.enum(LISTING_STATUSES).optional(),
  city: text(100).optional().openapi({ description: "Case-insensitive" }),
  state: text(100).optional(),
  zipCode: text(20).optional(),
  "bedrooms[gte]": intParam(0, 100).optional(),
  "bathrooms[gte]": decimal(0, 100).optional(),
  "squareFootage[gte]": intParam(0, 10_000_000).optional(),
  "listPrice[gte]": decimal(0, 1e11).optional(),
  "listPrice[lte]": decimal(0, 1e11).optional(),
  "daysOnMarket[lte]": intParam(0, 100_000).optional(),
  waterfront: bool.optional(),
  pool: bool.optional(),
  garage: bool.optional(),
  bounds: Bounds.optional().openapi({
    type: "string",
    example: "25.70,-80.30,25.85,-80.10",
    description: "South-west then north-east corner; a west longitude above the east one crosses the antimeridian",
  }),
  radius: Radius.optional().openapi({
    type: "string",
    example: "25.76,-80.19,5",
    description: "Great-circle distance in miles (at most 500) from lat,lng",
  }),
  sort: sortParam<SortField, CustomSortField>(SORT_FIELDS, "listPrice:asc", CUSTOM_SORT),
};
const priceRange = (q: { "listPrice[gte]"?: number; "listPrice[lte]"?: number }, ctx: z.RefinementCtx) => {
  const lo = q["listPrice[gte]"];
  const hi = q["listPrice[lte]"];
  if (lo !== undefined && hi !== undefined && lo > hi)
    ctx.addIssue({
      code: "custom",
      path: ["listPrice[gte]"],
      message: "listPrice[gte] exceeds listPrice[lte]",
      params: { code: "invalid_range" },
    });
};
export const PropertyListQuery = withCustomFieldParams(
  listQuery({ ...propertyFilters, include: csv(z.enum(LIST_INCLUDES)).optional().openapi({ type: "string", example: "agent,photos" }) }),
).superRefine(priceRange);
export type PropertyListQuery = z.infer<typeof PropertyListQuery>;
/** GET /v1/properties/export: the list's filters, `q` and sort, and the format. */
export const PropertyExportQuery = withCustomFieldParams(exportQuery(propertyFilters)).superRefine(priceRange);

export const PropertyReadQuery = z.strictObject({
  include: csv(z.enum(READ_INCLUDES)).optional().openapi({ type: "string", example: "agent,analytics" }),
});

export const Valuation = z
  .object({
    estimatedValue: z.number(),
    confidence: z
      .int()
      .min(0)
      .max(100)
      .openapi({ description: "0 to 100: grows with the number and similarity of comparables, falls with their spread" }),
    valuationDate: z.string(),
    pricePerSquareFoot: z.number(),
    priceRange: z.object({ low: z.number(), high: z.number() }),
    factors: z
      .object({ location: z.number(), size: z.number(), condition: z.number(), amenities: z.number(), market: z.number() })
      .openapi({ description: "How closely the comparables match the subject on each dimension, 0 to 1 (weighted like the estimate)" }),
    comparables: z.array(
      z.object({
        id: z.string(),
        address: z.string(),
        soldPrice: z.number(),
        soldDate: z.string(),
        squareFootage: z.number().nullable(),
        similarity: z.number(),
      }),
    ),
    marketTrends: z.object({
      appreciation: z
        .number()
        .nullable()
        .openapi({ description: "Annual change of the median price per square foot (0.05 is 5%); null with too few recent sales" }),
      averageDaysOnMarket: z.int().nullable(),
      pricePerSquareFoot: z.number(),
    }),
  })
  .openapi("PropertyValuation");
export type Valuation = z.infer<typeof Valuation>;

export const ANALYTICS_PERIODS = ["7d", "30d", "90d"] as const;
export const AnalyticsQuery = z.strictObject({ period: z.enum(ANALYTICS_PERIODS).default("30d").openapi({ description: "Default 30d" }) });
export const PropertyAnalytics = z
  .object({
    period: z.enum(ANALYTICS_PERIODS),
    views: z.int(),
    uniqueViews: z.int(),
    inquiries: z.int(),
    showings: z.int(),
    offers: z.int(),
    saveCount: z.int(),
    shareCount: z.int(),
    averageTimeOnSite: z.number().nullable().openapi({ description: "Seconds, over the views that reported it" }),
    conversionRate: z.number().openapi({ description: "Inquiries per 100 unique viewers" }),
    topReferrers: z.array(z.object({ source: z.string(), views: z.int(), percentage: z.number() })),
    viewsByDay: z.array(z.object({ date: z.string(), views: z.int() })),
  })
  .openapi("PropertyAnalytics");
export type PropertyAnalytics = z.infer<typeof PropertyAnalytics>;

export const SIGNAL_TYPES = ["VIEW", "SAVE", "SHARE", "INQUIRY", "SHOWING", "OFFER"] as const;
export type SignalType = (typeof SIGNAL_TYPES)[number];
export const PropertySignal = z
  .strictObject({
    type: z.enum(SIGNAL_TYPES),
    visitorId: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .openapi({ description: "Your stable id of the visitor (a cookie id); unique views count these. Stored only as a hash." }),
    referrer: z.string().max(2000).optional().openapi({ description: "The referring URL or a source name; reported by host" }),
    timeOnSiteSeconds: z.int().min(0).max(86_400).optional(),
    contactId: z.string().min(1).max(100).optional().openapi({ description: "INQUIRY, SHOWING, OFFER: a contact of your organization" }),
    scheduledAt: z.iso.datetime({ offset: true }).optional().openapi({ description: "SHOWING: when" }),
    amount: z.number().positive().max(1e11).optional().openapi({ description: "OFFER: the offered price" }),
    message: z.string().max(2000).optional(),
  })
  .openapi("PropertySignal");
export type PropertySignal = z.infer<typeof PropertySignal>;
export const SignalRecorded = z.object({ type: z.enum(SIGNAL_TYPES), recordedAt: z.string(), eventId: z.string().nullable() });

export const PhotoOrder = z
  .strictObject({
    photoOrder: z
      .array(z.strictObject({ id: z.string().min(1).max(100), order: z.int().min(0).max(10_000) }))
      .min(1)
      .max(MAX_PHOTOS),
  })
  .refine((b) => new Set(b.photoOrder.map((p) => p.id)).size === b.photoOrder.length, {
    message: "A photo appears twice",
    path: ["photoOrder"],
    params: { code: "duplicate_photo" },
  })
  .openapi("PropertyPhotoOrder");

export const SyncResult = z
  .object({
    mlsId: z.string(),
    syncStatus: z.literal("COMPLETED"),
    syncedAt: z.string(),
    changes: z.array(z.object({ field: z.string(), oldValue: z.unknown(), newValue: z.unknown() })),
  })
  .openapi("PropertySyncResult");
export type SyncResult = z.infer<typeof SyncResult>;

export const REPORT_TYPES = ["MARKET_ANALYSIS", "LISTING_SHEET"] as const;
export const ReportRequest = z
  .strictObject({
    reportType: z.enum(REPORT_TYPES),
    format: z.literal("PDF").default("PDF"),
    includeComparables: z.boolean().default(false),
    includeMarketTrends: z.boolean().default(false),
  })
  .openapi("PropertyReportRequest");
export type ReportRequest = z.infer<typeof ReportRequest>;
export const Report = z
  .object({
    reportId: z.string(),
    reportType: z.enum(REPORT_TYPES),
    format: z.literal("PDF"),
    url: z.string(),
    generatedAt: z.string(),
    expiresAt: z.string().openapi({ description: "When the link expires" }),
  })
  .openapi("PropertyReport");
export type Report = z.infer<typeof Report>;

/** The multipart body of a photo upload, as Hono's form parser hands it over (a repeated field is an array). */
const many = <T extends z.ZodType>(item: T) => z.preprocess((v) => (v === undefined ? [] : Array.isArray(v) ? v : [v]), z.array(item));
export const PhotoUploadForm = z
  .strictObject({
    photos: many(z.instanceof(File, { message: "Must be a file" })).openapi({ type: "array", items: { type: "string", format: "binary" } }),
    captions: many(z.union([z.literal(""), text(300)]))
      .optional()
      .openapi({ type: "array", items: { type: "string" } }),
    order: many(
      pattern(/^\d{1,5}$/, "invalid_integer", "Must be a whole number")
        .transform(Number)
        .pipe(z.int().max(10_000)),
    )
      .optional()
      .openapi({ type: "array", items: { type: "integer" } }),
  })
  .openapi("PropertyPhotoUpload");
