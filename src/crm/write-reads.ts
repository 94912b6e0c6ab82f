import type { SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { expectVersionMatch, type Statement } from "../db/write";
import { NotFound } from "../lib/errors";
import { type AuthPreload, takePreloaded } from "../platform/preload";
import type { ServiceContext } from "../service-context";

// Light on purpose: the app loads each resource's reads at startup, to hand their preloads to authentication.

/**
 * The reads a write of one contact, deal or property starts from (the row first, then what its rules need), declared
 * once per resource and run either with the authentication of `PUT {path}/{id}` (platform/preload.ts, decision 0007:
 * the write's guarded batch is then the request's only other round trip) or, for any other write and for a retry
 * after a lost race, on their own in one round trip.
 */
export interface WriteReads<T extends [{ version: number }[], ...unknown[][]]> {
  /** For authentication (app.ts). */
  preloads: AuthPreload[];
  /** The reads, taken from the authentication's once or run now: 404 without the row (or no longer: a retry after a delete), 412 when If-Match names another version. */
  read(ctx: ServiceContext, id: string): Promise<T>;
}

export function readsForWrite<T extends [{ version: number }[], ...unknown[][]]>(
  name: "Contact" | "Deal" | "Property",
  path: `/v1/${string}`,
  statements: (db: Db, organizationId: string | SQL, id: string) => Statement[],
): WriteReads<T> {
  const key = (id: string) => `${name.toLowerCase()}-write:${id}`;
  return {
    preloads: [
      {
        method: "PUT",
        path: new RegExp(`^${path}/([^/]+)$`),
        read: (db, organizationId, match) => ({ key: key(match[1]!), statements: statements(db, organizationId, match[1]!) }),
      },
    ],
    async read(ctx, id) {
      const results =
        takePreloaded<T>(ctx, key(id)) ??
        ((await ctx.db.batch(statements(ctx.db, ctx.organizationId, id) as [Statement, ...Statement[]])) as unknown as T);
      const row = results[0][0];
      if (!row) throw new NotFound(name);
      expectVersionMatch(ctx, row.version);
      return results;
    },
  };
}
