import { and, eq, gt, lte, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { pendingUploads } from "../db/schema";
import { guard, type Statement } from "../db/write";
import type { Env } from "../env";
import { loggableError } from "../lib/log";
import { inJsonList } from "../lib/sql";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { removeFiles } from "./storage";

/**
 * Uploads as two steps that can fail apart (docs/decisions/0015-faults-as-results-and-a-fault-table.md): the object
 * goes to R2, then the row that names it to D1. Each object is first noted pending (db/uploads.ts), the batch that
 * commits its row settles it, and what is still pending an hour later never got its row: the cron deletes the object.
 * So a row never names a missing object (the row commits after the put) and an object never stays without its row,
 * whichever step failed and however.
 *
 *   await putUploads(ctx, files);                                     // pending, then R2
 *   await commit(ctx, [...rows, ...settleUploads(ctx, keys)], events); // the rows, and no longer pending
 *   // on any error: ctx.defer(discardUploads(ctx, keys))
 */
export const PENDING_UPLOAD_SECONDS = 3600;
/** The sweep waits this much longer than a commit may, so clocks a little apart never let both act on one upload. */
const SWEEP_MARGIN_SECONDS = 300;

export interface Upload {
  key: string;
  bytes: ArrayBuffer | ArrayBufferView;
  httpMetadata: R2HTTPMetadata;
}

const pendingOf = (organizationId: string, keys: string[]) =>
  and(eq(pendingUploads.organizationId, organizationId), inJsonList(pendingUploads.key, keys));

/**
 * Notes `uploads` pending on the organization's shard, then stores them in R2. Every put has ended when this throws,
 * so a discard that follows never runs before a put still under way.
 */
export async function putUploads(ctx: ServiceContext, uploads: Upload[]): Promise<void> {
  const at = nowIso();
  await ctx.db.insert(pendingUploads).values(uploads.map((u) => ({ key: u.key, organizationId: ctx.organizationId, createdAt: at })));
  const puts = await Promise.allSettled(uploads.map((u) => ctx.files.put(u.key, u.bytes, { httpMetadata: u.httpMetadata })));
  const failed = puts.find((p) => p.status === "rejected");
  if (failed) throw failed.reason;
}

/**
 * One upload streamed from the request to R2 as it arrives (an import's CSV, up to 50 MB): never in memory. `length`
 * is the request's Content-Length; a body that ends early or runs over it fails the put (FixedLengthStream).
 */
export async function putUploadStream(
  ctx: ServiceContext,
  key: string,
  body: ReadableStream<Uint8Array>,
  length: number,
  httpMetadata: R2HTTPMetadata,
): Promise<void> {
  await ctx.db.insert(pendingUploads).values({ key, organizationId: ctx.organizationId, createdAt: nowIso() });
  const { readable, writable } = new FixedLengthStream(length);
  const piped = body.pipeTo(writable).then(
    () => null,
    (err: unknown) => err,
  );
  try {
    await ctx.files.put(key, readable, { httpMetadata });
  } catch (err) {
    // The put stopped reading: end the pipe too, so the request's body is let go.
    await readable.cancel(err).catch(() => undefined);
    await piped;
    throw err;
  }
  const failed = await piped;
  if (failed) throw failed;
}

/**
 * For the batch that commits the rows naming `keys`: each must still be pending and younger than the sweep's age (so
 * the sweep cannot have taken its object), and stops being pending.
 */
export function settleUploads(ctx: Pick<ServiceContext, "db" | "organizationId">, keys: string[]): Statement[] {
  const fresh = nowIso(new Date(Date.now() - PENDING_UPLOAD_SECONDS * 1000));
  const listed = pendingOf(ctx.organizationId, keys);
  return [
    guard(ctx.db, sql`(SELECT COUNT(*) FROM ${pendingUploads} WHERE ${and(listed, gt(pendingUploads.createdAt, fresh))}) = ${keys.length}`),
    ctx.db.delete(pendingUploads).where(listed),
  ];
}

/**
 * After an upload failed: the objects still pending are deleted, then their entries. A commit that landed settled its
 * entries (even when D1's answer to it was lost), so its objects stay. What fails here is left to the sweep.
 */
export async function discardUploads(ctx: ServiceContext, keys: string[]): Promise<void> {
  try {
    const pending = (await ctx.db.select({ key: pendingUploads.key }).from(pendingUploads).where(pendingOf(ctx.organizationId, keys))).map(
      (p) => p.key,
    );
    if (pending.length === 0) return;
    await removeFiles(ctx.files, pending);
    await ctx.db.delete(pendingUploads).where(pendingOf(ctx.organizationId, pending));
  } catch (err) {
    ctx.log.warn("failed upload not discarded; the cron sweeps it", { keys: keys.length, error: loggableError(err) });
  }
}

/** Cron pass, on one shard: uploads pending past their hour at `now` never got their row; their objects go, then the entries. */
export async function sweepPendingUploads(env: Env, db: Db, { now = new Date(), max = 500 } = {}): Promise<number> {
  const before = nowIso(new Date(now.getTime() - (PENDING_UPLOAD_SECONDS + SWEEP_MARGIN_SECONDS) * 1000));
  const stale = (
    await db
      .select({ key: pendingUploads.key })
      .from(pendingUploads)
      .where(lte(pendingUploads.createdAt, before))
      .orderBy(pendingUploads.createdAt)
      .limit(max)
  ).map((r) => r.key);
  if (stale.length === 0) return 0;
  await removeFiles(env.FILES, stale);
  await db.delete(pendingUploads).where(inJsonList(pendingUploads.key, stale));
  return stale.length;
}
