import { and, eq } from "drizzle-orm";
import { plants } from "../db/schema";
import { expectNoRow, expectVersion, type VersionedTable, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { newEvent } from "../events/outbox";
import { NotFound } from "../lib/errors";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import type { NewPlant, Plant } from "./schemas";

const PLANTS: VersionedTable = { table: plants, id: plants.id, organizationId: plants.organizationId, version: plants.version };

const byId = (organizationId: string, id: number) => and(eq(plants.organizationId, organizationId), eq(plants.id, id));

const findVersion = (ctx: ServiceContext, id: number) =>
  ctx.db.select({ id: plants.id, version: plants.version }).from(plants).where(byId(ctx.organizationId, id)).get();

/**
 * POST /plants: the client names the id, so posting an id that exists in the organization replaces that plant
 * (the sample store's classic upsert) instead of failing; the event says which of the two happened. Of concurrent
 * posts of a new id exactly one creates it: the insert is guarded on the id being free, the update on the version.
 */
export async function savePlant(ctx: ServiceContext, input: NewPlant): Promise<Plant> {
  const { db, organizationId } = ctx;
  const plant = { id: input.id, name: input.name, tag: input.tag ?? null };
  await withRetries(async () => {
    const existing = await findVersion(ctx, input.id);
    const now = nowIso();
    const event = newEvent(ctx, existing ? "plant.updated" : "plant.created", { object: plant });
    const write = existing
      ? [
          expectVersion(db, PLANTS, organizationId, existing),
          db
            .update(plants)
            .set({ name: plant.name, tag: plant.tag, updatedAt: now, version: existing.version + 1 })
            .where(byId(organizationId, input.id)),
        ]
      : [
          expectNoRow(db, plants, byId(organizationId, input.id)),
          db.insert(plants).values({ organizationId, ...plant, createdAt: now, updatedAt: now, version: 1 }),
        ];
    await commit(ctx, write, [event]);
  });
  return toPlant(plant);
}

/** DELETE /plants/{id}: guarded on the version read, so of concurrent deletes one succeeds and emits the event. */
export async function deletePlant(ctx: ServiceContext, id: number): Promise<void> {
  await withRetries(async () => {
    const existing = await findVersion(ctx, id);
    if (!existing) throw new NotFound("Plant");
    const event = newEvent(ctx, "plant.deleted", { id });
    await commit(
      ctx,
      [expectVersion(ctx.db, PLANTS, ctx.organizationId, existing), ctx.db.delete(plants).where(byId(ctx.organizationId, id))],
      [event],
    );
  });
}

function toPlant(row: { name: string; tag: string | null }): Plant {
  return row.tag === null ? { name: row.name } : { name: row.name, tag: row.tag };
}
