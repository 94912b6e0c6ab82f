import { shownCustomFields } from "../crm/custom-fields";
import type { properties, StoredPhoto } from "../db/schema";
import { unitVector } from "./geo";
import type { ListingStatus, PriceHistoryEntry, Property, PropertyPhoto } from "./schemas";

export type PropertyRecord = typeof properties.$inferSelect;
type Group = Record<string, unknown>;

/** The stored listing group: the API's listing without the derived daysOnMarket. */
export interface StoredListing {
  status: ListingStatus;
  listPrice: number;
  originalPrice: number;
  listDate: string;
  priceHistory: PriceHistoryEntry[];
  listingAgent?: Group;
  coListingAgent?: Group;
  commission?: Group;
  soldPrice?: number;
  soldDate?: string;
}

export const listingOf = (r: Pick<PropertyRecord, "listing">): StoredListing => r.listing as unknown as StoredListing;

const DAY_MS = 86_400_000;
export const today = (now = new Date()): string => now.toISOString().slice(0, 10);

/** Whole days from `from` (YYYY-MM-DD) to `to`. */
export const daysBetween = (from: string, to: string): number =>
  Math.max(0, Math.floor((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS));

/** Days on market: counted from listDate while ACTIVE or PENDING, frozen at its last count in any other status. */
export const daysOnMarket = (r: Pick<PropertyRecord, "listDate" | "offMarketDays">, now = new Date()): number =>
  r.offMarketDays ?? daysBetween(r.listDate, today(now));

/** The columns lists filter and sort on, derived from the groups in every write (db/properties.ts). */
export function indexedColumns(r: Pick<PropertyRecord, "address" | "details" | "listing">) {
  const address = r.address as { city: string; state: string; zipCode: string; coordinates?: { latitude: number; longitude: number } };
  const details = r.details as {
    propertyType: string;
    bedrooms?: number;
    bathrooms?: number;
    squareFootage?: number;
    yearBuilt?: number;
    garage: boolean;
    pool: boolean;
    waterfront: boolean;
  };
  const listing = listingOf(r);
  const c = address.coordinates;
  const v = c ? unitVector(c.latitude, c.longitude) : null;
  return {
    city: address.city,
    state: address.state,
    zipCode: address.zipCode,
    latitude: c?.latitude ?? null,
    longitude: c?.longitude ?? null,
    geoX: v?.x ?? null,
    geoY: v?.y ?? null,
    geoZ: v?.z ?? null,
    propertyType: details.propertyType,
    bedrooms: details.bedrooms ?? null,
    bathrooms: details.bathrooms ?? null,
    squareFootage: details.squareFootage ?? null,
    yearBuilt: details.yearBuilt ?? null,
    garage: details.garage,
    pool: details.pool,
    waterfront: details.waterfront,
    status: listing.status,
    listPrice: listing.listPrice,
    listDate: listing.listDate,
    soldPrice: listing.soldPrice ?? null,
    soldDate: listing.soldDate ?? null,
  };
}

const JSON_COLUMNS = [
  "address",
  "details",
  "listing",
  "features",
  "media",
  "photos",
  "valuation",
  "marketing",
  "hoa",
  "taxes",
  "disclosure",
  "customFields",
] as const;
const BOOLEAN_COLUMNS = ["garage", "pool", "waterfront"] as const;

/** A raw D1 row of the hand-written list query (snake_case, JSON as text) as the drizzle record. */
export function fromRow(row: Record<string, unknown>): PropertyRecord {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) out[k.replace(/_([a-z])/g, (_, ch: string) => ch.toUpperCase())] = v;
  for (const k of JSON_COLUMNS) out[k] = typeof out[k] === "string" ? JSON.parse(out[k] as string) : (out[k] ?? null);
  for (const k of BOOLEAN_COLUMNS) out[k] = out[k] === 1 || out[k] === true;
  return out as PropertyRecord;
}

/** Photos in their display order: by order, then by when they came. */
export const orderedPhotos = (photos: StoredPhoto[]): StoredPhoto[] =>
  [...photos].sort((a, b) => a.order - b.order || a.uploadedAt.localeCompare(b.uploadedAt) || a.id.localeCompare(b.id));

/**
 * The property as the API shows it. `photoUrls` holds the signed links of uploads (properties/photos.ts); without it
 * media.photos is left out (lists without include=photos, event payloads, whose links would expire unread).
 */
export function toProperty(r: PropertyRecord, photoUrls?: Map<string, string>, now = new Date()): Property {
  const listing = listingOf(r);
  const media: Group = { ...(r.media ?? {}) };
  if (photoUrls) media.photos = orderedPhotos(r.photos).map((p) => toPhoto(p, photoUrls));
  return {
    id: r.id,
    organizationId: r.organizationId,
    mlsId: r.mlsId,
    address: r.address,
    details: r.details,
    listing: { ...listing, daysOnMarket: daysOnMarket(r, now) },
    features: r.features,
    media,
    valuation: (r.valuation as Property["valuation"]) ?? null,
    marketing: r.marketing,
    hoa: r.hoa,
    taxes: r.taxes,
    disclosure: r.disclosure,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    customFields: shownCustomFields(r.customFields),
  } as Property;
}

export const toPhoto = (p: StoredPhoto, urls: Map<string, string>): PropertyPhoto => ({
  id: p.id,
  url: p.url ?? urls.get(p.id) ?? "",
  caption: p.caption,
  order: p.order,
  uploadedAt: p.uploadedAt,
});
