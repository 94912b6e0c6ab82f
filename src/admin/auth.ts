import { createMiddleware } from "hono/factory";
import { readConfig } from "../env";
import { sha256Hex } from "../lib/crypto";
import { NotConfigured, Unauthorized } from "../lib/errors";
import type { AppBindings } from "../platform/context";

/**
 * The operator routes (/admin/*) answer only `Authorization: Bearer <ADMIN_TOKEN>`. Both sides are hashed before the
 * constant-time compare, so neither the token's length nor a prefix leaks through timing. Without ADMIN_TOKEN the
 * routes are off (503 not_configured), never open.
 */
export const requireAdmin = createMiddleware<AppBindings>(async (c, next) => {
  const configured = readConfig(c.env).ADMIN_TOKEN;
  if (!configured) throw new NotConfigured("ADMIN_TOKEN");
  const sent = c.req.header("authorization")?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
  if (!sent) throw new Unauthorized();
  const [a, b] = await Promise.all([sha256Hex(sent), sha256Hex(configured)]);
  if (!crypto.subtle.timingSafeEqual(new TextEncoder().encode(a), new TextEncoder().encode(b))) throw new Unauthorized();
  await next();
});
