import type { SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import type { Statement } from "../db/write";
import type { ServiceContext } from "../service-context";

/**
 * Reads that ride the authentication round trip (docs/decisions/0007-one-round-trip-writes-and-flat-lists.md). A write
 * of one row reads it before its guarded batch; that read needs only the caller's organization, which the session
 * lookup finds in the same statement batch as a subquery, so the read costs no round trip of its own. The organization
 * filter is the session's, in SQL: an unknown or revoked token reads nothing. The verb takes what was read once
 * (`takePreloaded`); a retry after a lost race reads afresh.
 */
export interface AuthPreload {
  method: string;
  /** Matched against the request path; its captures go to `read`. */
  path: RegExp;
  /** The key the verb takes the results by, and the statements that read them. */
  read(db: Db, organizationId: SQL, match: RegExpMatchArray): { key: string; statements: Statement[] };
}

/** The preload of a request, if a route declared one. */
export function preloadOf(
  preloads: AuthPreload[],
  db: Db,
  method: string,
  path: string,
  organizationId: SQL,
): { key: string; statements: Statement[] } | undefined {
  for (const p of preloads) {
    if (p.method !== method) continue;
    const match = path.match(p.path);
    if (match) return p.read(db, organizationId, match);
  }
  return undefined;
}

/** The results read under `key` during authentication, once: a second take (a retry) finds nothing and reads again. */
export function takePreloaded<T extends unknown[]>(ctx: Pick<ServiceContext, "preloaded">, key: string): T | undefined {
  const found = ctx.preloaded?.get(key);
  ctx.preloaded?.delete(key);
  return found as T | undefined;
}
