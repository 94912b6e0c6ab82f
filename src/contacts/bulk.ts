import { and, eq } from "drizzle-orm";
import { contacts } from "../db/schema";
import { deferPublish, stageEvent } from "../events/outbox";
import { inJsonList } from "../lib/sql";
import type { ServiceContext } from "../platform/context";
import type { BulkUpdate } from "./schemas";
import { activityFigures, applyInput, assertAssignee, bumpCounters, changeEvents, NO_ACTIVITY, type Statement, tagStatements, updateStatement, writableInput } from "./writes";

/**
 * PATCH /v1/contacts/bulk. `updates` is validated once (by the route); each id of the caller's organization gets it,
 * ids that are unknown or another organization's count as failed, and every successful change is written in one
 * atomic batch together with its events.
 */
export async function bulkUpdateContacts(ctx: ServiceContext, body: BulkUpdate) {
  const updates = writableInput(body.updates);
  const ids = [...new Set(body.contactIds)];
  const [found, figures] = await Promise.all([
    ctx.db.select().from(contacts).where(and(eq(contacts.organizationId, ctx.organizationId), inJsonList(contacts.id, ids))).all(),
    activityFigures(ctx, ids),
    assertAssignee(ctx, updates.assignedTo, "updates.assignedTo"),
  ]);
  const byId = new Map(found.map((c) => [c.id, c]));
  const now = new Date();
  const statements: Statement[] = [];
  const events = [];
  let changed = 0;
  for (const before of found) {
    const after = { ...applyInput(before, updates, figures.get(before.id) ?? NO_ACTIVITY, now), updatedAt: now.toISOString() };
    const contactEvents = changeEvents(ctx, before, after);
    if (contactEvents.length === 0 && after.leadScoreAuto === before.leadScoreAuto) continue;
    statements.push(updateStatement(ctx, after), ...tagStatements(ctx, before.id, before.tags, after.tags, after.updatedAt));
    events.push(...contactEvents);
    changed++;
  }
  if (changed > 0) {
    statements.push(bumpCounters(ctx, 0), ...events.map((e) => stageEvent(ctx.db, e)));
    await ctx.db.batch(statements as [Statement, ...Statement[]]);
    deferPublish(ctx, events);
  }
  const results = ids.map((id) => ({ id, success: byId.has(id) }));
  const updated = results.filter((r) => r.success).length;
  return { updated, failed: results.length - updated, results };
}
