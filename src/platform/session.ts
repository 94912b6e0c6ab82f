import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { createDb } from "../db/client";
import { OrganizationMoving, Validation } from "../lib/errors";
import type { ServiceContext } from "../service-context";
import { shardDatabase } from "../shards/bindings";
import { type PublicKeyKind, publicKeyPlacement } from "../shards/directory";
import type { AppBindings } from "./context";

/**
 * D1's Sessions API, one session per database a request touches, so read replicas can serve callers far from the
 * primary (DESIGN.md): a read (GET, HEAD) starts anywhere, a write on the primary, so its compare-and-set reads the
 * latest row. The directory session opens with the request; the organization's shard session opens once
 * authentication (or a public route's key) has named the shard (issue 24). The bookmark a client sends in
 * `X-D1-Bookmark` is its shard's (read-your-writes on organization data), and every answer that read a shard carries
 * that session's latest bookmark.
 */
export const BOOKMARK_HEADER = "X-D1-Bookmark";
/** D1 bookmarks as D1 issues them: four hex groups. Anything else is refused rather than passed to D1. */
const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/i;

const isRead = (c: Context<AppBindings>) => c.req.method === "GET" || c.req.method === "HEAD";

export const d1Session = createMiddleware<AppBindings>(async (c, next) => {
  const sent = c.req.header(BOOKMARK_HEADER)?.trim();
  if (sent !== undefined && !BOOKMARK.test(sent)) {
    throw new Validation([{ field: BOOKMARK_HEADER, path: [BOOKMARK_HEADER], code: "invalid_bookmark", message: `${BOOKMARK_HEADER} must be a bookmark an earlier answer carried` }], "malformed");
  }
  const directory = c.env.DB.withSession(isRead(c) ? "first-unconstrained" : "first-primary");
  c.set("directory", createDb(directory));
  await next();
  const bookmark = c.get("shardSession")?.getBookmark();
  if (bookmark && !withheld(c.get("permissions"))) c.header(BOOKMARK_HEADER, bookmark);
});

/**
 * A credential that may send leads but not read contacts (a web form's key) gets no bookmark on any answer, its
 * errors and replays included: a bookmark advances with every write on the shard, so two of them around a lead would
 * count the writes its intake made, and tell a client's number from a stranger's (issue 40). It reads nothing, so it
 * loses no read-your-writes. `undefined`: a session, which may read everything.
 */
const withheld = (credential: readonly string[] | undefined): boolean => credential !== undefined && credential.includes("leads:write") && !credential.includes("contacts:read");

/**
 * Opens the session of shard `shard` for the rest of the request: `db` and `d1` (and so every service) read and write
 * there. Called by authentication and by the public routes once they know the organization; called again (a stale
 * guess, platform/auth.ts) it replaces the session.
 */
export function openShard(c: Context<AppBindings>, shard: number): void {
  const sent = c.req.header(BOOKMARK_HEADER)?.trim();
  const session = shardDatabase(c.env, shard).withSession(isRead(c) ? (sent ?? "first-unconstrained") : "first-primary");
  c.set("shard", shard);
  c.set("shardSession", session);
  c.set("d1", session);
  c.set("db", createDb(session));
}

/**
 * A public route's key → its organization, with the organization's shard opened on the request, in the one directory
 * read the route makes before its own (shards/directory.ts). Null when the directory knows no such key: the route
 * answers as it does for an unknown token. A write to a fenced organization answers 503 (Retry-After); a POST that
 * only reads (`writes: false`: the PDF check) goes on during a move.
 */
export async function openPublicKey(c: Context<AppBindings>, kind: PublicKeyKind, key: string, { writes = !isRead(c) } = {}): Promise<string | null> {
  const placement = await publicKeyPlacement(c.get("directory"), kind, key);
  if (!placement) return null;
  if (placement.fenced && writes) throw new OrganizationMoving();
  openShard(c, placement.shard);
  return placement.organizationId;
}

/**
 * The service context of a public route once `openPublicKey` named the organization: its shard, the public actor (a
 * link's or a form's holder), and work deferred past the answer.
 */
export function publicServiceContext(c: Context<AppBindings>, organizationId: string): ServiceContext {
  return {
    env: c.env,
    db: c.get("db"),
    directory: c.get("directory"),
    d1: c.get("d1"),
    organizationId,
    actor: { type: "public", userId: null },
    requestId: c.get("requestId"),
    defer: (work) => c.executionCtx.waitUntil(work),
  };
}
