import { createMiddleware } from "hono/factory";
import { createDb } from "../db/client";
import { Validation } from "../lib/errors";
import type { AppBindings } from "./context";

/**
 * D1's Sessions API, one session per request, so read replicas can serve callers far from the primary (DESIGN.md):
 * a read (GET, HEAD) starts anywhere, or from the bookmark the client sends in `X-D1-Bookmark`, which guarantees it
 * sees at least what that bookmark saw (read-your-writes); a write starts on the primary, so its compare-and-set reads
 * the latest row. Every answer that touched D1 carries the session's latest bookmark in `X-D1-Bookmark`.
 */
export const BOOKMARK_HEADER = "X-D1-Bookmark";
/** D1 bookmarks as D1 issues them: four hex groups. Anything else is refused rather than passed to D1. */
const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/i;

export const d1Session = createMiddleware<AppBindings>(async (c, next) => {
  const sent = c.req.header(BOOKMARK_HEADER)?.trim();
  if (sent !== undefined && !BOOKMARK.test(sent)) {
    throw new Validation([{ field: BOOKMARK_HEADER, path: [BOOKMARK_HEADER], code: "invalid_bookmark", message: `${BOOKMARK_HEADER} must be a bookmark an earlier answer carried` }], "malformed");
  }
  const reads = c.req.method === "GET" || c.req.method === "HEAD";
  const session = c.env.DB.withSession(reads ? (sent ?? "first-unconstrained") : "first-primary");
  c.set("d1", session);
  c.set("db", createDb(session));
  await next();
  const bookmark = session.getBookmark();
  if (bookmark) c.header(BOOKMARK_HEADER, bookmark);
});
