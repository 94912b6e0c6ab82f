import { and } from "drizzle-orm";
import { recordWrites } from "../crm/record-writes";
import { properties, type StoredPhoto, users } from "../db/schema";
import { atVersion, expectVersion, type Statement, type VersionedTable } from "../db/write";
import type { DomainEvent } from "../events/event";
import { newEvent } from "../events/outbox";
import { type FieldIssue, Validation } from "../lib/errors";
import { newId, newRecordId } from "../lib/ids";
import { idsOf } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import { daysOnMarket, indexedColumns, listingOf, type PropertyRecord, type StoredListing, today, toProperty } from "./mapping";
import {
  MAX_PHOTOS,
  OFF_MARKET,
  type PhotoEntry,
  type PriceHistoryEntry,
  type PropertyCreate,
  type PropertyUpdate,
  READ_ONLY_FIELDS,
} from "./schemas";

type Group = Record<string, unknown>;
export const PROPERTIES: VersionedTable = {
  table: properties,
  id: properties.id,
  organizationId: properties.organizationId,
  version: properties.version,
};

/** Price history entries kept per listing: the first (LISTED) and the latest ones. */
const MAX_PRICE_HISTORY = 100;

/** A property as every resource's writes see it (crm/record-writes.ts). */
const propertyWrites = recordWrites({
  resource: "properties",
  // What a client may echo back but never writes: schemas.ts READ_ONLY_FIELDS, and listing.priceHistory/daysOnMarket.
  readOnly: READ_ONLY_FIELDS,
  alsoReadOnly: (copy) => {
    if (copy.listing && typeof copy.listing === "object") {
      const { priceHistory: _h, daysOnMarket: _d, ...listing } = copy.listing as Group;
      copy.listing = listing;
    }
  },
  updated: "property.updated",
  shown: toProperty,
  unchanged: ["updatedAt"],
});

/** The properties' count and list version, in the batch of every property write; the input a write takes. */
export const { bumpCounters, writableInput } = propertyWrites;

