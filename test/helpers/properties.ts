import { expect } from "vitest";
import { call, json } from "./client";
import { openResoFeed } from "./receiver";

/** A property as the API answers it (loosely typed: tests assert on the shape). */
export type PropertyJson = Record<string, any> & {
  id: string;
  listing: Record<string, any>;
  details: Record<string, any>;
  address: Record<string, any>;
};

/** A valid create body; `overrides` replace whole groups. */
export function propertyBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    address: {
      street: "100 Ocean Dr",
      city: "Miami Beach",
      state: "FL",
      zipCode: "33139",
      coordinates: { latitude: 25.7743, longitude: -80.1303 },
    },
    details: { propertyType: "CONDO", bedrooms: 2, bathrooms: 2, squareFootage: 1200, yearBuilt: 2005 },
    listing: { listPrice: 650000 },
    ...overrides,
  };
}

/** POST /v1/properties; fails the test unless 201. */
export async function createProperty(token: string, overrides: Record<string, unknown> = {}): Promise<PropertyJson> {
  const res = await call("POST", "/v1/properties", { token, body: propertyBody(overrides) });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(201);
  return payload.data as PropertyJson;
}

export async function getProperty(token: string, id: string, query = ""): Promise<PropertyJson> {
  const res = await call("GET", `/v1/properties/${id}${query}`, { token });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(200);
  return payload.data as PropertyJson;
}

export async function updateProperty(
  token: string,
  id: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<PropertyJson> {
  const res = await call("PUT", `/v1/properties/${id}`, { token, body, headers });
  const payload = await json(res);
  expect(res.status, JSON.stringify(payload)).toBe(200);
  return payload.data as PropertyJson;
}

export interface PropertyPage {
  data: PropertyJson[];
  pagination: { hasMore: boolean; nextCursor: string | null; total: number; limit: number };
}

/** GET /v1/properties with a query string (without "?"); fails the test unless 200. */
export async function listProperties(token: string, query = ""): Promise<PropertyPage> {
  const res = await call("GET", `/v1/properties${query ? `?${query}` : ""}`, { token });
  const payload = await json(res);
  expect(res.status, `${query}: ${JSON.stringify(payload)}`).toBe(200);
  return payload as PropertyPage;
}

/** Every id a cursor walk of the list returns, in order. */
export async function walkIds(token: string, query: string, limit = 2): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const page: PropertyPage = await listProperties(
      token,
      [query, `limit=${limit}`, cursor ? `cursor=${encodeURIComponent(cursor)}` : ""].filter(Boolean).join("&"),
    );
    ids.push(...page.data.map((p) => p.id));
    cursor = page.pagination.nextCursor;
  } while (cursor);
  return ids;
}

/** A multipart body of files (bytes with a name) plus optional captions and order fields. */
export function photoForm(
  files: { bytes: Uint8Array; name?: string; type?: string }[],
  extra: { captions?: string[]; order?: string[] } = {},
): FormData {
  const form = new FormData();
  for (const [i, f] of files.entries())
    form.append("photos", new File([f.bytes], f.name ?? `photo-${i}.jpg`, { type: f.type ?? "image/jpeg" }));
  for (const c of extra.captions ?? []) form.append("captions", c);
  for (const o of extra.order ?? []) form.append("order", o);
  return form;
}

/** A real 1x1 PNG and the first bytes of a JPEG (enough for the content check; the report embeds only PNG/JPEG). */
export const PNG_1X1 = Uint8Array.from(
  atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="),
  (c) => c.charCodeAt(0),
);
export const JPEG_HEAD = Uint8Array.from([
  0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0xff, 0xd9,
]);

const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);

