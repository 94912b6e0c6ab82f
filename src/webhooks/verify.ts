/**
 * Receiver kit: sign and verify webhook deliveries (spec: Events, Delivery 2-3). No imports, WebCrypto only, so the
 * file can be copied into any Worker or Node (>= 18) receiver as is.
 *
 *   const result = await verifyWebhook(secret, request.headers, await request.text());
 *   if (!result.ok) return new Response(result.reason, { status: 400 });
 *
 * The signature is `sha256=<hex>` of HMAC-SHA-256(secret, `<X-Service-Timestamp>.<raw body>`). Verify the raw bytes
 * as received: re-serialising parsed JSON changes them. Deliveries repeat; de-duplicate on the payload `id`.
 */

export const SIGNATURE_HEADER = "X-Service-Signature";
export const TIMESTAMP_HEADER = "X-Service-Timestamp";

export interface VerifyOptions {
  /** Largest accepted distance between the timestamp header and now, in seconds (spec: Limits, 300). */
  toleranceSeconds?: number;
  /** Now, in Unix seconds; for tests. */
  now?: number;
}

export type VerifyResult =
  | { ok: true; timestamp: number }
  | { ok: false; reason: "missing_headers" | "malformed_signature" | "timestamp_out_of_tolerance" | "signature_mismatch" };

/** Fetch `Headers`, or a Node `IncomingHttpHeaders`-like object (lower-case keys, string or string[] values). */
export type HeaderSource = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

const encoder = new TextEncoder();
// Imported keys, kept once settled: a pending import is never shared, since a Worker cannot await a promise that
// another request's I/O resolves. A handful of secrets per process; the cap only guards against unbounded growth.
const keys = new Map<string, CryptoKey>();

/** The HMAC key of a secret, for the spec's signature or (`standard`) the Standard Webhooks one; cached per process. */
async function hmacKey(secret: string, standard = false): Promise<CryptoKey> {
  const cacheKey = `${standard ? "std" : "svc"}:${secret}`;
  const cached = keys.get(cacheKey);
  if (cached) return cached;
  const bytes = standard ? standardWebhookKey(secret) : encoder.encode(secret);
  const key = await crypto.subtle.importKey("raw", bytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
  if (keys.size > 1000) keys.clear();
  keys.set(cacheKey, key);
  return key;
}

function bytesOf(body: string | ArrayBuffer | Uint8Array): Uint8Array {
  if (typeof body === "string") return encoder.encode(body);
  return body instanceof Uint8Array ? body : new Uint8Array(body);
}

function signedBytes(timestamp: string, rawBody: string | ArrayBuffer | Uint8Array): Uint8Array<ArrayBuffer> {
  const prefix = encoder.encode(`${timestamp}.`);
  const body = bytesOf(rawBody);
  const out = new Uint8Array(prefix.length + body.length);
  out.set(prefix);
  out.set(body, prefix.length);
  return out;
}

/** The `X-Service-Signature` value for a body sent at `timestamp` (Unix seconds). */
export async function signWebhook(secret: string, timestamp: number | string, rawBody: string | ArrayBuffer | Uint8Array): Promise<string> {
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", await hmacKey(secret), signedBytes(String(timestamp), rawBody)));
  let hex = "";
  for (const b of mac) hex += b.toString(16).padStart(2, "0");
  return `sha256=${hex}`;
}

function header(headers: HeaderSource, name: string): string | null {
  if (typeof headers.get === "function") return (headers as { get(n: string): string | null }).get(name);
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name.toLowerCase());
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}

/**
 * Standard Webhooks (https://www.standardwebhooks.com): every delivery also carries `webhook-id`,
 * `webhook-timestamp` and `webhook-signature: v1,<base64 HMAC-SHA-256 of "id.timestamp.body">`, so the official
 * libraries verify it in any language. The key is the secret's bytes: the base64 after `whsec_` for secrets issued
 * in that form (every secret this service generates), else the secret's UTF-8 text (a secret chosen by the caller;
 * the official libraries take it with their "raw" option).
 */
export function standardWebhookKey(secret: string): Uint8Array<ArrayBuffer> {
  const encoded = secret.startsWith("whsec_") ? secret.slice(6) : null;
  if (encoded !== null && /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(encoded) && encoded.length > 0) {
    return Uint8Array.from(atob(encoded), (c) => c.charCodeAt(0));
  }
  return new Uint8Array(encoder.encode(secret));
}

/** The `webhook-signature` value of a delivery with id `id`, sent at `timestamp` (Unix seconds). */
export async function signStandardWebhook(
  secret: string,
  id: string,
  timestamp: number | string,
  rawBody: string | ArrayBuffer | Uint8Array,
): Promise<string> {
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", await hmacKey(secret, true), signedBytes(`${id}.${timestamp}`, rawBody)));
  return `v1,${btoa(String.fromCharCode(...mac))}`;
}

/**
 * Checks a delivery's signature and timestamp. `secret` may be a list while rotating: any of them may have signed.
 * The comparison is WebCrypto's HMAC verify, which does not leak how many bytes matched.
 */
export async function verifyWebhook(
  secret: string | string[],
  headers: HeaderSource,
  rawBody: string | ArrayBuffer | Uint8Array,
  { toleranceSeconds = 300, now = Math.floor(Date.now() / 1000) }: VerifyOptions = {},
): Promise<VerifyResult> {
  const timestamp = header(headers, TIMESTAMP_HEADER);
  const signature = header(headers, SIGNATURE_HEADER);
  if (!timestamp || !signature) return { ok: false, reason: "missing_headers" };
  const hex = signature.match(/^sha256=([0-9a-f]{64})$/i)?.[1];
  if (!hex || !/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: "malformed_signature" };
  if (Math.abs(now - Number(timestamp)) > toleranceSeconds) return { ok: false, reason: "timestamp_out_of_tolerance" };
  const mac = new Uint8Array(32);
  for (let i = 0; i < 32; i++) mac[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  const data = signedBytes(timestamp, rawBody);
  for (const s of Array.isArray(secret) ? secret : [secret]) {
    if (await crypto.subtle.verify("HMAC", await hmacKey(s), mac, data)) return { ok: true, timestamp: Number(timestamp) };
  }
  return { ok: false, reason: "signature_mismatch" };
}
