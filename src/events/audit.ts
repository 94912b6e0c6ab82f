import { auditLog } from "../db/schema";
import { nowIso } from "../lib/time";
import type { EventConsumer } from "./consumers";

/** Records every domain event in the organization's activity log. */
export const auditConsumer: EventConsumer = {
  name: "audit-log",
  accepts: () => true,
  async handle(event, { db }) {
    await db
      .insert(auditLog)
      .values({
        eventId: event.id,
        organizationId: event.organizationId,
        type: event.type,
        actorUserId: event.actor.userId ?? null,
        occurredAt: event.occurredAt,
        recordedAt: nowIso(),
      })
      .onConflictDoNothing()
      .run();
  },
};
