/**
 * Subscription secrets at rest: AES-GCM under a key derived (HKDF-SHA-256) from the WEBHOOK_SECRET_KEY config value.
 * The subscription id is the additional data, so a ciphertext copied onto another row does not decrypt.
 * Stored as `v1.<iv b64>.<ciphertext b64>`; the version leaves room for a key rotation later.
 */
const encoder = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

function aesKey(masterSecret: string): Promise<CryptoKey> {
  let key = keys.get(masterSecret);
  if (!key) {
    key = crypto.subtle
      .importKey("raw", encoder.encode(masterSecret), "HKDF", false, ["deriveKey"])
      .then((base) =>
        crypto.subtle.deriveKey(
          { name: "HKDF", hash: "SHA-256", salt: encoder.encode("webhook-secrets"), info: encoder.encode("v1") },
          base,
          { name: "AES-GCM", length: 256 },
          false,
          ["encrypt", "decrypt"],
        ),
      );
    keys.set(masterSecret, key);
  }
  return key;
}

const toB64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const fromB64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

/**
 * A new signing secret in the Standard Webhooks form, `whsec_` and the base64 of 32 random bytes: the official
 * libraries take it as it is, and the prefix makes a leaked secret recognisable in a scan.
 */
export function newWebhookSecret(): string {
  return `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))}`;
}

export async function sealSecret(masterSecret: string, subscriptionId: string, secret: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: encoder.encode(subscriptionId) }, await aesKey(masterSecret), encoder.encode(secret));
  return `v1.${toB64(iv)}.${toB64(new Uint8Array(sealed))}`;
}

export async function openSecret(masterSecret: string, subscriptionId: string, stored: string): Promise<string> {
  const [version, iv, data] = stored.split(".");
  if (version !== "v1" || !iv || !data) throw new Error("unknown secret format");
  const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: fromB64(iv), additionalData: encoder.encode(subscriptionId) }, await aesKey(masterSecret), fromB64(data));
  return new TextDecoder().decode(plain);
}
