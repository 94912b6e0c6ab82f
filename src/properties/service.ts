import { and, desc, eq } from "drizzle-orm";
import {
  agentProfiles,
  properties,
  propertyDailyReferrers,
  propertyDailyStats,
  propertyDailyVisitors,
  propertyStats,
  propertyValuations,
  reputationAggregates,
  users,
} from "../db/schema";
import { expectVersion, expectVersionMatch, type Statement, versioned, withRetries } from "../db/write";
import { commit, type CommitOptions } from "../events/commit";
import { newEvent } from "../events/outbox";
import { requestFileSigner } from "../files/signed-url";
import { Conflict, NotFound, Validation } from "../lib/errors";
import { inJsonList } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import { takePreloaded } from "../platform/preload";
import { preloadKey } from "./preload";
import { listingOf, type PropertyRecord, toProperty } from "./mapping";
import { deletePropertyFiles } from "./files";
import { archiveRows, readTrashed, restoreFrame, restoreRows, trashEntry } from "../trash/moves";
import type { Include, Property } from "./schemas";
import { applyUpdate, bumpCounters, changeEvents, newPropertyRecord, PROPERTIES, replaceProperty, resolveAgents, writableInput } from "./writes";
import type { PropertyCreate, PropertyUpdate } from "./schemas";

export { listProperties } from "./list";

const byId = (ctx: ServiceContext, id: string) => and(eq(properties.id, id), eq(properties.organizationId, ctx.organizationId));

/** The property of the caller's organization, or 404 exactly as for an id that exists nowhere. */
export async function findProperty(ctx: ServiceContext, id: string): Promise<PropertyRecord> {
  const row = await ctx.db.select().from(properties).where(byId(ctx, id)).get();
  if (!row) throw new NotFound("Property");
  return row;
}

/** The property a write starts from (read with the authentication, once, if it was): 404 when gone, 412 when If-Match names another version. */
export async function readPropertyForWrite(ctx: ServiceContext, id: string): Promise<PropertyRecord> {
  const preloaded = takePreloaded<[PropertyRecord[]]>(ctx, preloadKey(id));
  const before = preloaded ? preloaded[0][0] : await findProperty(ctx, id);
  if (!before) throw new NotFound("Property");
  expectVersionMatch(ctx, before.version);
  return before;
}

const mlsConflict = () => new Conflict("Another property of your organization has this mlsId", "duplicate_mls_id");

/** `commit` for properties: a unique-index race on mlsId is a 409, not a 500. */
export async function commitProperty(ctx: ServiceContext, statements: Statement[], events: Parameters<typeof commit>[2], options?: CommitOptions): Promise<void> {
  try {
    await commit(ctx, statements, events, options);
  } catch (err) {
    if (String(err).includes("properties_org_mls_unique") || String(err).includes("properties.organization_id, properties.mls_id")) throw mlsConflict();
    throw err;
  }
}

async function assertMlsIdFree(ctx: ServiceContext, mlsId: string | null | undefined, exceptId?: string): Promise<void> {
  if (!mlsId) return;
  const clash = await ctx.db.select({ id: properties.id }).from(properties).where(and(eq(properties.organizationId, ctx.organizationId), eq(properties.mlsId, mlsId))).get();
  if (clash && clash.id !== exceptId) throw mlsConflict();
}

/**
 * Properties as the API shows them, with the requested includes: signed photo links (always for one property, with
 * include=photos on a list), the listing agent's profile, the all-time analytics, the latest valuation's comparables.
 * One query per include for the whole page.
 */
