import { inArray, lt } from "drizzle-orm";
import type { Db } from "../db/client";
import {
  oauthClients,
  oauthCodes,
  oauthGrants,
  oauthRefreshTokens,
  oauthSignInFailures,
  oauthSignInLocks,
  oauthSignIns,
} from "../db/schema";
import { SIGN_IN_FAILURE_WINDOW_SECONDS } from "./lockout";
import { ACCESS_TOKEN_TTL_SECONDS } from "./grants";

/**
 * Cron: deletes what the authorization server no longer needs, at most `max` rows of each table a pass. A code is kept
 * for an access token's lifetime after it expired, so that a late replay still revokes what it issued; a grant until
 * its token expired; a refresh token until it expired (a used one is kept so that its replay still revokes its
 * family); a sign-in until it expired; a failed sign-in try once it left the lock's 24-hour window, and a lock once it
 * ended; a registered client until it went CLIENT_IDLE_DAYS without a code
 * (anyone may register one, so the table must not only grow).
 */
export const CLIENT_IDLE_DAYS = 90;

export async function pruneOAuth(db: Db, { max = 500, now = Date.now() } = {}): Promise<number> {
  const at = new Date(now).toISOString();
  const codesBefore = new Date(now - ACCESS_TOKEN_TTL_SECONDS * 1000).toISOString();
  const failuresBefore = new Date(now - SIGN_IN_FAILURE_WINDOW_SECONDS * 1000).toISOString();
  const idleBefore = new Date(now - CLIENT_IDLE_DAYS * 86_400_000).toISOString();
  const results = await db.batch([
    db
      .delete(oauthCodes)
      .where(
        inArray(
          oauthCodes.codeHash,
          db.select({ k: oauthCodes.codeHash }).from(oauthCodes).where(lt(oauthCodes.expiresAt, codesBefore)).limit(max),
        ),
      ),
    db
      .delete(oauthGrants)
      .where(inArray(oauthGrants.id, db.select({ k: oauthGrants.id }).from(oauthGrants).where(lt(oauthGrants.expiresAt, at)).limit(max))),
    db
      .delete(oauthRefreshTokens)
      .where(
        inArray(
          oauthRefreshTokens.tokenHash,
          db.select({ k: oauthRefreshTokens.tokenHash }).from(oauthRefreshTokens).where(lt(oauthRefreshTokens.expiresAt, at)).limit(max),
        ),
      ),
    db
      .delete(oauthSignIns)
      .where(
        inArray(oauthSignIns.id, db.select({ k: oauthSignIns.id }).from(oauthSignIns).where(lt(oauthSignIns.expiresAt, at)).limit(max)),
      ),
    db
      .delete(oauthSignInFailures)
      .where(
        inArray(
          oauthSignInFailures.id,
          db.select({ k: oauthSignInFailures.id }).from(oauthSignInFailures).where(lt(oauthSignInFailures.at, failuresBefore)).limit(max),
        ),
      ),
    db
      .delete(oauthSignInLocks)
      .where(
        inArray(
          oauthSignInLocks.emailHash,
          db.select({ k: oauthSignInLocks.emailHash }).from(oauthSignInLocks).where(lt(oauthSignInLocks.lockedUntil, at)).limit(max),
        ),
      ),
    db
      .delete(oauthClients)
      .where(
        inArray(
          oauthClients.id,
          db.select({ k: oauthClients.id }).from(oauthClients).where(lt(oauthClients.lastUsedAt, idleBefore)).limit(max),
        ),
      ),
  ]);
  return results.reduce((n, r) => n + ((r as { meta?: { changes?: number } }).meta?.changes ?? 0), 0);
}
