import { z } from "@hono/zod-openapi";
import { and, eq, lt, or, type SQL } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { Validation } from "./errors";

/**
 * Keyset pagination (DESIGN.md "Shapes"): the cursor is an opaque base64url encoding of the last row's sort key and
 * id, never an offset. A cursor that does not decode is a 422 on the `cursor` field, not a 500.
 */
export interface Cursor {
  at: string;
  id: string;
}

export const encodeCursor = (c: Cursor): string => btoa(JSON.stringify([c.at, c.id])).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");

export function decodeCursor(raw: string | undefined): Cursor | null {
  if (raw === undefined) return null;
  try {
    const [at, id] = JSON.parse(atob(raw.replaceAll("-", "+").replaceAll("_", "/"))) as unknown[];
    if (typeof at === "string" && typeof id === "string") return { at, id };
  } catch {
    // fall through to the validation error
  }
  throw new Validation([{ field: "cursor", path: ["cursor"], code: "invalid_cursor", message: "Not a cursor returned by this list" }]);
}

/** `limit` and `cursor` of every list route (spec: Limits, list routes limit 1 to 100, default 25). */
export const ListQuery = z.object({
  limit: z.coerce.number<string>().int().min(1).max(100).default(25).openapi({ param: { name: "limit", in: "query" }, example: 25 }),
  cursor: z.string().max(500).optional().openapi({ param: { name: "cursor", in: "query" }, description: "`pagination.nextCursor` of the previous page" }),
});

export const PaginationSchema = z
  .object({ hasMore: z.boolean(), nextCursor: z.string().nullable(), total: z.int(), limit: z.int() })
  .openapi("Pagination");
export type Pagination = z.infer<typeof PaginationSchema>;

/** Given `limit + 1` rows fetched in sort order: the page, and the pagination block. */
export function paginate<T>(rows: T[], limit: number, total: number, keyOf: (row: T) => Cursor): { page: T[]; pagination: Pagination } {
  const page = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  const last = page[page.length - 1];
  return { page, pagination: { hasMore, nextCursor: hasMore && last ? encodeCursor(keyOf(last)) : null, total, limit } };
}

/** The keyset condition of a newest-first list sorted on (at, id): rows strictly after the cursor's row. */
export const olderThan = (at: SQLiteColumn, id: SQLiteColumn, cursor: Cursor): SQL | undefined => or(lt(at, cursor.at), and(eq(at, cursor.at), lt(id, cursor.id)));
