import { and, count, desc, eq, gt, lt, or, asc } from "drizzle-orm";
import { tags } from "../db/schema";
import { decodeCursor, encodeCursor } from "../lib/cursor";
import { Validation } from "../lib/errors";
import type { ServiceContext } from "../service-context";

const SORT = "count:desc,name:asc";

/**
 * GET /v1/contacts/tags: the tags the organization's contacts carry, most used first (then by name), keyset-paginated
 * on (count, name) with the page and the total read in one round trip. Tags nobody carries are not listed. A tag whose
 * count changes while a client pages may move to a page it has already read.
 */
export async function listTags(ctx: ServiceContext, q: { limit: number; cursor?: string }) {
  const inUse = and(eq(tags.organizationId, ctx.organizationId), gt(tags.contactCount, 0));
  let page = inUse;
  if (q.cursor) {
    const { values, id: name } = decodeCursor(q.cursor, SORT, 1);
    const at = values[0];
    if (typeof at !== "number" || !Number.isSafeInteger(at))
      throw new Validation([{ field: "cursor", path: ["cursor"], code: "invalid_cursor", message: "Cursor is not one this API issued" }]);
    page = and(inUse, or(lt(tags.contactCount, at), and(eq(tags.contactCount, at), gt(tags.name, name))));
  }
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select({ name: tags.name, color: tags.color, count: tags.contactCount })
      .from(tags)
      .where(page)
      .orderBy(desc(tags.contactCount), asc(tags.name))
      .limit(q.limit + 1),
    ctx.db.select({ n: count() }).from(tags).where(inUse),
  ]);
  const data = rows.slice(0, q.limit);
  const hasMore = rows.length > q.limit;
  const last = data.at(-1);
  return {
    data,
    pagination: {
      hasMore,
      nextCursor: hasMore && last ? encodeCursor({ sort: SORT, values: [last.count], id: last.name }) : null,
      total: total?.n ?? 0,
      limit: q.limit,
    },
  };
}
