import { cors } from "hono/cors";

/**
 * Headers a page on another origin may read from our answers (by default a browser shows it none but a few simple
 * ones): the request id a support ticket quotes, Retry-After of a 429 or 503, and the credential quota's RateLimit fields.
 */
export const EXPOSED_HEADERS = ["X-Request-Id", "Retry-After", "RateLimit-Policy", "RateLimit"];

/**
 * CORS open to every origin, for the routes that hold no cookie or ambient credential (public capability routes,
 * OAuth's metadata, registration and token endpoints): a preflight cached a day.
 */
export const openCors = (allowMethods: string[], allowHeaders: string[]) =>
  cors({ origin: "*", allowMethods, allowHeaders, exposeHeaders: EXPOSED_HEADERS, maxAge: 86_400 });
