// npm run --silent mail -- --to <email> [--last N]
// Prints the newest messages the development mail provider (`log`) kept for that address, newest first, one JSON line
// each {"to","subject","text","createdAt"} with the body decrypted, plus "attachments" [{filename, contentType, content}]
// when the mail has any (DESIGN.md contract 8). It reads local D1 through
// scripts/local-d1.mjs, so it works whether or not `npm run dev` is running; nothing kept for the address prints nothing.
import { parseArgs } from "node:util";
import { readLocalDevVars } from "./dev-vars.mjs";
import { retryLocked, withLocalD1 } from "./local-d1.mjs";
import { databaseBindings } from "./migrate.mjs";

const USAGE = "usage: npm run --silent mail -- --to <email> [--last N]   (N: 1 to 100, default 10)";
const MAX_LAST = 100;
/** The purpose the log provider encrypts bodies under (MAIL_LOG_PURPOSE, src/mail/mailer.ts). */
const MAIL_LOG_PURPOSE = "mail-log";
/** The marker of a kept body with attachments (LOGGED_WITH_ATTACHMENTS, src/mail/mailer.ts): then `{text, attachments}` as JSON. */
const LOGGED_WITH_ATTACHMENTS = "\u0000mail+attachments\n";

function usage(problem) {
  console.error(`mail: ${problem}\n${USAGE}`);
  process.exit(2);
}

let values;
try {
  ({ values } = parseArgs({ options: { to: { type: "string" }, last: { type: "string" } } }));
} catch (err) {
  usage(err.message);
}
const to = values.to?.trim().toLowerCase();
if (!to || !/^[^\s@]+@[^\s@]+$/.test(to)) usage("--to needs an e-mail address");
const last = values.last === undefined ? 10 : /^\d{1,3}$/.test(values.last) ? Number(values.last) : NaN;
if (!(last >= 1 && last <= MAX_LAST)) usage(`--last must be a whole number from 1 to ${MAX_LAST}`);

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

try {
  // A reader applies no migrations (that would write the database `npm run dev` is using); a checkout that never
  // ran them has no mail_outbox yet, and then the answer is simply no mail. The mail log is organization data: each
  // tenant shard holds its organizations' (issue 24), so the reader asks every shard and keeps the newest.
  const rows = [];
  await withLocalD1(async (env) => {
    for (const binding of databaseBindings().filter((b) => b !== "DB")) {
      try {
        rows.push(...(await retryLocked(() => env[binding].prepare(query).bind(to, last).all())).results);
      } catch (err) {
        if (!/no such table: mail_outbox/.test(String(err?.message))) throw err;
      }
    }
  });
  rows.sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
  rows.splice(last);
  const key = readLocalDevVars().MAIL_LOG_KEY;
  const lines = [];
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
    const line = { to: row.to, subject: row.subject, text, createdAt: row.createdAt };
    // Attachments are text here (an iCalendar invitation): printed as text, with their file name and type.
    if (attachments?.length)
      line.attachments = attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, content: a.content }));
    lines.push(JSON.stringify(line));
  }
  if (lines.length > 0) process.stdout.write(`${lines.join("\n")}\n`);
} catch (err) {
  console.error(`mail: ${err.message}`);
  process.exit(1);
}
