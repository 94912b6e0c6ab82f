import { sql } from "drizzle-orm";
import { auditLog } from "../db/schema";
import { nowIso } from "../lib/time";
import type { EventConsumer } from "./consumers";

/** The audit log: records every domain event in the organization's audit_log, one statement per queue batch. */
export const auditLogConsumer: EventConsumer = {
  name: "audit-log",
  accepts: () => true,
  async handle(events, { db }) {
    const rows = JSON.stringify(events.map((e) => [e.id, e.organizationId, e.type, e.actor.userId ?? null, e.occurredAt]));
    await db
      .insert(auditLog)
      .select(
        sql`SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'), json_extract(value, '$[4]'), ${nowIso()}
            FROM json_each(${rows}) WHERE true`,
      )
      .onConflictDoNothing()
      .run();
  },
};
