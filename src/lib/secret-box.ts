/**
 * Text encrypted at rest: AES-GCM under a key derived (HKDF-SHA-256) from a configured secret and a purpose (the salt),
 * with additional data binding the ciphertext to its row, so a value copied onto another row does not open.
 * Stored as `v1.<iv b64>.<ciphertext b64>`; the version leaves room for a key rotation later.
 */
import { fromBase64, toBase64 } from "./crypto";
import { settledCache } from "./settled-cache";

const encoder = new TextEncoder();
const keys = settledCache<CryptoKey>(64);

const aesKey = (masterSecret: string, purpose: string): Promise<CryptoKey> =>
  keys(`${purpose}\n${masterSecret}`, async () => {
    const base = await crypto.subtle.importKey("raw", encoder.encode(masterSecret), "HKDF", false, ["deriveKey"]);
    return crypto.subtle.deriveKey(
      { name: "HKDF", hash: "SHA-256", salt: encoder.encode(purpose), info: encoder.encode("v1") },
      base,
      { name: "AES-GCM", length: 256 },
      false,
      ["encrypt", "decrypt"],
    );
  });

export async function encryptText(masterSecret: string, purpose: string, boundTo: string, text: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ciphertext = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: encoder.encode(boundTo) },
    await aesKey(masterSecret, purpose),
    encoder.encode(text),
  );
  return `v1.${toBase64(iv)}.${toBase64(new Uint8Array(ciphertext))}`;
}

export async function decryptText(masterSecret: string, purpose: string, boundTo: string, stored: string): Promise<string> {
  const [version, iv, data] = stored.split(".");
  if (version !== "v1" || !iv || !data) throw new Error("unknown encrypted format");
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: fromBase64(iv), additionalData: encoder.encode(boundTo) },
    await aesKey(masterSecret, purpose),
    fromBase64(data),
  );
  return new TextDecoder().decode(plain);
}
