import { z } from "zod";
import { Pagination } from "../crm/body";
import { getAnalytics } from "../properties/analytics";
import {
  ANALYTICS_PERIODS,
  AnalyticsQuery,
  LIST_INCLUDES,
  LISTING_STATUSES,
  Property,
  PROPERTY_TYPES,
  PropertyAnalytics,
  PropertyCreate,
  PropertyListQuery,
  PropertyReadQuery,
  PropertyUpdate,
  READ_INCLUDES,
  READ_ONLY_FIELDS,
  SORT_FIELDS,
  Valuation,
} from "../properties/schemas";
import { createProperty, getProperty, listProperties, updateProperty } from "../properties/service";
import { requestValuation } from "../properties/valuation";
import { defineTool, definedOnly, listInputs, listParams, parseWith, requireEmbeds } from "./tool";

const propertyId = z.string().min(1).max(100).describe("The property's id");
/** A number as the route's decimal query parameters spell it: no exponent, at most `places` decimals. */
const decimal = (n: number | undefined, places = 8) => (n === undefined ? undefined : n.toFixed(places).replace(/\.?0+$/, ""));
const flag = (b: boolean | undefined) => b?.toString();
const latitude = z.number().min(-90).max(90);
const longitude = z.number().min(-180).max(180);

/** The list filters of GET /v1/properties with JSON types instead of query strings; mapped onto the route's query below. */
const FindPropertiesInput = z.strictObject({
  query: z
    .string()
    .max(200)
    .optional()
    .describe("Words to find in the address (street, unit, city, state, zip code) and the MLS id, each as the start of a word"),
  propertyType: z.enum(PROPERTY_TYPES).optional(),
  status: z.enum(LISTING_STATUSES).optional(),
  city: z.string().min(1).max(100).optional().describe("Exactly this city, in any case"),
  state: z.string().min(1).max(100).optional(),
  zipCode: z.string().min(1).max(20).optional(),
  minBedrooms: z.int().min(0).max(100).optional(),
  minBathrooms: z.number().min(0).max(100).optional(),
  minSquareFootage: z.int().min(0).max(10_000_000).optional(),
  minListPrice: z.number().min(0).max(1e11).optional(),
  maxListPrice: z.number().min(0).max(1e11).optional(),
  maxDaysOnMarket: z.int().min(0).max(100_000).optional(),
  waterfront: z.boolean().optional(),
  pool: z.boolean().optional(),
  garage: z.boolean().optional(),
  bounds: z
    .strictObject({ south: latitude, west: longitude, north: latitude, east: longitude })
    .optional()
    .describe(
      "A box by its corners; a west longitude above the east one crosses the antimeridian. Listings without coordinates never match",
    ),
  radius: z
    .strictObject({ latitude, longitude, miles: z.number().gt(0).max(500) })
    .optional()
    .describe("Great-circle distance from a point. Listings without coordinates never match"),
  customFields: z
    .record(z.string().max(60), z.string().max(200))
    .optional()
    .describe(
      'Custom field filters by key, as the list route takes them: {"budget[gte]": "400000", "pre_approved": "true"} (operators gte, lte, gt, lt)',
    ),
  include: z
    .array(z.enum(LIST_INCLUDES))
    .min(1)
    .max(LIST_INCLUDES.length)
    .optional()
    .describe("Embed each listing's agent profile, photos (signed links) or engagement summary"),
  ...listInputs(SORT_FIELDS),
});

export const findProperties = defineTool({
  name: "find_properties",
  route: "GET /v1/properties",
  title: "Find property listings",
  description:
    "Lists the organization's property listings matching every given filter (words of the address or MLS id, type, status, city, state, zip code, minimum bedrooms, bathrooms and size, price range, days on market, waterfront, pool, garage, a map box or a radius, custom fields), one keyset page at a time with a total.",
  permission: "properties:read",
  effect: "read",
  input: FindPropertiesInput,
  output: z.object({ properties: z.array(Property), pagination: Pagination }),
  async run(i, scope) {
    requireEmbeds(scope, i.include);
    const b = i.bounds;
    const r = i.radius;
    // Through the route's own query schema: the same bounds, range checks, geo checks and sort parsing as GET /v1/properties.
    const query = parseWith(
      PropertyListQuery,
      definedOnly({
        ...listParams(i),
        q: i.query,
        propertyType: i.propertyType,
        status: i.status,
        city: i.city,
        state: i.state,
        zipCode: i.zipCode,
        "bedrooms[gte]": i.minBedrooms?.toString(),
        "bathrooms[gte]": decimal(i.minBathrooms),
        "squareFootage[gte]": i.minSquareFootage?.toString(),
        "listPrice[gte]": decimal(i.minListPrice),
        "listPrice[lte]": decimal(i.maxListPrice),
        "daysOnMarket[lte]": i.maxDaysOnMarket?.toString(),
        waterfront: flag(i.waterfront),
        pool: flag(i.pool),
        garage: flag(i.garage),
        bounds: b && [b.south, b.west, b.north, b.east].map((v) => decimal(v, 12)).join(","),
        radius: r && [decimal(r.latitude, 12), decimal(r.longitude, 12), decimal(r.miles, 12)].join(","),
        include: i.include?.join(","),
        ...Object.fromEntries(Object.entries(i.customFields ?? {}).map(([key, value]) => [`customFields.${key}`, value])),
      }),
    );
    const page = await listProperties(scope.ctx, query);
    return { properties: page.data, pagination: page.pagination };
  },
});

