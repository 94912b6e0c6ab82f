import { and, eq, lte, sql } from "drizzle-orm";
import { createMiddleware } from "hono/factory";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Db } from "../db/client";
import { idempotencyKeys } from "../db/schema";
import { sha256Hex } from "../lib/crypto";
import { AppError, Conflict, Validation } from "../lib/errors";
import { loggableError } from "../lib/log";
import { nowIso } from "../lib/time";
import { versionOf } from "../db/write";
import type { ServiceContext } from "../service-context";
import type { AppBindings, IdempotencyClaim } from "./context";
import { etagOf } from "./etag";
import { streamedBody } from "./body-limit";
import { requestLog } from "./response-headers";

/**
 * Idempotency keys, Stripe's model (docs/decisions/0003-idempotency-keys.md): a POST, PUT, PATCH or DELETE on /v1 or
 * /api sent with `Idempotency-Key` runs once per organization and key. Its answer is kept for 24 hours and replayed
 * (with `Idempotent-Replayed: true`) to a retry of the same request; the same key with another method, path, query or
 * body is a 422; a retry while the first is still running is a 409. A 5xx, a 429 or a lost race (409
 * concurrent_modification) is not kept, so the request can be retried under the same key, unless its write kept its
 * answer in its own batch and committed. A route whose answer shows a secret or a capability once (a webhook's signing
 * secret, a signing or survey link) names it in `replayOmits`: the replay leaves it out, and it is never stored in the
 * clear here.
 */
export const IDEMPOTENCY_HEADER = "Idempotency-Key";
export const IDEMPOTENCY_TTL_HOURS = 24;
/** A claim still in flight after this long belongs to a request that died; a retry of the same request may take it over. */
const ABANDONED_AFTER_MS = 2 * 60 * 1000;
const KEY = /^[\x21-\x7e]{1,255}$/;
const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);
/** Answer headers a replay repeats; the rest (request id, bookmark) belong to the replaying request. */
const KEPT_HEADERS = ["content-type", "etag", "location"];
/** Larger answers are not kept (no write route gives one); the key is released instead. */
const MAX_KEPT_BODY = 1024 * 1024;

const invalidKey = () =>
  new Validation(
    [
      {
        field: IDEMPOTENCY_HEADER,
        path: [IDEMPOTENCY_HEADER],
        code: "invalid_idempotency_key",
        message: `${IDEMPOTENCY_HEADER} must be 1 to 255 visible ASCII characters`,
      },
    ],
    "malformed",
  );

/** The key was first used for another request: 422 on every route family. */
export class IdempotencyKeyReused extends AppError {
  readonly status = 422;
  readonly code = "idempotency_key_reused";
  constructor() {
    super(`This ${IDEMPOTENCY_HEADER} was used for another request (method, path, query or body); use a new key for a new request`);
  }
}

/**
 * What makes two requests the same: method, path, query and body. The body is read once, as bytes (Hono keeps them for
 * the route's parser, so a file upload reaches it unchanged); a multipart body counts by its parts (names, values,
 * file names, types and the SHA-256 of each file), since a client's retry picks a new boundary.
 */
async function fingerprintOf(contentType: string | null, method: string, url: URL, bytes: ArrayBuffer): Promise<string> {
  if (contentType?.toLowerCase().startsWith("multipart/form-data")) {
    const form = await new Response(bytes, { headers: { "content-type": contentType } }).formData().catch(() => null);
    if (form) {
      const parts = await Promise.all(
        [...form.entries()].map(async ([name, value]) =>
          typeof value === "string"
            ? [name, value]
            : [name, { file: value.name, type: value.type, sha256: await sha256Hex(await value.arrayBuffer()) }],
        ),
      );
      return sha256Hex(JSON.stringify([method, url.pathname, url.search, parts]));
    }
  }
  return sha256Hex(JSON.stringify([method, url.pathname, url.search, new TextDecoder().decode(bytes)]));
}

