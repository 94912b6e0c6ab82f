import { and, desc, eq, sql } from "drizzle-orm";
import { clickwrapAgreements, clickwrapVersions } from "../db/schema";
import { versioned } from "../db/write";
import { decodeCursor, encodeCursor } from "../lib/cursor";
import { NotFound, Validation } from "../lib/errors";
import type { ServiceContext } from "../service-context";
import { summary, versionCount } from "./service";

/**
 * GET /api/clickwrap/{agreementId}: the agreement, its current text and a page of its history. The history is every
 * text ever published, the current one first, then by when each was last current (newest first), the hash breaking
 * ties. The current text leads even when another became current in the same millisecond, so it is read on its own
 * (a primary-key lookup) and the page walks the others on clickwrap_versions_history_idx from the cursor: one batch,
 * one round trip, however long the history.
 */
const HISTORY_SORT = "current,currentSince:desc,versionHash:desc";

interface HistoryEntry {
  versionHash: string;
  title: string;
  publishedAt: string;
  currentSince: string;
  current: boolean;
}

/** Where a page starts: after the current text (`afterCurrent`), or after the non-current text (currentSince, versionHash). */
type After = { afterCurrent: true } | { afterCurrent: false; currentSince: string; versionHash: string };

function decodeHistoryCursor(raw: string | undefined): After | null {
  if (raw === undefined) return null;
  const { values, id } = decodeCursor(raw, HISTORY_SORT, 2);
  const [rank, currentSince] = values;
  if ((rank !== 0 && rank !== 1) || typeof currentSince !== "string") {
    throw new Validation([{ field: "cursor", path: ["cursor"], code: "invalid_cursor", message: "Cursor is not one this API issued" }]);
  }
  return rank === 1 ? { afterCurrent: true } : { afterCurrent: false, currentSince, versionHash: id };
}

const cursorAfter = (e: HistoryEntry) =>
  encodeCursor({ sort: HISTORY_SORT, values: [e.current ? 1 : 0, e.currentSince], id: e.versionHash });

export async function getAgreement(ctx: ServiceContext, id: string, q: { limit: number; cursor?: string }) {
  const after = decodeHistoryCursor(q.cursor);
  const mine = and(eq(clickwrapAgreements.organizationId, ctx.organizationId), eq(clickwrapAgreements.id, id));
  const currentHash = sql`(SELECT ${clickwrapAgreements.versionHash} FROM ${clickwrapAgreements} WHERE ${mine})`;
  const v = clickwrapVersions;
  const [[head], [currentText], others] = await ctx.db.batch([
    ctx.db.select({ row: clickwrapAgreements, versions: versionCount() }).from(clickwrapAgreements).where(mine),
    ctx.db
      .select({ versionHash: v.versionHash, title: v.title, body: v.body, publishedAt: v.publishedAt, currentSince: v.currentSince })
      .from(v)
      .where(and(eq(v.organizationId, ctx.organizationId), eq(v.agreementId, id), sql`${v.versionHash} = ${currentHash}`)),
    ctx.db
      .select({ versionHash: v.versionHash, title: v.title, publishedAt: v.publishedAt, currentSince: v.currentSince })
      .from(v)
      .where(
        and(
          eq(v.organizationId, ctx.organizationId),
          eq(v.agreementId, id),
          // Unknown or another organization's agreement: NULL, and no row compares unequal to NULL.
          sql`${v.versionHash} <> ${currentHash}`,
          after && !after.afterCurrent
            ? sql`(${v.currentSince}, ${v.versionHash}) < (${after.currentSince}, ${after.versionHash})`
            : undefined,
        ),
      )
      .orderBy(desc(v.currentSince), desc(v.versionHash))
      .limit(q.limit + 1),
  ]);
  if (!head) throw new NotFound("Agreement");
  const a = head.row;
  const current: HistoryEntry[] =
    after === null && currentText
      ? [
          {
            versionHash: currentText.versionHash,
            title: currentText.title,
            publishedAt: currentText.publishedAt,
            currentSince: currentText.currentSince,
            current: true,
          },
        ]
      : [];
  const entries = [...current, ...others.map((o) => ({ ...o, current: false }))];
  const history = entries.slice(0, q.limit);
  const last = history.at(-1);
  return versioned(
    {
      agreement: { ...summary({ ...a, versions: head.versions }), body: currentText?.body ?? "" },
      history,
      nextCursor: entries.length > q.limit && last ? cursorAfter(last) : null,
    },
    a.version,
  );
}
