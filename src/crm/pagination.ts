import type { z } from "@hono/zod-openapi";
import { and, eq, lt, or, type SQL } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { decodeCursor, encodeCursor } from "../lib/cursor";
import type { Pagination } from "./body";

/**
 * Newest-first keyset pagination on (createdAt, id), for the CRM lists that offer no other sort. The cursor is the
 * same opaque encoding as the contacts list (lib/cursor.ts), under the sort "createdAt:desc" (or the list's own
 * newest-first sort, e.g. "occurredAt:desc": a cursor of one list is then refused by the other).
 */
export interface Cursor {
  at: string;
  id: string;
}

const NEWEST_FIRST = "createdAt:desc";

export function decodeNewestFirstCursor(raw: string | undefined, sort = NEWEST_FIRST): Cursor | null {
  if (raw === undefined) return null;
  const { values, id } = decodeCursor(raw, sort, 1);
  return { at: String(values[0]), id };
}

/** Given `limit + 1` rows fetched in sort order: the page, and its pagination block without a total. */
export function newestFirstPage<T>(
  rows: T[],
  limit: number,
  keyOf: (row: T) => Cursor,
  sort = NEWEST_FIRST,
): { page: T[]; pagination: { hasMore: boolean; nextCursor: string | null; limit: number } } {
  const page = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  const last = page[page.length - 1];
  const nextCursor = hasMore && last ? encodeCursor({ sort, values: [keyOf(last).at], id: keyOf(last).id }) : null;
  return { page, pagination: { hasMore, nextCursor, limit } };
}

/** Given `limit + 1` rows fetched in sort order: the page, and the pagination block. */
export function paginate<T>(
  rows: T[],
  limit: number,
  total: number,
  keyOf: (row: T) => Cursor,
  sort = NEWEST_FIRST,
): { page: T[]; pagination: z.infer<typeof Pagination> } {
  const { page, pagination } = newestFirstPage(rows, limit, keyOf, sort);
  return { page, pagination: { ...pagination, total } };
}

/** The keyset condition of a newest-first list sorted on (at, id): rows strictly after the cursor's row. */
export const olderThan = (at: SQLiteColumn, id: SQLiteColumn, cursor: Cursor): SQL | undefined =>
  or(lt(at, cursor.at), and(eq(at, cursor.at), lt(id, cursor.id)));