export const idempotency = createMiddleware<AppBindings>(async (c, next) => {
  const key = c.req.header(IDEMPOTENCY_HEADER);
  if (key === undefined || !WRITES.has(c.req.method)) return next();
  if (!KEY.test(key)) throw invalidKey();
  const db = c.get("db");
  const organizationId = c.get("organization").id;
  const url = new URL(c.req.url);
  const contentType = c.req.raw.headers.get("content-type");
  // A body streamed to storage (an import's CSV, up to 50 MB) is not read here: its length and type stand for it.
  const streamed = streamedBody(c.req.method, c.req.path, contentType);
  const bytes = streamed
    ? (new TextEncoder().encode(`streamed ${contentType} ${c.req.header("content-length") ?? ""}`).buffer as ArrayBuffer)
    : await c.req.arrayBuffer();
  const fingerprint = await fingerprintOf(contentType, c.req.method, url, bytes);
  const where = and(eq(idempotencyKeys.organizationId, organizationId), eq(idempotencyKeys.key, key));

  const now = new Date();
  const claimed = await db
    .insert(idempotencyKeys)
    .values({
      organizationId,
      key,
      fingerprint,
      state: "in_flight",
      createdAt: nowIso(now),
      expiresAt: nowIso(new Date(now.getTime() + IDEMPOTENCY_TTL_HOURS * 3_600_000)),
    })
    .onConflictDoUpdate({
      target: [idempotencyKeys.organizationId, idempotencyKeys.key],
      set: {
        fingerprint,
        state: "in_flight",
        responseStatus: null,
        responseHeaders: null,
        responseBody: null,
        createdAt: sql`excluded.created_at`,
        expiresAt: sql`excluded.expires_at`,
      },
      // Expired keys start afresh; an abandoned claim of this very request may be taken over.
      setWhere: sql`${idempotencyKeys.expiresAt} <= excluded.created_at OR (${idempotencyKeys.state} = 'in_flight' AND ${idempotencyKeys.fingerprint} = excluded.fingerprint AND ${idempotencyKeys.createdAt} < ${nowIso(new Date(now.getTime() - ABANDONED_AFTER_MS))})`,
    })
    .returning({ key: idempotencyKeys.key })
    .get();

  if (!claimed) {
    const kept = await db.select().from(idempotencyKeys).where(where).get();
    if (!kept) throw new Conflict("This Idempotency-Key is being used by another request; retry", "idempotency_key_in_use");
    if (kept.fingerprint !== fingerprint) throw new IdempotencyKeyReused();
    if (kept.state === "in_flight")
      throw new Conflict(
        "A request with this Idempotency-Key is still being processed; retry once it has answered",
        "idempotency_key_in_flight",
      );
    const status = kept.responseStatus ?? 200;
    // 204 and 304 carry no body, and a Response refuses one even when empty.
    const replayed = status === 204 || status === 304 ? null : kept.responseBody;
    return c.newResponse(replayed, status as ContentfulStatusCode, { ...kept.responseHeaders, "Idempotent-Replayed": "true" });
  }

  const claim: IdempotencyClaim = { db, where };
  c.set("idempotencyClaim", claim);
  await next();
  // The verb kept this very answer in the batch of its write: nothing more to write.
  if (await isKeptAnswer(claim.kept, c.res)) return;
  // A lost race or a rate limit says nothing about the request itself: its retry must run again, not replay that.
  const transient = c.res.status === 429 || (c.error instanceof Conflict && c.error.code === "concurrent_modification");
  await keep(db, where, c.res, transient, c.get("replayOmits") ?? []).catch(async (err) => {
    requestLog(c).error("idempotent answer not kept; key released", { error: loggableError(err) });
    await release(db, where).catch(() => undefined);
  });
});

/**
 * Lets the key go, so its retry runs again: only while its claim is still in flight. A verb that kept its answer in
 * its own batch (`keepAnswerInBatch`) may have committed even though the request failed (D1 answered with an error
 * after the commit): that answer stays, and the retry replays it instead of writing a second time.
 */
const release = (db: Db, where: ReturnType<typeof and>) =>
  db.delete(idempotencyKeys).where(and(where, eq(idempotencyKeys.state, "in_flight")));

