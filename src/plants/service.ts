import { and, eq, sql } from "drizzle-orm";
import { plants } from "../db/schema";
import { outboxEvents } from "../db/schema";
import { NotFound } from "../lib/errors";
import { nowIso } from "../lib/time";
import { deferPublish, newEvent, stageEvent } from "../events/outbox";
import type { ServiceContext } from "../platform/context";
import type { NewPlant, Plant } from "./schemas";

const byId = (organizationId: string, id: number) => and(eq(plants.organizationId, organizationId), eq(plants.id, id));

/**
 * POST /plants: the client names the id, so posting an id that exists in the organization replaces that plant
 * (the sample store's classic upsert) instead of failing; the event says which of the two happened.
 */
export async function savePlant(ctx: ServiceContext, input: NewPlant): Promise<Plant> {
  const { db, organizationId } = ctx;
  const now = nowIso();
  const existing = await db.select({ id: plants.id }).from(plants).where(byId(organizationId, input.id)).get();
  const plant = { id: input.id, name: input.name, tag: input.tag ?? null };
  const event = newEvent(ctx, existing ? "plant.updated" : "plant.created", { object: plant });
  await db.batch([
    db
      .insert(plants)
      .values({ organizationId, ...plant, createdAt: now, updatedAt: now })
      .onConflictDoUpdate({ target: [plants.organizationId, plants.id], set: { name: plant.name, tag: plant.tag, updatedAt: now } }),
    stageEvent(db, event),
  ]);
  deferPublish(ctx, [event]);
  return toPlant(plant);
}

/** DELETE /plants/{id}: one atomic batch; the event row is only written when the plant was there to delete. */
export async function deletePlant(ctx: ServiceContext, id: number): Promise<void> {
  const { db, organizationId } = ctx;
  const event = newEvent(ctx, "plant.deleted", { id });
  const [, deleted] = await db.batch([
    db
      .insert(outboxEvents)
      .select(
        sql`SELECT ${event.id}, ${organizationId}, ${event.type}, ${JSON.stringify(event.actor)}, ${event.occurredAt}, ${JSON.stringify(event.data)}, NULL, 0
            WHERE EXISTS (SELECT 1 FROM ${plants} WHERE ${byId(organizationId, id)})`,
      ),
    db.delete(plants).where(byId(organizationId, id)).returning({ id: plants.id }),
  ]);
  if (deleted.length === 0) throw new NotFound("Plant");
  deferPublish(ctx, [event]);
}

function toPlant(row: { name: string; tag: string | null }): Plant {
  return row.tag === null ? { name: row.name } : { name: row.name, tag: row.tag };
}