/** A group with `patch` applied field by field: a null clears the field, an absent one stays. */
function merge(base: Group | null | undefined, patch: Group): Group {
  const out: Group = { ...(base ?? {}) };
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

const nonEmpty = (g: Group): Group | null => (Object.keys(g).length ? g : null);

/**
 * The listing agents named by id are users of the caller's organization; their name and e-mail fill what the body
 * leaves out. An agent without an id needs a name.
 */
export async function resolveAgents(ctx: ServiceContext, listing: Group | undefined): Promise<FieldIssue[]> {
  if (!listing) return [];
  const slots = (["listingAgent", "coListingAgent"] as const).filter((k) => listing[k] && typeof listing[k] === "object");
  const ids = slots.map((k) => (listing[k] as Group).id).filter((id): id is string => typeof id === "string");
  const found = ids.length
    ? await ctx.db
        .select({ id: users.id, name: users.name, email: users.email })
        .from(users)
        .where(and(idsOf(users, ctx.organizationId, ids)))
        .all()
    : [];
  const issues: FieldIssue[] = [];
  for (const slot of slots) {
    const agent = listing[slot] as Group;
    if (typeof agent.id === "string") {
      const user = found.find((u) => u.id === agent.id);
      if (!user) {
        issues.push({
          field: `listing.${slot}.id`,
          path: ["listing", slot, "id"],
          code: "invalid_reference",
          message: "No user with this id in your organization",
        });
        continue;
      }
      listing[slot] = { ...agent, name: agent.name ?? user.name ?? user.email, email: agent.email ?? user.email };
    } else if (typeof agent.name !== "string") {
      issues.push({
        field: `listing.${slot}.name`,
        path: ["listing", slot, "name"],
        code: "required",
        message: "An agent who is not a user of your organization needs a name",
      });
    }
  }
  return issues;
}

/** Commission total from its parts when only the parts are given; the parts together are at most the whole price. */
function withCommissionTotal(listing: Group, issues: FieldIssue[]): void {
  const c = listing.commission as { buyerAgent?: number; listingAgent?: number; total?: number } | undefined;
  if (!c || c.buyerAgent === undefined || c.listingAgent === undefined) return;
  const total = Math.round((c.buyerAgent + c.listingAgent) * 1e9) / 1e9;
  if (total > 1)
    issues.push({
      field: "listing.commission",
      path: ["listing", "commission"],
      code: "invalid_commission",
      message: "buyerAgent + listingAgent cannot exceed 1 (the whole price)",
    });
  else if (c.total === undefined) listing.commission = { ...c, total };
}

const boundedHistory = (h: PriceHistoryEntry[]): PriceHistoryEntry[] =>
  h.length <= MAX_PRICE_HISTORY ? h : [h[0]!, ...h.slice(h.length - MAX_PRICE_HISTORY + 1)];

/**
 * media.photos of a write applied to the stored photos: entries with an id keep (and may re-caption or re-order)
 * that photo, entries without one link a new photo, photos left out go. Returns the photos and the removed uploads,
 * whose files are deleted once the write has landed.
 */
function applyPhotos(
  stored: StoredPhoto[],
  entries: PhotoEntry[],
  at: string,
  issues: FieldIssue[],
): { photos: StoredPhoto[]; removed: StoredPhoto[] } {
  const byId = new Map(stored.map((p) => [p.id, p]));
  const photos: StoredPhoto[] = [];
  entries.forEach((e, i) => {
    if (e.id !== undefined) {
      const known = byId.get(e.id);
      if (!known)
        issues.push({
          field: `media.photos.${i}.id`,
          path: ["media", "photos", i, "id"],
          code: "invalid_reference",
          message: "This property has no photo with this id",
        });
      else photos.push({ ...known, caption: e.caption === undefined ? known.caption : e.caption, order: e.order ?? known.order });
      return;
    }
    photos.push({ id: newId(), url: e.url!, caption: e.caption ?? null, order: e.order ?? i, uploadedAt: at });
  });
  const kept = new Set(photos.map((p) => p.id));
  if (photos.length > MAX_PHOTOS)
    issues.push({
      field: "media.photos",
      path: ["media", "photos"],
      code: "too_big",
      message: `A property has at most ${MAX_PHOTOS} photos`,
    });
  return { photos, removed: stored.filter((p) => !kept.has(p.id)) };
}

function splitMedia(media: Group | null | undefined): { rest: Group; photos?: PhotoEntry[] } {
  const { photos, ...rest } = media ?? {};
  return { rest, photos: photos as PhotoEntry[] | undefined };
}

/** The record of a new listing: ACTIVE, listed today unless a past listDate is given, its first price LISTED. */
export function newPropertyRecord(ctx: ServiceContext, input: PropertyCreate, now: Date): PropertyRecord {
  const at = now.toISOString();
  const issues: FieldIssue[] = [];
  const { status: _s, ...given } = input.listing as Group;
  const listing = merge({}, given);
  const listPrice = input.listing.listPrice;
  const stored: StoredListing = {
    status: "ACTIVE",
    ...(listing as Partial<StoredListing>),
    listPrice,
    originalPrice: (listing.originalPrice as number | undefined) ?? listPrice,
    listDate: (listing.listDate as string | undefined) ?? today(now),
    priceHistory: [{ price: listPrice, date: at, event: "LISTED" }],
  };
  withCommissionTotal(stored as unknown as Group, issues);
  const { rest: media, photos: entries } = splitMedia(input.media);
  const { photos } = applyPhotos([], entries ?? [], at, issues);
  if (issues.length) throw new Validation(issues);
  const record = {
    id: newRecordId(Date.parse(at)),
    organizationId: ctx.organizationId,
    mlsId: input.mlsId ?? null,
    address: merge({}, input.address),
    details: {
      ...merge({}, input.details),
      garage: input.details.garage ?? false,
      pool: input.details.pool ?? false,
      waterfront: input.details.waterfront ?? false,
    },
    listing: stored as unknown as Group,
    features: input.features ? nonEmpty(merge({}, input.features)) : null,
    media: nonEmpty(merge({}, media)),
    photos,
    valuation: null,
    marketing: input.marketing ? nonEmpty(merge({}, input.marketing)) : null,
    hoa: input.hoa ? nonEmpty(merge({}, input.hoa)) : null,
    taxes: input.taxes ? nonEmpty(merge({}, input.taxes)) : null,
    disclosure: input.disclosure ? nonEmpty(merge({}, input.disclosure)) : null,
    createdAt: at,
    updatedAt: at,
    version: 1,
    offMarketDays: null,
    customFields: null,
  } as Omit<PropertyRecord, keyof ReturnType<typeof indexedColumns>>;
  return { ...record, ...indexedColumns(record) } as PropertyRecord;
}

/**
 * `before` with an update applied. The listing rules (spec: States and transitions): a status change moves the days
 * on market clock and, into SOLD, records the sold price and date; a list price change appends PRICE_REDUCTION or
 * PRICE_INCREASE to priceHistory. Returns the removed uploaded photos too.
 */
export function applyUpdate(
  before: PropertyRecord,
  input: PropertyUpdate,
  now: Date,
): { after: PropertyRecord; removedPhotos: StoredPhoto[] } {
  const at = now.toISOString();
  const issues: FieldIssue[] = [];
  const next: PropertyRecord = { ...before };
  if (input.mlsId !== undefined) next.mlsId = input.mlsId;
  if (input.address) next.address = merge(before.address, input.address);
  if (input.details) next.details = merge(before.details, input.details);
  for (const g of ["features", "marketing", "hoa", "taxes", "disclosure"] as const) {
    const patch = input[g];
    if (patch === null) next[g] = null;
    else if (patch) next[g] = nonEmpty(merge(before[g], patch));
  }
  let removedPhotos: StoredPhoto[] = [];
  if (input.media === null) {
    next.media = null;
    removedPhotos = before.photos;
    next.photos = [];
  } else if (input.media) {
    const { rest, photos: entries } = splitMedia(input.media);
    next.media = nonEmpty(merge(before.media, rest));
    if (entries) ({ photos: next.photos, removed: removedPhotos } = applyPhotos(before.photos, entries, at, issues));
  }
  if (input.listing) next.listing = applyListing(listingOf(before), input.listing as Group, now, issues) as unknown as Group;
  if (issues.length) throw new Validation(issues);
  const prev = listingOf(before);
  const listing = listingOf(next);
  if (listing.status !== prev.status) {
    const leaving = !OFF_MARKET.includes(prev.status) && prev.status !== "COMING_SOON";
    const stopped = OFF_MARKET.includes(listing.status) || listing.status === "COMING_SOON";
    if (stopped && leaving) next.offMarketDays = daysOnMarket(before, now);
    if (!stopped) next.offMarketDays = null;
  }
  return { after: { ...next, ...indexedColumns(next) }, removedPhotos };
}

function applyListing(prev: StoredListing, patch: Group, now: Date, issues: FieldIssue[]): StoredListing {
  const at = now.toISOString();
  const listing = merge(prev as unknown as Group, patch) as unknown as StoredListing;
  withCommissionTotal(listing as unknown as Group, issues);
  const history = [...prev.priceHistory];
  if (listing.listPrice !== prev.listPrice)
    history.push({ price: listing.listPrice, date: at, event: listing.listPrice < prev.listPrice ? "PRICE_REDUCTION" : "PRICE_INCREASE" });
  if (listing.status === "SOLD" && prev.status !== "SOLD") {
    listing.soldPrice ??= listing.listPrice;
    listing.soldDate ??= today(now);
    if (listing.soldDate < listing.listDate)
      issues.push({
        field: "listing.soldDate",
        path: ["listing", "soldDate"],
        code: "invalid_date",
        message: "soldDate is before listDate",
      });
    history.push({ price: listing.soldPrice, date: at, event: "SOLD" });
  } else if (listing.status !== "SOLD" && (patch.soldPrice != null || patch.soldDate != null)) {
    issues.push({
      field: "listing.soldPrice",
      path: ["listing", patch.soldPrice != null ? "soldPrice" : "soldDate"],
      code: "invalid_state",
      message: "soldPrice and soldDate apply to SOLD listings",
    });
  } else if (listing.status !== "SOLD" && prev.status === "SOLD") {
    // Back on the market: the old sale is history (priceHistory keeps it), not this listing's figures.
    delete (listing as Partial<StoredListing>).soldPrice;
    delete (listing as Partial<StoredListing>).soldDate;
  }
  listing.priceHistory = boundedHistory(history);
  return listing;
}

/** The events of a property change: property.updated, plus status_changed and price_changed when those moved. */
export function changeEvents(ctx: ServiceContext, before: PropertyRecord, after: PropertyRecord): DomainEvent[] {
  // Photos are not in event objects (their links would expire unread), so compare them apart.
  const photosChanged = JSON.stringify(before.photos) !== JSON.stringify(after.photos);
  const updated = propertyWrites.updated(ctx, before, after, photosChanged ? ["media.photos"] : []);
  if (!updated) return [];
  const { object } = updated;
  const events = [updated.event];
  const was = listingOf(before);
  const is = listingOf(after);
  if (was.status !== is.status) {
    events.push(
      newEvent(ctx, "property.status_changed", {
        object,
        previousAttributes: { listing: { status: was.status } },
        changes: ["listing.status"],
      }),
    );
  }
  if (was.listPrice !== is.listPrice) {
    const changeAmount = is.listPrice - was.listPrice;
    events.push(
      newEvent(ctx, "property.price_changed", {
        object,
        previousAttributes: { listing: { listPrice: was.listPrice } },
        changes: ["listing.listPrice"],
        priceChange: {
          previousPrice: was.listPrice,
          newPrice: is.listPrice,
          changeAmount,
          changePercentage: Math.round((changeAmount / was.listPrice) * 10_000) / 100,
        },
      }),
    );
  }
  return events;
}

/** The row update of a property read at `before.version`. */
export function updatePropertyStatement(ctx: ServiceContext, before: PropertyRecord, after: PropertyRecord): Statement {
  const { id: _id, organizationId: _org, createdAt: _created, ...columns } = after;
  return ctx.db
    .update(properties)
    .set(columns)
    .where(atVersion(PROPERTIES, ctx.organizationId, before.id, before.version));
}

/** The compare-and-set of one property: the guard that it is still at the version read, its update, the counter version. */
export const replaceProperty = (ctx: ServiceContext, before: PropertyRecord, after: PropertyRecord): Statement[] => [
  expectVersion(ctx.db, PROPERTIES, ctx.organizationId, before),
  updatePropertyStatement(ctx, before, after),
  bumpCounters(ctx, 0),
];
