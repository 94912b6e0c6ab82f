import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema";

export type Db = ReturnType<typeof createDb>;

/** One drizzle client per request (no module-level singleton holding a binding). */
export function createDb(d1: D1Database) {
  return drizzle(d1, { schema, casing: "snake_case" });
}