/** A SOLD listing: created in the past, then moved to SOLD at its price on `soldDaysAgo`. */
export async function soldListing(
  token: string,
  o: { lat: number; lng: number; sqft: number; price: number; soldDaysAgo: number; type?: string; yearBuilt?: number; street?: string },
): Promise<PropertyJson> {
  const property = await createProperty(token, {
    address: {
      street: o.street ?? `${Math.round(o.sqft)} Comp Ln`,
      city: "Austin",
      state: "TX",
      zipCode: "78701",
      coordinates: { latitude: o.lat, longitude: o.lng },
    },
    details: { propertyType: o.type ?? "SINGLE_FAMILY", bedrooms: 3, bathrooms: 2, squareFootage: o.sqft, yearBuilt: o.yearBuilt ?? 2000 },
    listing: { listPrice: o.price, listDate: daysAgo(o.soldDaysAgo + 30) },
  });
  await updateProperty(token, property.id, { listing: { status: "SOLD", soldPrice: o.price, soldDate: daysAgo(o.soldDaysAgo) } });
  return property;
}

/** The subject of the valuation tests: a 2,000 sq ft house in Austin. */
export const VALUATION_SUBJECT = {
  address: { street: "500 Subject St", city: "Austin", state: "TX", zipCode: "78701", coordinates: { latitude: 30.27, longitude: -97.74 } },
  details: { propertyType: "SINGLE_FAMILY", bedrooms: 3, bathrooms: 2, squareFootage: 2000, yearBuilt: 2000 },
  listing: { listPrice: 650000 },
};

/** A subject with three comparable sales next to it, so that it can be valued. */
export async function valuableProperty(token: string): Promise<PropertyJson> {
  for (let i = 0; i < 3; i++)
    await soldListing(token, {
      lat: 30.27 + i * 0.001,
      lng: -97.74,
      sqft: 2000,
      price: 600000 + i * 10000,
      soldDaysAgo: 10 + i,
      street: `${i + 1} Comparable Ave`,
    });
  return createProperty(token, VALUATION_SUBJECT);
}

/** The bearer token the fake RESO feeds of these tests accept. */
export const RESO_TOKEN = "reso-test-token";

/** A RESO Data Dictionary Property record as an MLS serves it: the listing of propertyBody() under contract at a lower price. */
export function resoListing(listingKey: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ListingKey: listingKey,
    ListingId: `L-${listingKey}`,
    StandardStatus: "Active Under Contract",
    PropertyType: "Residential",
    PropertySubType: "Condominium",
    ListPrice: 625000,
    OriginalListPrice: 650000,
    BedroomsTotal: 3,
    BathroomsTotalInteger: 2,
    LivingArea: 1250,
    YearBuilt: 2005,
    UnparsedAddress: "100 Ocean Dr, Miami Beach, FL 33139",
    City: "Miami Beach",
    StateOrProvince: "FL",
    PostalCode: "33139",
    Latitude: 25.7743,
    Longitude: -80.1303,
    PoolPrivateYN: true,
    AssociationFee: 1200,
    AssociationFeeFrequency: "Quarterly",
    TaxAnnualAmount: 9100.5,
    TaxYear: 2025,
    PublicRemarks: "Ocean views from every room.",
    ...overrides,
  };
}

/** A property with an mlsId and a fake RESO feed serving a listing for it; `feed` is the MLS_API_URL to sync from. */
export async function mlsListedProperty(
  token: string,
  listing: (mlsId: string) => Record<string, unknown> = resoListing,
): Promise<{ id: string; mlsId: string; feed: string }> {
  const mlsId = `MLS-${crypto.randomUUID().slice(0, 8)}`;
  const feed = await openResoFeed([listing(mlsId)], { token: RESO_TOKEN });
  const { id } = await createProperty(token, { mlsId });
  return { id, mlsId, feed: feed.url };
}

/** The configuration that points MLS sync at a feed (or at a closed port when there is none). */
export const mlsVars = (params: Record<string, string>) => ({
  MLS_API_URL: params.feed ?? "http://127.0.0.1:1",
  MLS_API_TOKEN: RESO_TOKEN,
});
