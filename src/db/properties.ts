import { sql } from "drizzle-orm";
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** One stored photo of a property: an upload in R2 (`key`) or a linked URL (`url`), in `media.photos` order. */
export interface StoredPhoto {
  id: string;
  key?: string;
  url?: string;
  contentType?: string;
  size?: number;
  caption: string | null;
  order: number;
  uploadedAt: string;
}

/**
 * Property listings (spec: Property). The groups are JSON columns as the API shows them; the fields lists filter and
 * sort on are copied into plain columns by one function (properties/mapping.ts `indexedColumns`) in the same write,
 * each behind an index led by organization_id, so a keyset page is one index range. `geo_x/y/z` are the unit vector
 * of the coordinates: a radius filter is then a dot product, exact on the sphere without trigonometry in SQL.
 */
export const properties = sqliteTable(
  "properties",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    mlsId: text(),
    address: text({ mode: "json" }).$type<Record<string, unknown>>().notNull(),
    details: text({ mode: "json" }).$type<Record<string, unknown>>().notNull(),
    listing: text({ mode: "json" }).$type<Record<string, unknown>>().notNull(),
    features: text({ mode: "json" }).$type<Record<string, unknown>>(),
    media: text({ mode: "json" }).$type<Record<string, unknown>>(),
    photos: text({ mode: "json" }).$type<StoredPhoto[]>().notNull(),
    valuation: text({ mode: "json" }).$type<Record<string, unknown>>(),
    marketing: text({ mode: "json" }).$type<Record<string, unknown>>(),
    hoa: text({ mode: "json" }).$type<Record<string, unknown>>(),
    taxes: text({ mode: "json" }).$type<Record<string, unknown>>(),
    disclosure: text({ mode: "json" }).$type<Record<string, unknown>>(),
    city: text().notNull(),
    state: text().notNull(),
    zipCode: text().notNull(),
    latitude: real(),
    longitude: real(),
    geoX: real(),
    geoY: real(),
    geoZ: real(),
    propertyType: text().notNull(),
    bedrooms: integer(),
    bathrooms: real(),
    squareFootage: integer(),
    yearBuilt: integer(),
    garage: integer({ mode: "boolean" }).notNull(),
    pool: integer({ mode: "boolean" }).notNull(),
    waterfront: integer({ mode: "boolean" }).notNull(),
    status: text().notNull(),
    listPrice: real().notNull(),
    /** YYYY-MM-DD */
    listDate: text().notNull(),
    /** Days on market frozen when the listing left the market (SOLD, EXPIRED, WITHDRAWN, CANCELLED); null while on it. */
    offMarketDays: integer(),
    soldPrice: real(),
    soldDate: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    /** Values of the organization's custom fields by key (crm/custom-fields.ts); null when none was ever set. */
    customFields: text({ mode: "json" }).$type<Record<string, string | number | boolean>>(),
    version: integer().notNull().default(1),
  },
  (t) => [
    uniqueIndex("properties_org_mls_unique").on(t.organizationId, t.mlsId),
    // Also covering for the probe of geo filters under the default sort (crm/keyset.ts `pageSql`): the box and the
    // exact distance come from the index alone, so a radius with few listings costs index entries, not table rows.
    index("properties_org_created_idx").on(t.organizationId, t.createdAt, t.id, t.latitude, t.longitude, t.geoX, t.geoY, t.geoZ),
    index("properties_org_updated_idx").on(t.organizationId, t.updatedAt, t.id),
    index("properties_org_price_idx").on(t.organizationId, t.listPrice, t.id),
    index("properties_org_list_date_idx").on(t.organizationId, t.listDate, t.id),
    index("properties_org_status_idx").on(t.organizationId, t.status, t.createdAt, t.id),
    index("properties_org_type_idx").on(t.organizationId, t.propertyType, t.createdAt, t.id),
    index("properties_org_city_idx").on(t.organizationId, sql`${t.city} COLLATE NOCASE`, t.createdAt, t.id),
    index("properties_org_state_idx").on(t.organizationId, sql`${t.state} COLLATE NOCASE`, t.createdAt, t.id),
    index("properties_org_zip_idx").on(t.organizationId, t.zipCode, t.createdAt, t.id),
    // A zip code filter is served by its own index in the sort's order (properties/list.ts): by creation above, by price here.
    index("properties_org_zip_price_idx").on(t.organizationId, t.zipCode, t.listPrice, t.id),
    // Covering for geo filters: the box, the exact distance and every sort key come from the index alone, so only the
    // rows of the page are read from the table.
    index("properties_org_geo_idx").on(
      t.organizationId,
      t.latitude,
      t.longitude,
      t.geoX,
      t.geoY,
      t.geoZ,
      t.createdAt,
      t.updatedAt,
      t.listPrice,
      t.listDate,
      t.id,
    ),
    index("properties_org_sold_idx").on(t.organizationId, t.status, t.propertyType, t.soldDate),
  ],
);

/** All-time engagement of a property (spec: Property analytics group), apart from the row so signals never contend with edits. */
export const propertyStats = sqliteTable("property_stats", {
  propertyId: text().primaryKey(),
  organizationId: text().notNull(),
  views: integer().notNull().default(0),
  inquiries: integer().notNull().default(0),
  showings: integer().notNull().default(0),
  offers: integer().notNull().default(0),
  saves: integer().notNull().default(0),
  shares: integer().notNull().default(0),
  timeOnSiteTotal: integer().notNull().default(0),
  timeOnSiteCount: integer().notNull().default(0),
});

/** The same figures per UTC day, for the analytics periods and views by day. */
export const propertyDailyStats = sqliteTable(
  "property_daily_stats",
  {
    propertyId: text().notNull(),
    day: text().notNull(),
    organizationId: text().notNull(),
    views: integer().notNull().default(0),
    inquiries: integer().notNull().default(0),
    showings: integer().notNull().default(0),
    offers: integer().notNull().default(0),
    saves: integer().notNull().default(0),
    shares: integer().notNull().default(0),
    timeOnSiteTotal: integer().notNull().default(0),
    timeOnSiteCount: integer().notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.propertyId, t.day] })],
);

/** Who viewed on which day (a hash of the visitor id), for unique views over a period. */
export const propertyDailyVisitors = sqliteTable(
  "property_daily_visitors",
  {
    propertyId: text().notNull(),
    day: text().notNull(),
    visitorHash: text().notNull(),
  },
  (t) => [primaryKey({ columns: [t.propertyId, t.day, t.visitorHash] })],
);

/** Views per referring source and day, for the top referrers. */
export const propertyDailyReferrers = sqliteTable(
  "property_daily_referrers",
  {
    propertyId: text().notNull(),
    day: text().notNull(),
    source: text().notNull(),
    views: integer().notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.propertyId, t.day, t.source] })],
);

/** Every valuation computed for a property; GET …/valuation answers the latest. */
export const propertyValuations = sqliteTable(
  "property_valuations",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    propertyId: text().notNull(),
    createdAt: text().notNull(),
    body: text({ mode: "json" }).$type<Record<string, unknown>>().notNull(),
  },
  (t) => [index("property_valuations_property_idx").on(t.organizationId, t.propertyId, t.createdAt, t.id)],
);
