import { decryptText, encryptText } from "../lib/secret-box";

/**
 * Subscription secrets at rest (lib/secret-box.ts): encrypted under WEBHOOK_SECRET_KEY with the subscription id as
 * additional data, so a ciphertext copied onto another row does not decrypt.
 */
const PURPOSE = "webhook-secrets";

/**
 * A new signing secret in the Standard Webhooks form, `whsec_` and the base64 of 32 random bytes: the official
 * libraries take it as it is, and the prefix makes a leaked secret recognisable in a scan.
 */
export function newWebhookSecret(): string {
  return `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))}`;
}

export const encryptSecret = (masterSecret: string, subscriptionId: string, secret: string) =>
  encryptText(masterSecret, PURPOSE, subscriptionId, secret);

export const decryptSecret = (masterSecret: string, subscriptionId: string, stored: string) =>
  decryptText(masterSecret, PURPOSE, subscriptionId, stored);
