import { and, eq, isNotNull, lte } from "drizzle-orm";
import type { Db } from "../db/client";
import { envelopes, envelopeSigners } from "../db/schema";
import type { Env } from "../env";
import { createLogger, loggableError } from "../lib/log";
import { nowIso } from "../lib/time";
import { envelopeSigner } from "./signer-client";

/**
 * The cron's passes over a shard's envelopes: each hands the envelopes with work due to their objects (through the
 * typed client), which do the work one call at a time.
 */

/**
 * Cron pass: an open envelope past its expiry at the pass's `now` (DESIGN.md contract 12) is normally ended by its
 * object's alarm; one whose alarm was never set (the call after creation failed), or a pass run as if later than the
 * wall clock (`npm run cron -- --at`), has its object expire it at that time, in its queue.
 */
export async function sweepOverdueEnvelopes(env: Env, db: Db, { now = new Date(), max = 100 } = {}): Promise<number> {
  const at = nowIso(now);
  const overdue = await db
    .select({ id: envelopes.id, organizationId: envelopes.organizationId })
    .from(envelopes)
    .where(and(eq(envelopes.status, "partially_signed"), lte(envelopes.expiresAt, at)))
    .limit(max);
  await Promise.all(
    overdue.map((e) =>
      envelopeSigner(env, e.id)
        .expireDue(e.id, e.organizationId, at)
        .catch((err) => createLogger().warn("overdue envelope not handed to its object", { envelopeId: e.id, error: loggableError(err) })),
    ),
  );
  return overdue.length;
}

/** Cron pass: every envelope with a reminder or an expiry notice due at `now` goes to its object (at most `max` per pass). */
export async function sendDueReminders(env: Env, db: Db, { now: at = new Date(), max = 100 } = {}): Promise<number> {
  const now = nowIso(at);
  const [reminded, noticed] = await db.batch([
    db
      .selectDistinct({ id: envelopeSigners.envelopeId, organizationId: envelopeSigners.organizationId })
      .from(envelopeSigners)
      .where(and(isNotNull(envelopeSigners.remindAt), lte(envelopeSigners.remindAt, now)))
      .limit(max),
    db
      .select({ id: envelopes.id, organizationId: envelopes.organizationId })
      .from(envelopes)
      .where(and(isNotNull(envelopes.expiryNoticeAt), lte(envelopes.expiryNoticeAt, now), eq(envelopes.status, "partially_signed")))
      .limit(max),
  ]);
  const due = new Map([...reminded, ...noticed].map((r) => [r.id, r.organizationId]));
  await Promise.all(
    [...due].map(([id, organizationId]) =>
      envelopeSigner(env, id)
        .remind(id, organizationId, now)
        .catch((err) => createLogger().error("reminders not sent; next pass retries", { envelopeId: id, error: loggableError(err) })),
    ),
  );
  return due.size;
}
