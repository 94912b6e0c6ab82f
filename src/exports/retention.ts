import { and, eq, inArray, lte } from "drizzle-orm";
import type { Db } from "../db/client";
import { organizationExports } from "../db/schema";
import type { Env } from "../env";
import { exportArchiveKey } from "../files/export-archives";
import { createLogger, loggableError } from "../lib/log";
import { idsOf } from "../lib/sql";
import { LIVE } from "./service";

/** Jobs a pass ends at most, per kind: one bulk R2 delete and one update per organization, beside every other cron task. */
export const RETENTION_BATCH = 50;
/**
 * A job queued or running this long has lost its run (its deliveries used up while the organization moved, a run killed
 * after its zip was completed): it is failed, so it stops holding the organization's one export slot.
 */
export const STALLED_MS = 86_400_000;

type Due = { id: string; organizationId: string; objectKey: string | null };

/**
 * The cron's retention pass on one shard: the zip of every completed export whose link has expired is
 * deleted from R2 and the job becomes `expired` (its key and token hash cleared), and a job stalled in queued/running
 * becomes `failed`, its key deleted too (a run killed between completing the upload and recording it leaves a whole zip
 * there). Nothing is marked before R2 answered the delete: a delete that fails leaves the rows, and the next pass
 * retries them (deleting a key that is gone is no error). Answers the jobs ended.
 */
export async function expireExportArchives(env: Env, db: Db, now = new Date()): Promise<number> {
  const at = now.toISOString();
  const stalledBefore = new Date(now.getTime() - STALLED_MS).toISOString();
  const columns = {
    id: organizationExports.id,
    organizationId: organizationExports.organizationId,
    objectKey: organizationExports.objectKey,
  };
  const expiredWhere = and(eq(organizationExports.status, "completed"), lte(organizationExports.expiresAt, at));
  const stalledWhere = and(inArray(organizationExports.status, LIVE), lte(organizationExports.updatedAt, stalledBefore));
  const [expired, stalled] = await Promise.all([
    db.select(columns).from(organizationExports).where(expiredWhere).limit(RETENTION_BATCH),
    db.select(columns).from(organizationExports).where(stalledWhere).limit(RETENTION_BATCH),
  ]);
  const due = [...expired, ...stalled];
  if (due.length === 0) return 0;
  await env.FILES.delete(due.map((r) => r.objectKey ?? exportArchiveKey(r.organizationId, r.id)));
  const ended = await Promise.all([
    ...byOrganization(expired).map(([org, ids]) =>
      update(db, org, ids, expiredWhere, { status: "expired", objectKey: null, tokenHash: null, leaseUntil: null, updatedAt: at }),
    ),
    ...byOrganization(stalled).map(([org, ids]) =>
      update(db, org, ids, stalledWhere, {
        status: "failed",
        objectKey: null,
        tokenHash: null,
        leaseUntil: null,
        error: "The export stopped; ask for a new one",
        updatedAt: at,
      }),
    ),
  ]);
  return ended.reduce((a, b) => a + b, 0);
}

const byOrganization = (rows: Due[]): [string, string[]][] => {
  const groups = new Map<string, string[]>();
  for (const r of rows) groups.set(r.organizationId, [...(groups.get(r.organizationId) ?? []), r.id]);
  return [...groups];
};

/**
 * One organization's rows at a time, still in the state they were read in: an organization being moved refuses the
 * write (its fence) without holding up the others; its rows are ended by the pass after the move, wherever they are.
 */
async function update(
  db: Db,
  organizationId: string,
  ids: string[],
  still: ReturnType<typeof and>,
  set: Partial<typeof organizationExports.$inferInsert>,
): Promise<number> {
  try {
    const rows = await db
      .update(organizationExports)
      .set(set)
      .where(and(idsOf(organizationExports, organizationId, ids), still))
      .returning({ id: organizationExports.id });
    return rows.length;
  } catch (err) {
    createLogger().warn("organization export retention: rows left for the next pass", { organizationId, error: loggableError(err) });
    return 0;
  }
}
