import { appUrlOf, readConfig, type Env } from "../env";
import { NotConfigured } from "../lib/errors";
import { toHex } from "../lib/crypto";

/**
 * Files in R2 (certificates, property photos and reports; deal documents next) are handed out through signed, expiring
 * URLs: `/api/public/files/<key>?expires=<unix seconds>&signature=<hex HMAC-SHA-256(FILES_URL_SECRET, key \n expires)>`.
 */
export const FILE_URL_TTL_SECONDS = 15 * 60;
const STABLE_SECONDS = 300;
const encoder = new TextEncoder();

function secretOf(env: Env): string {
  const secret = readConfig(env).FILES_URL_SECRET;
  if (!secret) throw new NotConfigured("FILES_URL_SECRET");
  return secret;
}

const keyFor = (secret: string) =>
  crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
/** A link may name whom it was handed to (`for`, a signer's id): it is then that person's link, bound by the MAC. */
const signed = (key: string, expires: number, scope?: string) =>
  encoder.encode(scope === undefined ? `${key}\n${expires}` : `${key}\n${expires}\n${scope}`);

/**
 * A signer of many links at once (a page of listings with their photos): the HMAC key is imported once. Throws
 * NotConfigured when FILES_URL_SECRET is absent, at the first link it is asked for.
 */
export function fileUrlSigner(env: Env, origin: string, ttlSeconds = FILE_URL_TTL_SECONDS, scope?: string) {
  // Rounded down to whole 5 minutes (so valid 10 to 15 minutes by default): a link stays the same URL for a while and
  // browsers can cache what it shows.
  const expires = Math.floor((Math.floor(Date.now() / 1000) + ttlSeconds) / STABLE_SECONDS) * STABLE_SECONDS;
  let key: Promise<CryptoKey> | undefined;
  return async (fileKey: string): Promise<{ url: string; expiresAt: string }> => {
    key ??= keyFor(secretOf(env));
    const mac = toHex(await crypto.subtle.sign("HMAC", await key, signed(fileKey, expires, scope)));
    const forWhom = scope === undefined ? "" : `&for=${encodeURIComponent(scope)}`;
    return {
      url: `${origin}/api/public/files/${encodeURIComponent(fileKey)}?expires=${expires}${forWhom}&signature=${mac}`,
      expiresAt: new Date(expires * 1000).toISOString(),
    };
  };
}

/** The signer of a service's links, on the configured origin (APP_URL) whatever host the request came through. */
export const requestFileSigner = (ctx: { env: Env }, ttlSeconds = FILE_URL_TTL_SECONDS) =>
  fileUrlSigner(ctx.env, appUrlOf(readConfig(ctx.env)), ttlSeconds);

export const signedFileUrl = (env: Env, origin: string, key: string, ttlSeconds = FILE_URL_TTL_SECONDS, scope?: string) =>
  fileUrlSigner(env, origin, ttlSeconds, scope)(key);

/** Whether a file URL's signature holds and has not expired (compared by WebCrypto's verify, in constant time). */
export async function verifyFileUrl(env: Env, key: string, expires: string, signature: string, scope?: string): Promise<boolean> {
  // One spelling per link: no leading zeros, so a signature answers one URL only.
  if (!/^[1-9]\d{0,11}$/.test(expires) || Number(expires) < Date.now() / 1000 || !/^[0-9a-f]{64}$/.test(signature)) return false;
  const mac = Uint8Array.from(signature.match(/../g)!, (h) => parseInt(h, 16));
  return crypto.subtle.verify("HMAC", await keyFor(secretOf(env)), mac, signed(key, Number(expires), scope));
}
