import { and, count, desc, eq, isNotNull, isNull, sql } from "drizzle-orm";
import { bumpResourceCounter, type ListResource } from "../crm/list-totals";
import { type CustomFieldObject, MAX_DEFINITIONS_PER_OBJECT, OBJECT_TABLES } from "../crm/custom-fields";
import { decodeNewestFirstCursor, olderThan, paginate } from "../crm/pagination";
import { customFieldDefinitions } from "../db/schema";
import { expectRow, guard, isGuardFailure } from "../db/write";
import { Conflict, NotFound } from "../lib/errors";
import { newId } from "../lib/ids";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import type { CustomField, CustomFieldCreate, CustomFieldListQuery } from "./schemas";

/**
 * Custom field definitions (docs/domains/search-and-custom-fields.md). The values are on the records (crm/custom-fields.ts);
 * a definition's delete takes its values off every record of its object, so a key created again starts empty. A
 * delete runs in three steps (mark, sweep, remove the row) and is finished by whoever meets the mark next.
 */
type Row = typeof customFieldDefinitions.$inferSelect;

const toCustomField = (r: Row): CustomField => ({
  id: r.id,
  object: r.object as CustomField["object"],
  key: r.key,
  label: r.label,
  type: r.type as CustomField["type"],
  options: r.options,
  createdAt: r.createdAt,
});

const RESOURCES: Record<CustomFieldObject, ListResource> = { contact: "contacts", deal: "deals", property: "properties" };

/** Records whose values one sweep statement rewrites: a few hundred rows keep each statement short. */
export const SWEEP_CHUNK = 500;

/**
 * Takes the values of `key` off every `object` record of the organization, those in the trash included, SWEEP_CHUNK
 * rows a statement, each in a batch
 * that moves the object's list version (cached filtered totals count again). The records' versions move (their ETags
 * change), their updatedAt does not and no event is emitted: the organization removed a field, nobody edited these
 * records. Bounded by the organization's records of that object (200 statements for 100,000 with the value).
 */
export async function sweepValues(ctx: ServiceContext, object: CustomFieldObject, key: string): Promise<number> {
  const table = OBJECT_TABLES[object];
  const path = `$.${key}`;
  let swept = 0;
  for (;;) {
    const [res] = await ctx.d1.batch([
      ctx.d1
        .prepare(
          `UPDATE ${table} SET custom_fields = json_remove(custom_fields, ?), version = version + 1
           WHERE rowid IN (SELECT rowid FROM ${table} WHERE organization_id = ? AND json_extract(custom_fields, ?) IS NOT NULL LIMIT ${SWEEP_CHUNK})`,
        )
        .bind(path, ctx.organizationId, path),
      ctx.d1
        .prepare("UPDATE resource_counters SET version = version + 1 WHERE organization_id = ? AND resource = ?")
        .bind(ctx.organizationId, RESOURCES[object]),
    ]);
    const changed = res!.meta.changes ?? 0;
    swept += changed;
    if (changed < SWEEP_CHUNK) break;
  }
  // The trash keeps rows as JSON (crm/trash.ts), the values as the text of their object (`|| ''` keeps json_set from
  // nesting it as an object): a restore brings no value back.
  for (;;) {
    const res = await ctx.d1
      .prepare(
        `UPDATE trash_rows SET row = json_set(row, '$.customFields', json_remove(json_extract(row, '$.customFields'), ?) || '')
         WHERE rowid IN (SELECT rowid FROM trash_rows WHERE organization_id = ? AND table_name = ? AND json_extract(json_extract(row, '$.customFields'), ?) IS NOT NULL LIMIT ${SWEEP_CHUNK})`,
      )
      .bind(path, ctx.organizationId, table, path)
      .run();
    const changed = res.meta.changes ?? 0;
    swept += changed;
    if (changed < SWEEP_CHUNK) return swept;
  }
}

/**
 * POST /v1/custom-fields. 409 duplicate_key for a key the object already has (the unique index decides between
 * concurrent creations), 409 too_many_custom_fields past MAX_DEFINITIONS_PER_OBJECT (counted in the batch). A
 * definition of the key whose delete was cut short is finished first, so the new field starts empty.
 */
