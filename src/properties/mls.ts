import { withRetries } from "../db/write";
import { readConfig } from "../env";
import { InvalidState, NotConfigured, Unprocessable, UpstreamFailed, Validation } from "../lib/errors";
import { createLogger, loggableError } from "../lib/log";
import { fetchWithDeadline } from "../lib/outbound";
import { issuesFromZod } from "../lib/validation";
import type { ServiceContext } from "../service-context";
import { type PropertyRecord, toProperty } from "./mapping";
import { PropertyUpdate, type SyncResult } from "./schemas";
import { commitProperty, readPropertyForWrite } from "./service";
import { applyUpdate, changeEvents, replaceProperty } from "./writes";

/**
 * MLS sync over the RESO Web API (an OData v4 service): the `Property` resource, found by ListingKey or ListingId
 * equal to the property's mlsId, its Data Dictionary fields mapped onto the property groups and written through the
 * same update path as PUT (so the same events go out). Nothing is written unless the MLS answered with a listing.
 */
const TIMEOUT_MS = 10_000;
const MAX_RESPONSE_BYTES = 2 * 1024 * 1024;

type Reso = Record<string, unknown>;

export interface MlsClient {
  findListing(mlsId: string): Promise<Reso | null>;
}

async function readBounded(res: Response): Promise<string> {
  const reader = res.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_RESPONSE_BYTES) {
      await reader.cancel();
      throw new UpstreamFailed("mls_error", `The MLS answer exceeds ${MAX_RESPONSE_BYTES} bytes`);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) all.set(c, at), (at += c.byteLength);
  return new TextDecoder().decode(all);
}

/** A RESO Web API client: `GET {base}/Property?$filter=ListingKey eq '…' or ListingId eq '…'` with a bearer token. */
export function resoClient(baseUrl: string, token: string | undefined, fetchFn: typeof fetch = fetch): MlsClient {
  return {
    async findListing(mlsId) {
      const literal = `'${mlsId.replaceAll("'", "''")}'`; // OData string literal
      const url = `${baseUrl.replace(/\/+$/, "")}/Property?$filter=${encodeURIComponent(`ListingKey eq ${literal} or ListingId eq ${literal}`)}&$top=2`;
      const headers: Record<string, string> = { accept: "application/json" };
      if (token) headers.authorization = `Bearer ${token}`;
      let status = 0;
      let text = "";
      try {
        ({ status, text } = await fetchWithDeadline(fetchFn, url, { headers }, TIMEOUT_MS, async (res) => ({
          status: res.status,
          text: await readBounded(res),
        })));
      } catch (err) {
        if (err instanceof UpstreamFailed) throw err;
        createLogger().warn("MLS unreachable", { error: loggableError(err) });
        throw new UpstreamFailed("mls_unreachable", "The MLS could not be reached; nothing was changed. Try again later.");
      }
      if (status === 401 || status === 403)
        throw new UpstreamFailed("mls_rejected", `The MLS refused our credentials (HTTP ${status}); check MLS_API_TOKEN`);
      if (status < 200 || status > 299) throw new UpstreamFailed("mls_error", `The MLS answered HTTP ${status}; nothing was changed`);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw new UpstreamFailed("mls_error", "The MLS answer is not JSON");
      }
      const value = (body as { value?: unknown }).value;
      if (!Array.isArray(value)) throw new UpstreamFailed("mls_error", "The MLS answer has no OData value array");
      const listings = value.filter((v): v is Reso => typeof v === "object" && v !== null);
      return listings.find((l) => l.ListingKey === mlsId) ?? listings.find((l) => l.ListingId === mlsId) ?? null;
    },
  };
}

