import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { createLogger, type Logger } from "../lib/log";
import type { AppBindings } from "./context";

/**
 * Where the path itself is a capability (a signing, survey or invitation token: the pages and their public APIs), and the public
 * check of a signed PDF, whose answer names the signers.
 */
const CAPABILITY_PATH = /^\/(api\/public\/)?(sign|survey)\/|^\/invite\/|^\/api\/public\/verify$/;
/** The bearer-authenticated families (app.ts AUTHENTICATED): personal data, and links such as signing links. */
const AUTHENTICATED_PATH = /^\/(v1|api|plants)(\/|$)/;

/** A caller's own request id is kept when it is short and plain (hono/request-id's rule); otherwise a new one. */
const REQUEST_ID = /^[\w\-=]{1,255}$/;

/**
 * Headers of every answer, errors and 404s included (registered first, so it sees what onError and notFound made):
 * - `X-Request-Id`: the request's id (`c.var.requestId`, which a 500's body and the logs name too). Set here, on the
 *   final answer, because a lazily built route group answers from its own context (platform/lazy-routes.ts), whose
 *   headers the app's context never sees.
 * - `X-Content-Type-Options: nosniff`: no answer (a JSON error echoing input, an uploaded file) is sniffed into HTML.
 * - `Cache-Control: no-store` where a token, a capability link or personal data may be in the answer: always on the
 *   capability paths, and on the authenticated families unless the route chose its own caching (clickwrap's
 *   `private, no-store`). Public answers meant to be cached keep theirs (the reviews feed, the widget, signed file
 *   downloads, /openapi.json and /docs).
 */
export const responseHeaders = createMiddleware<AppBindings>(async (c, next) => {
  const given = c.req.header("x-request-id");
  const requestId = given && REQUEST_ID.test(given) ? given : crypto.randomUUID();
  c.set("requestId", requestId);
  await next();
  const set = (name: string, value: string) => {
    try {
      c.res.headers.set(name, value);
    } catch {
      c.header(name, value); // immutable headers (a response from fetch or the cache): Hono copies the response first
    }
  };
  set("X-Request-Id", requestId);
  const path = c.req.path;
  if (CAPABILITY_PATH.test(path)) set("Cache-Control", "no-store");
  else if (AUTHENTICATED_PATH.test(path) && !path.startsWith("/api/public/") && !c.res.headers.has("cache-control"))
    set("Cache-Control", "no-store");
  if (!c.res.headers.has("x-content-type-options")) set("X-Content-Type-Options", "nosniff");
});

/** The request's logger: its lines carry the request id, and the organization once authentication or a public key named it. */
export const requestLog = (c: Context<AppBindings>): Logger =>
  createLogger({ requestId: c.get("requestId"), organizationId: c.get("organization")?.id });
