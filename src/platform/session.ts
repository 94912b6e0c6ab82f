import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { createDb } from "../db/client";
import { readConfig } from "../env";
import { OrganizationMoving, Validation } from "../lib/errors";
import { decryptText, encryptText } from "../lib/secret-box";
import { createLogger } from "../lib/log";
import { portsOf, type ServiceContext } from "../service-context";
import { shardDatabase } from "../shards/bindings";
import { type PublicKeyKind, publicKeyPlacement } from "../shards/directory";
import type { AppBindings } from "./context";

/**
 * D1's Sessions API, one session per database a request touches, so read replicas can serve callers far from the
 * primary (DESIGN.md): a read (GET, HEAD) starts anywhere, a write on the primary, so its compare-and-set reads the
 * latest row. The directory session opens with the request; the organization's shard session opens once
 * authentication (or a public route's key) has named the shard. Every answer that read a shard carries
 * that session's latest bookmark in `X-D1-Bookmark`, and a client sends it back for read-your-writes on organization
 * data.
 *
 * Encrypted (docs/decisions/0023-sealed-d1-bookmarks.md): a D1 bookmark counts every write on its database, and a shard
 * holds many organizations, so a bookmark read before and after a web form's lead told a client's number from a
 * stranger's by the writes the intake made (and anyone on the shard sees the others' writes). Answers carry it AES-GCM
 * encrypted under BOOKMARK_KEY (a fresh nonce each time: two answers' bookmarks cannot be compared); one that does not
 * open is ignored (a key rotated since), and without the key none is handed out.
 */
export const BOOKMARK_HEADER = "X-D1-Bookmark";
/** An encrypted bookmark as answers carry it (lib/secret-box.ts): anything else is refused rather than opened. */
const ENCRYPTED_BOOKMARK = /^v1\.[A-Za-z0-9+/=]{16,24}\.[A-Za-z0-9+/=]{40,200}$/;
/** D1 bookmarks as D1 issues them: four hex groups. What opens to anything else is not used. */
const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/i;
const PURPOSE = "d1-bookmark";

const isRead = (c: Context<AppBindings>) => c.req.method === "GET" || c.req.method === "HEAD";

/**
 * The bookmark the client sent, opened, with the shard it is of (it is encrypted with it: one shard's bookmark is never
 * handed to another's database); undefined when none was sent, or it does not open under the key.
 */
async function sentBookmark(c: Context<AppBindings>): Promise<{ shard: number; bookmark: string } | undefined> {
  const sent = c.req.header(BOOKMARK_HEADER)?.trim();
  if (sent === undefined) return undefined;
  if (!ENCRYPTED_BOOKMARK.test(sent)) {
    throw new Validation(
      [
        {
          field: BOOKMARK_HEADER,
          path: [BOOKMARK_HEADER],
          code: "invalid_bookmark",
          message: `${BOOKMARK_HEADER} must be a bookmark an earlier answer carried`,
        },
      ],
      "malformed",
    );
  }
  const key = readConfig(c.env).BOOKMARK_KEY;
  if (!key) return undefined;
  const opened = (await decryptText(key, PURPOSE, "", sent).catch(() => undefined))?.match(/^(\d+):(.+)$/);
  return opened && BOOKMARK.test(opened[2]!) ? { shard: Number(opened[1]), bookmark: opened[2]! } : undefined;
}

export const d1Session = createMiddleware<AppBindings>(async (c, next) => {
  c.set("sentBookmark", await sentBookmark(c));
  const directory = c.env.DB.withSession(isRead(c) ? "first-unconstrained" : "first-primary");
  c.set("directory", createDb(directory));
  await next();
  const bookmark = c.get("shardSession")?.getBookmark();
  const key = readConfig(c.env).BOOKMARK_KEY;
  if (bookmark && key) c.header(BOOKMARK_HEADER, await encryptText(key, PURPOSE, "", `${c.get("shard")}:${bookmark}`));
});

/**
 * Opens the session of shard `shard` for the rest of the request: `db` and `d1` (and so every service) read and write
 * there. Called by authentication and by the public routes once they know the organization; called again (a stale
 * guess, platform/auth.ts) it replaces the session.
 */
export function openShard(c: Context<AppBindings>, shard: number): void {
  const sentFor = c.get("sentBookmark");
  const sent = sentFor?.shard === shard ? sentFor.bookmark : undefined;
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
export async function openPublicKey(
  c: Context<AppBindings>,
  kind: PublicKeyKind,
  key: string,
  { writes = !isRead(c) } = {},
): Promise<string | null> {
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
    ...portsOf(c.env),
    log: createLogger({ requestId: c.get("requestId"), organizationId }),
    db: c.get("db"),
    directory: c.get("directory"),
    d1: c.get("d1"),
    organizationId,
    actor: { type: "public", userId: null },
    requestId: c.get("requestId"),
    defer: (work) => c.executionCtx.waitUntil(work),
  };
}
