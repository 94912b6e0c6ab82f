// The development mail log read back from local D1 (`npm run mail`, scripts/mail.mjs): the newest messages the `log`
// provider kept for an address, newest first, bodies decrypted. The e2e suites call it on a handle they keep open
// (test/e2e/helpers/local-state.ts) where a mailed code is only a means.
import { readLocalDevVars } from "./dev-vars.mjs";
import { retryLocked } from "./local-d1.mjs";
import { databaseBindings } from "./migrate.mjs";

/** The purpose the log provider encrypts bodies under (MAIL_LOG_PURPOSE, src/mail/mailer.ts). */
const MAIL_LOG_PURPOSE = "mail-log";
/** The marker of a kept body with attachments (LOGGED_WITH_ATTACHMENTS, src/mail/mailer.ts): then `{text, attachments}` as JSON. */
const LOGGED_WITH_ATTACHMENTS = "\u0000mail+attachments\n";

/**
 * The Node twin of decryptText in src/lib/secret-box.ts: AES-GCM 256 under HKDF-SHA-256(secret, salt = purpose,
 * info = "v1"), additional data = the row id, stored as `v1.<iv b64>.<ciphertext b64>`.
 */
async function decryptText(secret, purpose, boundTo, stored) {
  const [version, iv, data] = stored.split(".");
  if (version !== "v1" || !iv || !data) throw new Error("unknown encrypted format");
  const enc = new TextEncoder();
  const base = await crypto.subtle.importKey("raw", enc.encode(secret), "HKDF", false, ["deriveKey"]);
  const key = await crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: enc.encode(purpose), info: enc.encode("v1") },
    base,
    { name: "AES-GCM", length: 256 },
    false,
    ["decrypt"],
  );
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: Buffer.from(iv, "base64"), additionalData: enc.encode(boundTo) },
    key,
    Buffer.from(data, "base64"),
  );
  return new TextDecoder().decode(plain);
}

// Addresses are kept as the sender wrote them; lower() folds ASCII, which is what e-mail addresses are here.
const query = `SELECT id, "to", subject, body, sealed, created_at AS createdAt FROM mail_outbox WHERE lower("to") = ?1 ORDER BY created_at DESC, rowid DESC LIMIT ?2`;

/**
 * The newest `last` messages to `to` on the open databases `env`, newest first: {to, subject, text, createdAt} and
 * `attachments` when the mail has any. A reader applies no migrations (that would write the database `npm run dev` is
 * using); a checkout that never ran them has no mail_outbox yet, and then the answer is simply no mail. The mail log is
 * organization data: each tenant shard holds its organizations' (issue 24), so every shard is asked and the newest kept.
 */
export async function readLocalMail(env, { to: address, last }) {
  const to = address.trim().toLowerCase();
  const rows = [];
  for (const binding of databaseBindings().filter((b) => b !== "DB")) {
    try {
      rows.push(...(await retryLocked(() => env[binding].prepare(query).bind(to, last).all())).results);
    } catch (err) {
      if (!/no such table: mail_outbox/.test(String(err?.message))) throw err;
    }
  }
  rows.sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
  rows.splice(last);
  const key = readLocalDevVars().MAIL_LOG_KEY;
  const messages = [];
  for (const row of rows) {
    let text = row.body;
    if (row.sealed) {
      if (!key) throw new Error("the messages are encrypted and MAIL_LOG_KEY is not set in .dev.vars");
      text = await decryptText(key, MAIL_LOG_PURPOSE, row.id, row.body).catch(() => {
        throw new Error(`message ${row.id} does not open with the MAIL_LOG_KEY of .dev.vars (was it sent under another key?)`);
      });
    }
    let attachments;
    if (text.startsWith(LOGGED_WITH_ATTACHMENTS)) ({ text, attachments } = JSON.parse(text.slice(LOGGED_WITH_ATTACHMENTS.length)));
    const message = { to: row.to, subject: row.subject, text, createdAt: row.createdAt };
    // Attachments are text here (an iCalendar invitation): printed as text, with their file name and type.
    if (attachments?.length)
      message.attachments = attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, content: a.content }));
    messages.push(message);
  }
  return messages;
}
