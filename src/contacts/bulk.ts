import { checkCustomFields, withCustomFields } from "../crm/custom-fields";
import { expectVersions, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { regionOf } from "../lib/phone";
import type { DomainEvent } from "../events/event";
import type { ServiceContext } from "../service-context";
import type { ContactRecord } from "./mapping";
import type { BulkUpdate } from "./schemas";
import { facetMoves } from "./facets";
import {
  applyInput,
  assertAssignee,
  bumpCounters,
  changeEvents,
  CONTACTS,
  NO_ACTIVITY,
  readForWrite,
  type TagChange,
  tagStatements,
  updateContactStatement,
  writableInput,
} from "./writes";

/**
 * PATCH /v1/contacts/bulk. `updates` is validated once (by the route); each id of the caller's organization gets it,
 * ids that are unknown or another organization's count as failed, and every successful change is written in one
 * atomic batch with its events, guarded on the versions read (one statement for all of them); a lost race re-reads
 * and re-applies the whole update.
 */
export async function bulkUpdateContacts(ctx: ServiceContext, body: BulkUpdate) {
  const updates = writableInput(body.updates);
  const ids = [...new Set(body.contactIds)];
  await assertAssignee(ctx, updates.assignedTo, "updates.assignedTo");
  const found = await withRetries(async () => {
    const [{ rows, figures }, custom] = await Promise.all([
      readForWrite(ctx, ids),
      checkCustomFields(ctx, "contact", updates.customFields, ["updates"]),
    ]);
    const now = new Date();
    const changed: { before: ContactRecord; after: ContactRecord }[] = [];
    const events: DomainEvent[] = [];
    for (const before of rows) {
      const after = {
        ...withCustomFields(applyInput(before, updates, figures.get(before.id) ?? NO_ACTIVITY, now, regionOf(ctx)), custom),
        updatedAt: now.toISOString(),
        version: before.version + 1,
      };
      const contactEvents = changeEvents(ctx, before, after);
      if (contactEvents.length === 0 && after.leadScoreAuto === before.leadScoreAuto) continue;
      changed.push({ before, after });
      events.push(...contactEvents);
    }
    if (changed.length > 0) {
      const tagChanges: TagChange[] = changed.map(({ before, after }) => ({
        contactId: before.id,
        before: before.tags,
        after: after.tags,
      }));
      await commit(
        ctx,
        [
          ...(custom?.guard ?? []),
          expectVersions(
            ctx.db,
            CONTACTS,
            ctx.organizationId,
            changed.map(({ before }) => before),
          ),
          ...changed.map(({ before, after }) => updateContactStatement(ctx, before, after)),
          ...tagStatements(ctx, tagChanges, now.toISOString()),
          bumpCounters(ctx, 0),
          ...changed.flatMap(({ before, after }) => facetMoves(ctx, before, after)),
        ],
        events,
      );
    }
    return new Set(rows.map((r) => r.id));
  });
  const results = ids.map((id) => ({ id, success: found.has(id) }));
  const updated = results.filter((r) => r.success).length;
  return { updated, failed: results.length - updated, results };
}
