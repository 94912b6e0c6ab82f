import type { Context } from "hono";
import type { RequestMeta } from "../service-context";

/** Who sent a request, as an audit trail records it: the client IP Cloudflare saw and the user agent, bounded. */
export const requestMeta = (c: Context): RequestMeta => ({
  ip: c.req.header("cf-connecting-ip")?.trim().slice(0, 64) || null,
  userAgent: c.req.header("user-agent")?.slice(0, 500) || null,
});
