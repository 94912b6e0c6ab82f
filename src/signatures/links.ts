import type { Db } from "../db/client";
import { readConfig, type Env } from "../env";
import { fromBase64Url, sha256Hex, toBase64Url, toHex } from "../lib/crypto";
import { sendAfterCommit } from "../mail/mailer";

/**
 * Signing links (DESIGN.md contract 5: `{APP_URL}/sign/<token>`). A token is `sign_` and 32 bytes, base64url: the
 * envelope's id (16 bytes of its UUID) and 16 random bytes (128 bits, the capability). Carrying the envelope id lets
 * the public routes go straight to the envelope's Durable Object, which knows its live links, without a D1 lookup on
 * the sign path, the one under the most load. Only the token's SHA-256 is stored (signing_links); the raw token is in the
 * answer that created it and in the signer's mail, nowhere else.
 */
function uuidBytes(id: string): Uint8Array {
  const hex = id.replaceAll("-", "");
  return Uint8Array.from(hex.match(/../g)!, (h) => parseInt(h, 16));
}

/**
 * A new token of `envelopeId` and its SHA-256, the only form stored: `sign_` for a signing link, `ses_` for a
 * single-use signing session (an embedded view or a host session, issue 45: sessions.ts).
 */
export async function mintToken(envelopeId: string, prefix: TokenPrefix = "sign"): Promise<{ token: string; hash: string }> {
  const bytes = new Uint8Array(32);
  bytes.set(uuidBytes(envelopeId), 0);
  bytes.set(crypto.getRandomValues(new Uint8Array(16)), 16);
  const token = `${prefix}_${toBase64Url(bytes)}`;
  return { token, hash: await sha256Hex(token) };
}
type TokenPrefix = "sign" | "ses";

/**
 * The envelope id a token names, when it has the shape of one this service mints (a version-4 UUID); null otherwise.
 * Links minted before ids were carried are random throughout: those, and anything else, are looked up by hash.
 */
export function envelopeIdOf(token: string, prefix: TokenPrefix = "sign"): string | null {
  const m = new RegExp(`^${prefix}_([A-Za-z0-9_-]{43})$`).exec(token);
  if (!m) return null;
  const hex = toHex(fromBase64Url(m[1]!).subarray(0, 16));
  const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id) ? id : null;
}

export const signingUrl = (env: Env, token: string) => `${readConfig(env).APP_URL.replace(/\/$/, "")}/sign/${token}`;

export type LinkMail = "request" | "reminder" | "expiry_notice" | "resend";

const SUBJECTS: Record<LinkMail, string> = {
  request: "A document is waiting for your signature",
  resend: "A new link to sign your document",
  reminder: "Reminder: a document is waiting for your signature",
  expiry_notice: "A document waiting for your signature expires tomorrow",
};

/** Mails a signer their link. The raw token exists only in this message and in the creating response. */
export async function sendSigningLink(
  env: Env,
  db: Db,
  organizationId: string,
  signer: { name: string; email: string; role: string },
  token: string,
  kind: LinkMail = "request",
  expiresAt: string | null = null,
  message: string | null = null,
): Promise<void> {
  const lead = {
    request: `You are asked to review and sign a document as ${signer.role}.`,
    reminder: `This is a reminder: a document still waits for your signature as ${signer.role}.`,
    expiry_notice: `A document waiting for your signature as ${signer.role} expires at ${expiresAt ?? "its expiry"} (UTC); after that the link no longer works.`,
    resend: `The sender has sent you a new link to the document you are asked to sign as ${signer.role}.`,
  }[kind];
  const earlier = {
    request: "",
    reminder: " Links in earlier messages still work.",
    expiry_notice: " Links in earlier messages still work.",
    resend: " Links in earlier messages no longer work.",
  }[kind];
  await sendAfterCommit(
    env,
    db,
    {
      organizationId,
      to: signer.email,
      subject: SUBJECTS[kind],
      text: `Hello ${signer.name},\n\n${lead}\n${message ? `The sender writes:\n\n${message}\n\n` : ""}Open this link to read and sign it: ${signingUrl(env, token)}\n\nThe link is personal: do not forward it.${earlier}`,
    },
    "signing link",
    { kind },
  );
}
