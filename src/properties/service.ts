import { and, eq, sql } from "drizzle-orm";
import {
  properties,
  propertyDailyReferrers,
  propertyDailyStats,
  propertyDailyVisitors,
  propertyStats,
  propertyValuations,
} from "../db/schema";
import { checkCustomFields, customFieldDeleted, withCustomFields } from "../crm/custom-fields";
import { expectVersion, type Statement, StaleWrite, withRetries } from "../db/write";
import { commit, type CommitOptions } from "../events/commit";
import { newEvent } from "../events/outbox";
import { Conflict, NotFound, Validation } from "../lib/errors";
import type { ServiceContext } from "../service-context";
import { propertyWriteReads } from "./preload";
import { type PropertyRecord, toProperty } from "./mapping";
import { present } from "./present";
import { deletePropertyFiles } from "./files";
import { archiveRows, readTrashed, restoreFrame, restoreRows, trashEntry } from "../crm/trash";
import type { Include, Property } from "./schemas";
import {
  applyUpdate,
  bumpCounters,
  changeEvents,
  newPropertyRecord,
  PROPERTIES,
  replaceProperty,
  resolveAgents,
  writableInput,
} from "./writes";
import type { PropertyCreate, PropertyUpdate } from "./schemas";
export { propertiesErasable } from "./erasure";

export { listProperties, propertyExportWalk } from "./list";
export { inquiryWrite } from "./signals";
export { planPropertyImport } from "./import-batch";

const byId = (ctx: ServiceContext, id: string) => and(eq(properties.id, id), eq(properties.organizationId, ctx.organizationId));

/** The property of the caller's organization, or 404 exactly as for an id that exists nowhere. */
export async function findProperty(ctx: ServiceContext, id: string): Promise<PropertyRecord> {
  const row = await ctx.db.select().from(properties).where(byId(ctx, id)).get();
  if (!row) throw new NotFound("Property");
  return row;
}

/** The property a write starts from (read with the authentication, once, if it was): 404 when gone, 412 when If-Match names another version. */
export async function readPropertyForWrite(ctx: ServiceContext, id: string): Promise<PropertyRecord> {
  const [[before]] = await propertyWriteReads.read(ctx, id);
  return before!;
}

/**
 * The property of the organization at exactly this street and postal code (case and spacing of the zip aside), or
 * null: how lead intake recognises a listing a lead names by its address. One range of the zip index.
 */
export async function findPropertyByAddress(
  ctx: ServiceContext,
  address: { street: string; zipCode: string },
): Promise<PropertyRecord | null> {
  const rows = await ctx.db
    .select()
    .from(properties)
    .where(
      and(
        eq(properties.organizationId, ctx.organizationId),
        eq(properties.zipCode, address.zipCode.trim()),
        sql`lower(trim(json_extract(${properties.address}, '$.street'))) = ${address.street.trim().toLowerCase()}`,
      ),
    )
    .limit(2);
  // Two listings at one address (a unit number tells them apart, and the lead gave none) name neither.
  return rows.length === 1 ? rows[0]! : null;
}

const mlsConflict = () => new Conflict("Another property of your organization has this mlsId", "duplicate_mls_id");

/** `commit` for properties: a unique-index race on mlsId is a 409, not a 500. */
export async function commitProperty(
  ctx: ServiceContext,
  statements: Statement[],
  events: Parameters<typeof commit>[2],
  options?: CommitOptions,
): Promise<void> {
  try {
    await commit(ctx, statements, events, options);
  } catch (err) {
    if (String(err).includes("properties_org_mls_unique") || String(err).includes("properties.organization_id, properties.mls_id"))
      throw mlsConflict();
    throw err;
  }
}

async function assertMlsIdFree(ctx: ServiceContext, mlsId: string | null | undefined, exceptId?: string): Promise<void> {
  if (!mlsId) return;
  const clash = await ctx.db
    .select({ id: properties.id })
    .from(properties)
    .where(and(eq(properties.organizationId, ctx.organizationId), eq(properties.mlsId, mlsId)))
    .get();
  if (clash && clash.id !== exceptId) throw mlsConflict();
}

export async function getProperty(ctx: ServiceContext, id: string, include: readonly Include[] = []): Promise<Property> {
  const [shown] = await present(ctx, [await findProperty(ctx, id)], include, true);
  return shown!;
}

/** POST /v1/properties: ACTIVE, daysOnMarket 0, listDate set, priceHistory LISTED; emits property.created. */
export async function createProperty(ctx: ServiceContext, raw: PropertyCreate): Promise<Property> {
  const input = writableInput(raw);
  const [issues, , custom] = await Promise.all([
    resolveAgents(ctx, input.listing as Record<string, unknown>),
    assertMlsIdFree(ctx, input.mlsId),
    checkCustomFields(ctx, "property", input.customFields),
  ]);
  if (issues.length) throw new Validation(issues);
  const record = withCustomFields(newPropertyRecord(ctx, input, new Date()), custom);
  const event = newEvent(ctx, "property.created", { object: toProperty(record), previousAttributes: null, changes: null });
  try {
    await commitProperty(ctx, [...(custom?.guard ?? []), ctx.db.insert(properties).values(record), bumpCounters(ctx, 1)], [event]);
  } catch (err) {
    // The only guard of a create: a custom field it sets was deleted since its definitions were read.
    if (err instanceof StaleWrite) throw customFieldDeleted("property");
    throw err;
  }
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
    const [, custom] = await Promise.all([
      input.mlsId && input.mlsId !== before.mlsId ? assertMlsIdFree(ctx, input.mlsId, id) : undefined,
      checkCustomFields(ctx, "property", input.customFields),
    ]);
    const now = new Date();
    const { after, removedPhotos } = applyUpdate(before, input, now);
    const next = { ...withCustomFields(after, custom), updatedAt: now.toISOString(), version: before.version + 1 };
    const events = changeEvents(ctx, before, next);
    if (events.length === 0) return getProperty(ctx, id);
    // The answer before the commit, so that its idempotency record joins the batch.
    const answer = (await present(ctx, [next], [], true))[0]!;
    await commitProperty(ctx, [...(custom?.guard ?? []), ...replaceProperty(ctx, before, next)], events, { answer, markSent: false });
    if (removedPhotos.some((p) => p.key))
      ctx.defer(
        deletePropertyFiles(
          ctx,
          removedPhotos.flatMap((p) => (p.key ? [p.key] : [])),
        ),
      );
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
  {
    table: propertyDailyStats,
    of: (org: string, id: string) => and(eq(propertyDailyStats.organizationId, org), eq(propertyDailyStats.propertyId, id)),
  },
  { table: propertyDailyVisitors, of: (_org: string, id: string) => eq(propertyDailyVisitors.propertyId, id) },
  { table: propertyDailyReferrers, of: (_org: string, id: string) => eq(propertyDailyReferrers.propertyId, id) },
  {
    table: propertyValuations,
    of: (org: string, id: string) => and(eq(propertyValuations.organizationId, org), eq(propertyValuations.propertyId, id)),
  },
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
      [
        frame.guard,
        restoreRows(ctx.db, id, properties),
        ...PROPERTY_CHILDREN.map((child) => restoreRows(ctx.db, id, child.table)),
        ...frame.clear,
        bumpCounters(ctx, 1),
      ],
      [newEvent(ctx, "property.restored", { object: toProperty(record), previousAttributes: null, changes: null })],
    );
    return getProperty(ctx, id);
  });
}
