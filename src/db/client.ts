import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema";

export type Db = ReturnType<typeof createDb>;

/**
 * One drizzle client per request (no module-level singleton holding a binding), over the database or a D1 session
 * (platform/session.ts); drizzle only calls `prepare` and `batch`, which a session has too.
 */
export function createDb(d1: D1Database | D1DatabaseSession) {
  return drizzle(d1 as D1Database, { schema, casing: "snake_case" });
}