// RESO Data Dictionary StandardStatus → listing status.
const STATUS: Record<string, string> = {
  Active: "ACTIVE",
  "Active Under Contract": "PENDING",
  Pending: "PENDING",
  Closed: "SOLD",
  Expired: "EXPIRED",
  Withdrawn: "WITHDRAWN",
  Canceled: "CANCELLED",
  "Coming Soon": "COMING_SOON",
};
// RESO PropertySubType (then PropertyType) → property type; anything else leaves the type as it is.
const SUBTYPE: Record<string, string> = {
  "Single Family Residence": "SINGLE_FAMILY",
  "Single Family": "SINGLE_FAMILY",
  Condominium: "CONDO",
  "Stock Cooperative": "CONDO",
  Townhouse: "TOWNHOUSE",
  Duplex: "MULTI_FAMILY",
  Triplex: "MULTI_FAMILY",
  Quadruplex: "MULTI_FAMILY",
  "Multi Family": "MULTI_FAMILY",
};
const TYPE: Record<string, string> = {
  Land: "LAND",
  "Commercial Sale": "COMMERCIAL",
  "Commercial Lease": "COMMERCIAL",
  "Business Opportunity": "COMMERCIAL",
  "Residential Income": "MULTI_FAMILY",
  Farm: "LAND",
};
const FEE_PER_MONTH: Record<string, number> = { Monthly: 1, Quarterly: 1 / 3, "Semi-Annually": 1 / 6, Annually: 1 / 12 };

const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const int = (v: unknown): number | undefined => (num(v) === undefined ? undefined : Math.round(v as number));
const str = (v: unknown): string | undefined => (typeof v === "string" && v.trim() ? v.trim() : undefined);
const bool = (v: unknown): boolean | undefined => (typeof v === "boolean" ? v : undefined);
const date = (v: unknown): string | undefined => (typeof v === "string" && /^\d{4}-\d{2}-\d{2}/.test(v) ? v.slice(0, 10) : undefined);

/** A RESO listing as the partial groups of a property update (only the fields the MLS sent). */
export function mapResoListing(l: Reso, before: PropertyRecord): Record<string, Record<string, unknown>> {
  const drop = (g: Record<string, unknown>) => Object.fromEntries(Object.entries(g).filter(([, v]) => v !== undefined));
  const status = STATUS[str(l.StandardStatus) ?? ""];
  const street =
    str(l.UnparsedAddress)?.split(",")[0] ??
    ([str(l.StreetNumber), str(l.StreetDirPrefix), str(l.StreetName), str(l.StreetSuffix)].filter(Boolean).join(" ") || undefined);
  const lat = num(l.Latitude);
  const lng = num(l.Longitude);
  const fee = num(l.AssociationFee);
  const perMonth = FEE_PER_MONTH[str(l.AssociationFeeFrequency) ?? "Monthly"];
  const groups: Record<string, Record<string, unknown>> = {
    address: drop({
      street,
      unit: str(l.UnitNumber),
      city: str(l.City),
      state: str(l.StateOrProvince),
      zipCode: str(l.PostalCode),
      county: str(l.CountyOrParish),
      country: str(l.Country),
      coordinates: lat !== undefined && lng !== undefined ? { latitude: lat, longitude: lng } : undefined,
    }),
    details: drop({
      propertyType: SUBTYPE[str(l.PropertySubType) ?? ""] ?? TYPE[str(l.PropertyType) ?? ""],
      propertySubType: str(l.PropertySubType),
      bedrooms: int(l.BedroomsTotal),
      bathrooms: num(l.BathroomsTotalInteger),
      halfBaths: int(l.BathroomsHalf),
      squareFootage: int(l.LivingArea),
      lotSize: num(l.LotSizeSquareFeet),
      yearBuilt: int(l.YearBuilt),
      stories: int(l.StoriesTotal ?? l.Stories),
      garage: bool(l.GarageYN),
      pool: bool(l.PoolPrivateYN),
      waterfront: bool(l.WaterfrontYN),
      parking:
        int(l.ParkingTotal ?? l.GarageSpaces) !== undefined
          ? { ...((before.details.parking as object) ?? {}), spaces: int(l.ParkingTotal ?? l.GarageSpaces) }
          : undefined,
    }),
    listing: drop({
      status,
      listPrice: num(l.ListPrice),
      originalPrice: num(l.OriginalListPrice),
      listDate: date(l.ListingContractDate),
      soldPrice: status === "SOLD" ? num(l.ClosePrice) : undefined,
      soldDate: status === "SOLD" ? date(l.CloseDate) : undefined,
    }),
    marketing: drop({ description: str(l.PublicRemarks) }),
    hoa: drop({ monthlyFee: fee !== undefined && perMonth !== undefined ? Math.round(fee * perMonth * 100) / 100 : undefined }),
    taxes: drop({ annualAmount: num(l.TaxAnnualAmount), taxYear: int(l.TaxYear) }),
    media: drop({ virtualTour: str(l.VirtualTourURLUnbranded)?.startsWith("https://") ? str(l.VirtualTourURLUnbranded) : undefined }),
  };
  return Object.fromEntries(Object.entries(groups).filter(([, g]) => Object.keys(g).length > 0));
}

