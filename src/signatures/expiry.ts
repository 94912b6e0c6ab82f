import { and, eq, lte } from "drizzle-orm";
import type { Db } from "../db/client";
import { envelopes } from "../db/schema";
import type { Env } from "../env";
import { loggableError } from "../lib/log";
import { nowIso } from "../lib/time";
import { envelopeSigner } from "./envelope-signer";

/**
 * Cron pass: an open envelope past its expiry is normally ended by its object's alarm; one whose alarm was never set
 * (the call after creation failed) gets it now, set in the past, so the object expires it at once, in its queue.
 */
export async function sweepOverdueEnvelopes(env: Env, db: Db, { max = 100 } = {}): Promise<number> {
  const overdue = await db
    .select({ id: envelopes.id, organizationId: envelopes.organizationId, expiresAt: envelopes.expiresAt })
    .from(envelopes)
    .where(and(eq(envelopes.status, "partially_signed"), lte(envelopes.expiresAt, nowIso())))
    .limit(max);
  await Promise.all(
    overdue.map((e) =>
      envelopeSigner(env, e.id)
        .begin(e.id, e.organizationId, e.expiresAt)
        .catch((err) => console.error(JSON.stringify({ level: "warn", msg: "overdue envelope not handed to its object", envelopeId: e.id, error: loggableError(err) }))),
    ),
  );
  return overdue.length;
}