export async function createCustomField(ctx: ServiceContext, input: CustomFieldCreate): Promise<CustomField> {
  const row: Row = {
    id: newId(),
    organizationId: ctx.organizationId,
    object: input.object,
    key: input.key,
    label: input.label,
    type: input.type,
    options: input.options ?? null,
    createdAt: nowIso(),
    deletedAt: null,
  };
  const ofObject = and(eq(customFieldDefinitions.organizationId, ctx.organizationId), eq(customFieldDefinitions.object, input.object));
  const taken = await ctx.db
    .select()
    .from(customFieldDefinitions)
    .where(and(ofObject, eq(customFieldDefinitions.key, input.key)))
    .get();
  if (taken && !taken.deletedAt) throw duplicateKey(input);
  if (taken) await finishDelete(ctx, taken);
  try {
    await ctx.db.batch([
      guard(ctx.db, sql`(SELECT COUNT(*) FROM ${customFieldDefinitions} WHERE ${ofObject}) < ${MAX_DEFINITIONS_PER_OBJECT}`),
      ctx.db.insert(customFieldDefinitions).values(row),
      // A filter on this key may have been counted while it meant another field: cached totals count again.
      bumpResourceCounter(ctx.db, ctx.organizationId, RESOURCES[input.object], 0),
    ]);
  } catch (err) {
    if (isGuardFailure(err))
      throw new Conflict(
        `An organization has at most ${MAX_DEFINITIONS_PER_OBJECT} custom fields on ${OBJECT_TABLES[input.object]}: delete one first`,
        "too_many_custom_fields",
      );
    if (String(err).includes("custom_field_definitions")) throw duplicateKey(input);
    throw err;
  }
  return toCustomField(row);
}

const duplicateKey = (input: CustomFieldCreate) =>
  new Conflict(`${OBJECT_TABLES[input.object]} already have a custom field '${input.key}'`, "duplicate_key");

/** GET /v1/custom-fields: newest first, keyset pages (an organization holds at most 300); a field being deleted is gone. */
export async function listCustomFields(ctx: ServiceContext, q: CustomFieldListQuery) {
  const mine = and(
    eq(customFieldDefinitions.organizationId, ctx.organizationId),
    isNull(customFieldDefinitions.deletedAt),
    q.object ? eq(customFieldDefinitions.object, q.object) : undefined,
  );
  const after = decodeNewestFirstCursor(q.cursor);
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(customFieldDefinitions)
      .where(after ? and(mine, olderThan(customFieldDefinitions.createdAt, customFieldDefinitions.id, after)) : mine)
      .orderBy(desc(customFieldDefinitions.createdAt), desc(customFieldDefinitions.id))
      .limit(q.limit + 1),
    ctx.db.select({ n: count() }).from(customFieldDefinitions).where(mine),
  ]);
  const { page, pagination } = paginate(rows, q.limit, total?.n ?? 0, (r) => ({ at: r.createdAt, id: r.id }));
  return { data: page.map(toCustomField), pagination };
}

/** The sweep of a marked definition's values, then its row. */
async function finishDelete(ctx: ServiceContext, row: Row): Promise<void> {
  await sweepValues(ctx, row.object as CustomFieldObject, row.key);
  await ctx.db
    .delete(customFieldDefinitions)
    .where(
      and(
        eq(customFieldDefinitions.organizationId, ctx.organizationId),
        eq(customFieldDefinitions.id, row.id),
        isNotNull(customFieldDefinitions.deletedAt),
      ),
    );
}

/**
 * DELETE /v1/custom-fields/{id}: the definition is marked (from then on writes, filters and the list refuse or omit
 * it; a write checked against it before and committed after fails its guard, crm/custom-fields.ts
 * `checkCustomFields`, so no value lands behind the sweep), its values leave every record (`sweepValues`), and its
 * row goes. Of concurrent deletes the one that marks it answers 204, the others 404; a delete that meets a mark left
 * by one cut short finishes that one's work and answers 404 (the field was already gone).
 */
export async function deleteCustomField(ctx: ServiceContext, id: string): Promise<void> {
  const mine = and(eq(customFieldDefinitions.organizationId, ctx.organizationId), eq(customFieldDefinitions.id, id));
  const row = await ctx.db.select().from(customFieldDefinitions).where(mine).get();
  if (!row) throw new NotFound("Custom field");
  if (row.deletedAt) {
    await finishDelete(ctx, row);
    throw new NotFound("Custom field");
  }
  const live = and(mine, isNull(customFieldDefinitions.deletedAt));
  try {
    await ctx.db.batch([
      expectRow(ctx.db, customFieldDefinitions, live),
      ctx.db.update(customFieldDefinitions).set({ deletedAt: nowIso() }).where(live),
      bumpResourceCounter(ctx.db, ctx.organizationId, RESOURCES[row.object as CustomFieldObject], 0),
    ]);
  } catch (err) {
    if (isGuardFailure(err)) throw new NotFound("Custom field");
    throw err;
  }
  await finishDelete(ctx, row);
}
