import { and, asc, count, desc, eq, gt, inArray, lt, lte, or } from "drizzle-orm";
import type { Db } from "../db/client";
import { contactMergedKeys, contactRouting, type TrashKind, trashEntries, trashRows } from "../db/schema";
import { dealPrefix, propertyPrefix, templatePrefix } from "../files/keys";
import type { Env } from "../env";
import { removeFiles } from "../files/storage";
import { decodeCursor, encodeCursor } from "../lib/cursor";
import { Validation } from "../lib/errors";
import { createLogger, loggableError } from "../lib/log";
import type { ServiceContext } from "../service-context";
import type { TrashItem, TrashListQuery } from "./schemas";
export { trashErasable } from "./erasure";

const SORT = "deletedAt:desc";

/**
 * GET /v1/trash: what can be restored, newest delete first, keyset-paginated on (deletedAt, id) with the page and the
 * total read in one round trip. Purged and erased records (tombstones) are not listed.
 */
export async function listTrash(ctx: ServiceContext, q: TrashListQuery) {
  const now = new Date().toISOString();
  const listed = and(
    eq(trashEntries.organizationId, ctx.organizationId),
    eq(trashEntries.state, "trashed"),
    q.kind ? eq(trashEntries.kind, q.kind) : undefined,
    gt(trashEntries.restorableUntil, now),
  );
  let page = listed;
  if (q.cursor) {
    const { values, id } = decodeCursor(q.cursor, SORT, 1);
    const at = values[0];
    if (typeof at !== "string")
      throw new Validation([{ field: "cursor", path: ["cursor"], code: "invalid_cursor", message: "Cursor is not one this API issued" }]);
    page = and(listed, or(lt(trashEntries.deletedAt, at), and(eq(trashEntries.deletedAt, at), lt(trashEntries.recordId, id))));
  }
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(trashEntries)
      .where(page)
      .orderBy(desc(trashEntries.deletedAt), desc(trashEntries.recordId))
      .limit(q.limit + 1),
    ctx.db.select({ n: count() }).from(trashEntries).where(listed),
  ]);
  const data: TrashItem[] = rows.slice(0, q.limit).map((r) => ({
    id: r.recordId,
    kind: r.kind,
    label: r.label ?? "",
    deletedAt: r.deletedAt,
    deletedBy: r.deletedBy,
    restorableUntil: r.restorableUntil,
    mergedInto: r.mergedInto,
  }));
  const hasMore = rows.length > q.limit;
  const last = data.at(-1);
  return {
    data,
    pagination: {
      hasMore,
      nextCursor: hasMore && last ? encodeCursor({ sort: SORT, values: [last.deletedAt], id: last.id }) : null,
      total: total?.n ?? 0,
      limit: q.limit,
    },
  };
}

/** The R2 prefix of a record's files (contacts have none). */
const filesOf = (kind: TrashKind, organizationId: string, id: string): string | null =>
  kind === "deal"
    ? dealPrefix(organizationId, id)
    : kind === "property"
      ? propertyPrefix(organizationId, id)
      : kind === "template"
        ? templatePrefix(organizationId, id)
        : null;

/** Records one purge pass takes at most: the cron runs every few minutes, so a large trash empties over passes. */
export const PURGE_BATCH = 25;

/**
 * Cron: removes for good what has been in the trash for its 30 days. Each record is first claimed (`purging`: from
 * then on no restore can start, see `restoreFrame`), then its R2 files go, then its kept rows in one batch that
 * leaves the entry as a tombstone (`purged`: id, kind and deletion time only). A pass that fails half-way leaves the
 * record `purging`, and the next pass takes it up again: deleting files and rows twice is harmless.
 */
export async function purgeTrash(env: Env, db: Db, { now = new Date(), max = PURGE_BATCH } = {}): Promise<number> {
  const at = now.toISOString();
  const due = await db
    .update(trashEntries)
    .set({ state: "purging", endedAt: at })
    .where(
      inArray(
        trashEntries.recordId,
        db
          .select({ id: trashEntries.recordId })
          .from(trashEntries)
          .where(and(inArray(trashEntries.state, ["trashed", "purging"]), lte(trashEntries.restorableUntil, at)))
          .orderBy(asc(trashEntries.restorableUntil))
          .limit(max),
      ),
    )
    .returning();
  let purged = 0;
  for (const entry of due) {
    try {
      const prefix = filesOf(entry.kind, entry.organizationId, entry.recordId);
      if (prefix) await removeFiles(env.FILES, [], prefix);
      await db.batch([
        db.delete(trashRows).where(eq(trashRows.recordId, entry.recordId)),
        // A contact gone for good takes the e-mails and phones of the contacts merged into it (merge/merge.ts).
        db
          .delete(contactMergedKeys)
          .where(and(eq(contactMergedKeys.organizationId, entry.organizationId), eq(contactMergedKeys.contactId, entry.recordId))),
        // And its lead routing (issue 46): the trail of where it was sent.
        db
          .delete(contactRouting)
          .where(and(eq(contactRouting.organizationId, entry.organizationId), eq(contactRouting.contactId, entry.recordId))),
        db
          .update(trashEntries)
          .set({ state: "purged", label: null, deletedBy: null })
          .where(and(eq(trashEntries.recordId, entry.recordId), eq(trashEntries.state, "purging"))),
      ]);
      purged++;
    } catch (err) {
      createLogger().warn("trash purge failed; the next pass resumes it", {
        recordId: entry.recordId,
        kind: entry.kind,
        error: loggableError(err),
      });
    }
  }
  return purged;
}