/** Field-level changes between two versions of a property, over the fields an MLS sync maps. */
function fieldChanges(
  before: PropertyRecord,
  after: PropertyRecord,
  mapped: Record<string, Record<string, unknown>>,
): SyncResult["changes"] {
  const prev = toProperty(before) as unknown as Record<string, Record<string, unknown> | null>;
  const next = toProperty(after) as unknown as Record<string, Record<string, unknown> | null>;
  return Object.entries(mapped).flatMap(([group, fields]) =>
    Object.keys(fields).flatMap((field) => {
      const oldValue = prev[group]?.[field] ?? null;
      const newValue = next[group]?.[field] ?? null;
      return JSON.stringify(oldValue) === JSON.stringify(newValue) ? [] : [{ field: `${group}.${field}`, oldValue, newValue }];
    }),
  );
}

/** The configured client, or 503 when MLS_API_URL is not set in this deployment. */
export function configuredMlsClient(ctx: ServiceContext): MlsClient {
  const config = readConfig(ctx.env);
  if (!config.MLS_API_URL) throw new NotConfigured("MLS sync (MLS_API_URL)");
  return resoClient(config.MLS_API_URL, config.MLS_API_TOKEN);
}

/** POST /v1/properties/{id}/mls-sync. */
export async function syncFromMls(ctx: ServiceContext, id: string, client?: MlsClient): Promise<SyncResult> {
  // The property first: another organization's id is a 404 whatever this deployment's configuration.
  const first = await readPropertyForWrite(ctx, id);
  const mls = client ?? configuredMlsClient(ctx);
  if (!first.mlsId) throw new InvalidState("mls_id_missing", "The property has no mlsId to sync by; set one with PUT first");
  const mlsId = first.mlsId;
  const listing = await mls.findListing(mlsId);
  if (!listing) throw new Unprocessable("mls_listing_not_found", `The MLS has no listing with ListingKey or ListingId ${mlsId}`);
  return withRetries(async () => {
    const before = await readPropertyForWrite(ctx, id);
    if (before.mlsId !== mlsId) throw new InvalidState("mls_id_changed", "The property's mlsId changed during the sync; run it again");
    const mapped = mapResoListing(listing, before);
    const parsed = PropertyUpdate.safeParse(mapped);
    if (!parsed.success) {
      const problems = issuesFromZod(parsed.error, mapped).map((i) => `${i.field}: ${i.message}`);
      throw new UpstreamFailed(
        "mls_invalid_data",
        `The MLS listing has values this API cannot take (${problems.join("; ")}); nothing was changed`,
      );
    }
    const now = new Date();
    let after: PropertyRecord;
    try {
      ({ after } = applyUpdate(before, parsed.data, now));
    } catch (err) {
      if (!(err instanceof Validation)) throw err;
      throw new UpstreamFailed("mls_invalid_data", `The MLS listing does not fit the property (${err.message}); nothing was changed`);
    }
    const next = { ...after, updatedAt: now.toISOString(), version: before.version + 1 };
    const changes = fieldChanges(before, next, mapped);
    const events = changeEvents(ctx, before, next);
    if (events.length) await commitProperty(ctx, replaceProperty(ctx, before, next), events);
    return { mlsId, syncStatus: "COMPLETED" as const, syncedAt: now.toISOString(), changes };
  });
}