/** The wildcard step of a `replayOmits` path: every item of an array (`["links", "*", "url"]`). */
const EVERY_ITEM = "*";

/** Deletes the field at `path` under `at`; `*` steps into every item of an array. A path that is not there is fine. */
function drop(at: unknown, path: string[]): void {
  if (!at || typeof at !== "object" || path.length === 0) return;
  const [step, ...rest] = path as [string, ...string[]];
  if (step === EVERY_ITEM) {
    if (Array.isArray(at)) for (const item of at) drop(item, rest);
    return;
  }
  if (rest.length === 0) delete (at as Record<string, unknown>)[step];
  else drop((at as Record<string, unknown>)[step], rest);
}

/** `body` without the fields at `paths` (a secret or capability shown once is not kept for replays). */
function omit(body: string, paths: string[][]): string {
  if (paths.length === 0) return body;
  const value = JSON.parse(body) as unknown;
  for (const path of paths) drop(value, path);
  return JSON.stringify(value);
}

const keptHeadersOf = (headers: Headers) => Object.fromEntries(KEPT_HEADERS.flatMap((h) => (headers.has(h) ? [[h, headers.get(h)!]] : [])));

/**
 * For a verb that writes once: its answer's idempotency record as a statement of that verb's own batch, so
 * keeping it costs no round trip of its own. `shape` builds the body the route answers from the verb's result, and
 * the ETag is the result's version, as the route sets it. After the request the middleware compares the response with
 * what was kept and, should they differ (or the verb answered without committing), keeps the response as before.
 * It takes the request's claim and the paths a replay leaves out as data, no request context: the verb's batch
 * (events/commit.ts) marks the claim kept when it commits.
 */
export function keepAnswerInBatch<T extends object>(
  claim: IdempotencyClaim | undefined,
  status: number,
  shape: (result: T) => unknown,
  omitted: string[][] = [],
): ServiceContext["keepAnswer"] {
  if (!claim) return undefined;
  return (result) => {
    const body = JSON.stringify(shape(result as T));
    const version = versionOf(result);
    const headers: Record<string, string> = {
      "content-type": "application/json",
      ...(version === undefined ? {} : { etag: etagOf(version) }),
    };
    const kept = omitted.length > 0 ? omit(body, omitted) : body;
    return {
      statement: claim.db
        .update(idempotencyKeys)
        .set({ state: "done", responseStatus: status, responseHeaders: headers, responseBody: kept })
        .where(claim.where),
      committed: () => void (claim.kept = { status, headers, body }),
    };
  };
}

/** Whether `res` is exactly the answer a verb kept in its batch (status, the kept headers, body). */
async function isKeptAnswer(kept: IdempotencyClaim["kept"], res: Response): Promise<boolean> {
  if (!kept || res.status !== kept.status) return false;
  if (JSON.stringify(keptHeadersOf(res.headers)) !== JSON.stringify(kept.headers)) return false;
  return (await res.clone().text()) === kept.body;
}

/** Keeps the answer under its key, or releases the key when the answer must not be replayed (5xx, transient, too large). */
async function keep(db: Db, where: ReturnType<typeof and>, res: Response, transient: boolean, omitted: string[][]): Promise<void> {
  const body = res.status >= 500 || transient ? null : await res.clone().text();
  if (body === null || body.length > MAX_KEPT_BODY) {
    await release(db, where);
    return;
  }
  const headers = keptHeadersOf(res.headers);
  const kept = omitted.length > 0 && res.headers.get("content-type")?.includes("json") ? omit(body, omitted) : body;
  await db
    .update(idempotencyKeys)
    .set({ state: "done", responseStatus: res.status, responseHeaders: headers, responseBody: kept })
    .where(where);
}

/** Cron pass: keys past their 24 hours at `now` go, a bounded number per pass. */
export async function pruneIdempotencyKeys(db: Db, { now = new Date() } = {}): Promise<void> {
  await db.run(
    sql`DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys WHERE ${lte(idempotencyKeys.expiresAt, nowIso(now))} LIMIT 5000)`,
  );
}