export async function present(ctx: ServiceContext, records: PropertyRecord[], include: readonly Include[], withPhotos: boolean): Promise<Property[]> {
  let urls: Map<string, string> | undefined;
  if (withPhotos) {
    urls = new Map();
    const uploads = records.flatMap((r) => r.photos.filter((p) => p.key));
    if (uploads.length) {
      const sign = requestFileSigner(ctx);
      const links = await Promise.all(uploads.map((p) => sign(p.key!)));
      uploads.forEach((p, i) => urls!.set(p.id, links[i]!.url));
    }
  }
  const shown = records.map((r) => versioned(toProperty(r, urls), r.version));
  const ids = records.map((r) => r.id);
  if (ids.length === 0) return shown;
  if (include.includes("analytics")) {
    const rows = await ctx.db.select().from(propertyStats).where(and(eq(propertyStats.organizationId, ctx.organizationId), inJsonList(propertyStats.propertyId, ids))).all();
    const byId = new Map(rows.map((s) => [s.propertyId, s]));
    for (const p of shown) {
      const s = byId.get(p.id);
      p.analytics = {
        views: s?.views ?? 0,
        inquiries: s?.inquiries ?? 0,
        showings: s?.showings ?? 0,
        offers: s?.offers ?? 0,
        saveCount: s?.saves ?? 0,
        averageTimeOnSite: s && s.timeOnSiteCount > 0 ? Math.round(s.timeOnSiteTotal / s.timeOnSiteCount) : null,
      };
    }
  }
  if (include.includes("agent")) await attachAgents(ctx, records, shown);
  if (include.includes("comparables")) {
    for (const p of shown) {
      const latest = await ctx.db
        .select({ body: propertyValuations.body })
        .from(propertyValuations)
        .where(and(eq(propertyValuations.organizationId, ctx.organizationId), eq(propertyValuations.propertyId, p.id)))
        .orderBy(desc(propertyValuations.createdAt), desc(propertyValuations.id))
        .get();
      p.comparables = (latest?.body.comparables as unknown[] | undefined) ?? [];
    }
  }
  return shown;
}

/** include=agent: the listing agent when it is a user, with their public profile and rating. */
async function attachAgents(ctx: ServiceContext, records: PropertyRecord[], shown: Property[]): Promise<void> {
  const agentIds = [...new Set(records.map((r) => (listingOf(r).listingAgent as { id?: string } | undefined)?.id).filter((id): id is string => !!id))];
  const rows = agentIds.length
    ? await ctx.db
        .select({ id: users.id, name: users.name, email: users.email, slug: agentProfiles.slug, status: agentProfiles.status, averageRating: reputationAggregates.averageRating, totalReviews: reputationAggregates.totalReviews })
        .from(users)
        .leftJoin(agentProfiles, and(eq(agentProfiles.organizationId, users.organizationId), eq(agentProfiles.userId, users.id)))
        .leftJoin(reputationAggregates, and(eq(reputationAggregates.organizationId, users.organizationId), eq(reputationAggregates.agentUserId, users.id)))
        .where(and(eq(users.organizationId, ctx.organizationId), inJsonList(users.id, agentIds)))
        .all()
    : [];
  const byId = new Map(rows.map((r) => [r.id, r]));
  records.forEach((r, i) => {
    const a = byId.get((listingOf(r).listingAgent as { id?: string } | undefined)?.id ?? "");
    shown[i]!.agent = a
      ? { id: a.id, name: a.name, email: a.email, profileSlug: a.status === "PUBLISHED" ? a.slug : null, averageRating: a.averageRating ?? null, totalReviews: a.totalReviews ?? 0 }
      : null;
  });
}

export async function getProperty(ctx: ServiceContext, id: string, include: readonly Include[] = []): Promise<Property> {
  const [shown] = await present(ctx, [await findProperty(ctx, id)], include, true);
  return shown!;
}

/** POST /v1/properties: ACTIVE, daysOnMarket 0, listDate set, priceHistory LISTED; emits property.created. */
export async function createProperty(ctx: ServiceContext, raw: PropertyCreate): Promise<Property> {
  const input = writableInput(raw);
  const issues = await resolveAgents(ctx, input.listing as Record<string, unknown>);
  if (issues.length) throw new Validation(issues);
  await assertMlsIdFree(ctx, input.mlsId);
  const record = newPropertyRecord(ctx, input, new Date());
  const event = newEvent(ctx, "property.created", { object: toProperty(record), previousAttributes: null, changes: null });
  await commitProperty(ctx, [ctx.db.insert(properties).values(record), bumpCounters(ctx, 1)], [event]);
  return getProperty(ctx, record.id);
}

/**
 * PUT /v1/properties/{id}: partial groups, applied field by field to the property as it is at commit time, so
 * concurrent updates of different fields all land; the status and price rules run on the state they change.
 */
