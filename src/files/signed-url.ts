import { readConfig, type Env } from "../env";
import { NotConfigured } from "../lib/errors";
import { toHex } from "../lib/crypto";

/**
 * Files in R2 (certificates now; deal documents and property photos later) are handed out through signed, expiring
 * URLs: `/api/public/files/<key>?expires=<unix seconds>&signature=<hex HMAC-SHA-256(FILES_URL_SECRET, key \n expires)>`.
 */
export const FILE_URL_TTL_SECONDS = 15 * 60;
const encoder = new TextEncoder();

function secretOf(env: Env): string {
  const secret = readConfig(env).FILES_URL_SECRET;
  if (!secret) throw new NotConfigured("FILES_URL_SECRET");
  return secret;
}

const keyFor = (secret: string) => crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
const signed = (key: string, expires: number) => encoder.encode(`${key}\n${expires}`);

export async function signedFileUrl(env: Env, origin: string, key: string, ttlSeconds = FILE_URL_TTL_SECONDS): Promise<{ url: string; expiresAt: string }> {
  const expires = Math.floor(Date.now() / 1000) + ttlSeconds;
  const mac = toHex(await crypto.subtle.sign("HMAC", await keyFor(secretOf(env)), signed(key, expires)));
  return { url: `${origin}/api/public/files/${encodeURIComponent(key)}?expires=${expires}&signature=${mac}`, expiresAt: new Date(expires * 1000).toISOString() };
}

/** Whether a file URL's signature holds and has not expired (compared by WebCrypto's verify, in constant time). */
export async function verifyFileUrl(env: Env, key: string, expires: string, signature: string): Promise<boolean> {
  if (!/^\d{1,12}$/.test(expires) || Number(expires) < Date.now() / 1000 || !/^[0-9a-f]{64}$/.test(signature)) return false;
  const mac = Uint8Array.from(signature.match(/../g)!, (h) => parseInt(h, 16));
  return crypto.subtle.verify("HMAC", await keyFor(secretOf(env)), mac, signed(key, Number(expires)));
}
