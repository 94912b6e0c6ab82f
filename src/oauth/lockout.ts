import { and, eq, gt, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { oauthSignInFailures, oauthSignInLocks } from "../db/schema";
import { sha256Hex } from "../lib/crypto";
import { newId } from "../lib/ids";
import { addSeconds, nowIso } from "../lib/time";

/**
 * The cumulative cap on sign-in code guesses (docs/decisions/0017-caps-on-guessing-codes.md). The per-15-minute limits
 * (platform/rate-limit.ts) still let about 960 guesses a day at one address; here 20 failed tries within 24 hours lock
 * the address's sign-in for 24 hours: no code is mailed or checked until then. Counted per address alike for addresses
 * with and without an account, so the lock tells nothing about who has one. Keys are the SHA-256 of the lower-cased
 * address.
 */
export const SIGN_IN_FAILURES_BEFORE_LOCK = 20;
export const SIGN_IN_FAILURE_WINDOW_SECONDS = 24 * 3600;
export const SIGN_IN_LOCK_SECONDS = 24 * 3600;

const emailKey = (email: string) => sha256Hex(email.toLowerCase());

/** When the address's sign-in lock ends, or null when it is not locked. */
export async function signInLockedUntil(db: Db, email: string, now = new Date()): Promise<string | null> {
  const row = await db
    .select({ lockedUntil: oauthSignInLocks.lockedUntil })
    .from(oauthSignInLocks)
    .where(and(eq(oauthSignInLocks.emailHash, await emailKey(email)), gt(oauthSignInLocks.lockedUntil, nowIso(now))))
    .get();
  return row?.lockedUntil ?? null;
}

/**
 * Records one failed try and, in the same atomic batch (the pattern of db/write.ts: the condition is evaluated inside
 * the batch, never from an earlier read), starts the lock when the window now holds the limit. Each try is a row of
 * its own, so parallel tries are all counted; the lock row is written only where none is live, so of any number of
 * parallel tries exactly one starts it. Answers the lock's end to that one (it mails the user), null to the others.
 */
export async function recordSignInFailure(db: Db, email: string, now = new Date()): Promise<{ lockedUntil: string } | null> {
  const emailHash = await emailKey(email);
  const at = nowIso(now);
  const since = nowIso(addSeconds(now, -SIGN_IN_FAILURE_WINDOW_SECONDS));
  const until = nowIso(addSeconds(now, SIGN_IN_LOCK_SECONDS));
  const failures = sql`(SELECT COUNT(*) FROM ${oauthSignInFailures} WHERE ${oauthSignInFailures.emailHash} = ${emailHash} AND ${oauthSignInFailures.at} > ${since})`;
  const [, started] = await db.batch([
    db.insert(oauthSignInFailures).values({ id: newId(), emailHash, at }),
    db
      .insert(oauthSignInLocks)
      .select(sql`SELECT ${emailHash}, ${at}, ${until} WHERE ${failures} >= ${SIGN_IN_FAILURES_BEFORE_LOCK}`)
      .onConflictDoUpdate({
        target: oauthSignInLocks.emailHash,
        set: { lockedAt: at, lockedUntil: until },
        setWhere: sql`${oauthSignInLocks.lockedUntil} <= ${at}`,
      })
      .returning({ lockedUntil: oauthSignInLocks.lockedUntil }),
  ]);
  return started[0] ?? null;
}

/** `2026-05-04 13:08 UTC`: when a lock ends, as the page and the mail say it (rounded up: never earlier than it ends). */
export function lockEndText(lockedUntil: string): string {
  const at = new Date(Math.ceil(Date.parse(lockedUntil) / 60_000) * 60_000).toISOString();
  return `${at.slice(0, 10)} ${at.slice(11, 16)} UTC`;
}