export async function updateProperty(ctx: ServiceContext, id: string, raw: PropertyUpdate): Promise<Property> {
  const input = writableInput(raw);
  const issues = await resolveAgents(ctx, input.listing as Record<string, unknown> | undefined);
  if (issues.length) throw new Validation(issues);
  return withRetries(async () => {
    const before = await readPropertyForWrite(ctx, id);
    if (input.mlsId && input.mlsId !== before.mlsId) await assertMlsIdFree(ctx, input.mlsId, id);
    const now = new Date();
    const { after, removedPhotos } = applyUpdate(before, input, now);
    const next = { ...after, updatedAt: now.toISOString(), version: before.version + 1 };
    const events = changeEvents(ctx, before, next);
    if (events.length === 0) return getProperty(ctx, id);
    // The answer before the commit, so that its idempotency record joins the batch.
    const answer = (await present(ctx, [next], [], true))[0]!;
    await commitProperty(ctx, replaceProperty(ctx, before, next), events, { answer, markSent: false });
    if (removedPhotos.some((p) => p.key)) ctx.defer(deletePropertyFiles(ctx.env, removedPhotos.flatMap((p) => (p.key ? [p.key] : []))));
    return answer;
  });
}

/**
 * DELETE /v1/properties/{id}: the property goes to the trash with its figures and valuations, guarded on the version
 * read (of concurrent deletes one wins and emits property.deleted). Its photos stay in R2 until the purge.
 */
export async function deleteProperty(ctx: ServiceContext, id: string): Promise<void> {
  await withRetries(async () => {
    const before = await readPropertyForWrite(ctx, id);
    const org = ctx.organizationId;
    await commit(
      ctx,
      [
        expectVersion(ctx.db, PROPERTIES, org, before),
        ...PROPERTY_CHILDREN.flatMap((child) => archiveRows(ctx, id, child.table, child.of(org, id))),
        ...archiveRows(ctx, id, properties, byId(ctx, id)),
        trashEntry(ctx, "property", id, propertyLabel(before)),
        bumpCounters(ctx, -1),
      ],
      [newEvent(ctx, "property.deleted", { object: { id }, previousAttributes: null, changes: null })],
    );
  });
}

/** What a property takes to the trash and brings back, besides its own row (the daily visitor and referrer rows carry no organization). */
const PROPERTY_CHILDREN = [
  { table: propertyStats, of: (org: string, id: string) => and(eq(propertyStats.organizationId, org), eq(propertyStats.propertyId, id)) },
  { table: propertyDailyStats, of: (org: string, id: string) => and(eq(propertyDailyStats.organizationId, org), eq(propertyDailyStats.propertyId, id)) },
  { table: propertyDailyVisitors, of: (_org: string, id: string) => eq(propertyDailyVisitors.propertyId, id) },
  { table: propertyDailyReferrers, of: (_org: string, id: string) => eq(propertyDailyReferrers.propertyId, id) },
  { table: propertyValuations, of: (org: string, id: string) => and(eq(propertyValuations.organizationId, org), eq(propertyValuations.propertyId, id)) },
];

/** "12 Elm St, Springfield" — how the trash list names a property. */
const propertyLabel = (p: PropertyRecord) => [p.address.street, p.city].filter((v) => typeof v === "string" && v).join(", ") || p.id;

/** POST /v1/properties/{id}/restore: the property back from the trash as it was, photos and figures included; emits property.restored. */
export async function restoreProperty(ctx: ServiceContext, id: string): Promise<Property> {
  return withRetries(async () => {
    const { record } = await readTrashed<PropertyRecord>(ctx, "property", id, properties, "Property");
    await assertMlsIdFree(ctx, record.mlsId);
    const frame = restoreFrame(ctx, "property", id);
    await commitProperty(
      ctx,
      [frame.guard, restoreRows(ctx.db, id, properties), ...PROPERTY_CHILDREN.map((child) => restoreRows(ctx.db, id, child.table)), ...frame.clear, bumpCounters(ctx, 1)],
      [newEvent(ctx, "property.restored", { object: toProperty(record), previousAttributes: null, changes: null })],
    );
    return getProperty(ctx, id);
  });
}

