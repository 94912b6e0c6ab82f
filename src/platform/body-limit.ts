import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import { PayloadTooLarge } from "../lib/errors";

/** Default for every JSON route; upload routes and the small public forms set their own with `limitBody`. */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * Routes whose bodies may be larger than the default: the app-wide limit applies theirs instead (it runs before any
 * route is matched, so the exception has to be known here). Each route also bounds what it keeps (a file's size).
 */
export const LARGE_BODY_ROUTES: { method: string; path: RegExp; maxBytes: number; streamed?: { contentType: string } }[] = [
  { method: "POST", path: /^\/v1\/properties\/[^/]+\/photos$/, maxBytes: 25 * 1024 * 1024 },
  // One document of at most 25 MiB, with the form's other fields and boundaries.
  { method: "POST", path: /^\/v1\/deals\/[^/]+\/documents$/, maxBytes: 26 * 1024 * 1024 },
  // A brokerage's own PDF to send for signature (documents/uploads.ts), at most 15 MiB.
  { method: "POST", path: /^\/api\/documents\/uploads$/, maxBytes: 15 * 1024 * 1024 },
  // A signed PDF to check (signatures/verify-routes.ts).
  { method: "POST", path: /^\/api\/public\/verify$/, maxBytes: 10 * 1024 * 1024 },
  // A book to import: a CSV streamed to R2 as it arrives, never held in memory (imports/routes.ts).
  { method: "POST", path: /^\/v1\/imports$/, maxBytes: 50 * 1024 * 1024, streamed: { contentType: "text/csv" } },
];

/**
 * The route streams this request's body to storage as it arrives: no middleware may read it first (the body limit
 * checks Content-Length alone, which the route requires; the idempotency fingerprint leaves the body out).
 */
export function streamedBody(method: string, path: string, contentType: string | null | undefined): { maxBytes: number } | null {
  const route = LARGE_BODY_ROUTES.find((r) => r.streamed && r.method === method && r.path.test(path));
  const type = contentType?.split(";")[0]?.trim().toLowerCase();
  return route && type === route.streamed!.contentType ? { maxBytes: route.maxBytes } : null;
}

/** The app-wide limit: the route's own from LARGE_BODY_ROUTES, else the default. */
export function limitBodies(defaultBytes = DEFAULT_BODY_LIMIT_BYTES) {
  const limits = new Map<number, ReturnType<typeof limitBody>>([[defaultBytes, limitBody(defaultBytes)]]);
  for (const r of LARGE_BODY_ROUTES) limits.set(r.maxBytes, limitBody(r.maxBytes));
  return createMiddleware((c, next) => {
    const streamed = streamedBody(c.req.method, c.req.path, c.req.header("content-type"));
    if (streamed) {
      // Hono's limit would read a body without Content-Length into memory: a streamed one is refused on the header.
      if (Number(c.req.header("content-length") ?? 0) > streamed.maxBytes) throw new PayloadTooLarge(streamed.maxBytes);
      return next();
    }
    const route = LARGE_BODY_ROUTES.find((r) => r.method === c.req.method && r.path.test(c.req.path));
    return limits.get(route?.maxBytes ?? defaultBytes)!(c, next);
  });
}

/**
 * 413 before the body is parsed: Content-Length over the limit is refused at once, and a chunked body is cut off
 * as soon as its running count passes the limit.
 */
export const limitBody = (maxBytes: number) =>
  bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new PayloadTooLarge(maxBytes);
    },
  });