export const getPropertyTool = defineTool({
  name: "get_property",
  route: "GET /v1/properties/{id}",
  title: "Read a property listing",
  description:
    "One property listing whole: address, details, listing (price history, days on market), features, media (photos with signed links valid 10 to 15 minutes), the latest valuation's summary, marketing, HOA, taxes, disclosures and custom fields. include adds the listing agent's profile, an engagement summary or the latest valuation's comparables.",
  permission: "properties:read",
  effect: "read",
  input: z.strictObject({
    propertyId,
    include: z.array(z.enum(READ_INCLUDES)).min(1).max(READ_INCLUDES.length).optional(),
  }),
  output: z.object({ property: Property }),
  async run({ propertyId, include }, scope) {
    requireEmbeds(scope, include);
    const query = parseWith(PropertyReadQuery, definedOnly({ include: include?.join(",") }));
    return { property: await getProperty(scope.ctx, propertyId, query.include) };
  },
});

const READ_ONLY = Object.fromEntries(READ_ONLY_FIELDS.map((f) => [f, true] as const)) as Record<(typeof READ_ONLY_FIELDS)[number], true>;

export const createPropertyTool = defineTool({
  name: "create_property",
  route: "POST /v1/properties",
  title: "Create a property listing",
  description:
    "Creates a listing: address (street, city, state, zipCode), details (propertyType) and listing.listPrice are required. It starts ACTIVE with daysOnMarket 0, listDate today (or a past date given) and a LISTED entry in its price history; the mlsId, when given, must be unique in the organization. Photos may be linked by https URL in media.photos. Emits property.created.",
  permission: "properties:write",
  // The body of POST /v1/properties, less the read-only fields that route merely tolerates.
  input: PropertyCreate.omit(READ_ONLY),
  output: z.object({ property: Property }),
  effect: "write",
  run: async (input, { ctx }) => ({ property: await createProperty(ctx, input) }),
});

/**
 * PUT /v1/properties/{id}'s body without media.photos (and without media: null): the route replaces the whole photo
 * list and deletes the uploads left out from storage for good, which no call can take back. Photos are managed where
 * they are uploaded (POST …/photos); everything else an update changes can be set back.
 */
const { photos: _photos, ...mediaWithoutPhotos } = PropertyUpdate.shape.media.unwrap().unwrap().shape;
const UpdatePropertyInput = PropertyUpdate.omit(READ_ONLY).extend({
  propertyId,
  media: z.strictObject(mediaWithoutPhotos).optional(),
});

export const updatePropertyTool = defineTool({
  name: "update_property",
  route: "PUT /v1/properties/{id}",
  title: "Update a property listing",
  description:
    "Changes any field of any group of a listing (address, details, listing, features, media other than photos, marketing, hoa, taxes, disclosure, customFields, mlsId); fields left out stay as they are, null clears an optional field or group. A listPrice change appends PRICE_REDUCTION or PRICE_INCREASE to the price history (property.price_changed); a status change emits property.status_changed, and into SOLD records soldPrice (default listPrice) and soldDate (default today). Photos are not changed here.",
  permission: "properties:write",
  input: UpdatePropertyInput,
  output: z.object({ property: Property }),
  effect: "write",
  // A set of values: sent again, nothing differs, so nothing is written and no event is emitted.
  idempotent: true,
  async run({ propertyId, ...update }, { ctx }) {
    return { property: await updateProperty(ctx, propertyId, parseWith(PropertyUpdate, update)) };
  },
});

export const propertyValuation = defineTool({
  name: "property_valuation",
  route: "POST /v1/properties/{id}/valuation",
  title: "Value a property from comparable sales",
  description:
    "Computes a fresh automated valuation from the organization's own SOLD listings of the same type sold in the last 24 months within 10 miles (or the same ZIP code or city) and of a similar size: an estimate, a range, a confidence (0-100), price per square foot, how well the comparables match, the comparables themselves and the area's market trends. Keeps it, and its summary becomes the listing's valuation group (property.updated). Answers the error insufficient_comparables with fewer than 3 comparables, insufficient_data without a size: no figure is made up.",
  permission: "properties:write",
  input: z.strictObject({ propertyId }),
  output: z.object({ valuation: Valuation }),
  // Writes a new valuation record and the listing's summary; a later valuation replaces the summary, nothing is lost.
  effect: "write",
  run: async ({ propertyId }, { ctx }) => ({ valuation: await requestValuation(ctx, propertyId) }),
});

export const propertyAnalytics = defineTool({
  name: "property_analytics",
  route: "GET /v1/properties/{id}/analytics",
  title: "Property listing engagement",
  description:
    "Engagement with a listing over the last 7, 30 or 90 days (UTC days, today included): views, unique views, inquiries, showings, offers, saves, shares, average time on site, conversion rate (inquiries per 100 unique viewers), top referrers and views per day.",
  permission: "properties:read",
  effect: "read",
  input: z.strictObject({ propertyId, period: z.enum(ANALYTICS_PERIODS).default("30d") }),
  output: z.object({ analytics: PropertyAnalytics }),
  async run({ propertyId, period }, { ctx }) {
    const query = parseWith(AnalyticsQuery, { period });
    return { analytics: await getAnalytics(ctx, propertyId, query.period) };
  },
});

/** Listings: find, read, create, update, value and analyse. */
export const propertyTools = [
  findProperties,
  getPropertyTool,
  createPropertyTool,
  updatePropertyTool,
  propertyValuation,
  propertyAnalytics,
];
