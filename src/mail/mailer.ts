import type { Db } from "../db/client";
import { mailOutbox } from "../db/schema";
import { readConfig, type Env } from "../env";
import { sha256Hex, toBase64 } from "../lib/crypto";
import { newId } from "../lib/ids";
import { createLogger, loggableError } from "../lib/log";
import { fetchWithDeadline } from "../lib/outbound";
import { encryptText } from "../lib/secret-box";
import { nowIso } from "../lib/time";

/**
 * Outbound mail behind one small interface (DESIGN.md configuration `EMAIL_PROVIDER`): `log` keeps every message in
 * the mail_outbox table (development and tests read it there), `resend` posts it to Resend's HTTP API. Signing
 * links, survey links and sign-in codes all leave through here. Message bodies are never logged.
 */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  /** The organization the message is sent for (the log provider files it under it). */
  organizationId?: string;
  /** Text attachments (an iCalendar invitation): sent as files beside the body (DESIGN.md contract 8 `attachments[]`). */
  attachments?: MailAttachment[];
  /**
   * Makes the send exactly-once under retries: the log provider keeps one message per key, Resend is given it as its
   * `Idempotency-Key` (it drops a repeat for 24 hours). Derived from what the message is for (an invitation's
   * attendee and SEQUENCE), so a retry computes the same one.
   */
  idempotencyKey?: string;
}

export interface MailAttachment {
  filename: string;
  /** The MIME type with its parameters: `text/calendar; method=REQUEST; charset=UTF-8`. */
  contentType: string;
  /** The text of the file (attachments are text here; the mail reader prints them as such). */
  content: string;
}

/**
 * How the log provider keeps a message with attachments: its stored (then encrypted) text is this marker and then
 * `{text, attachments}` as JSON; a body without the marker is the text alone, as before (mail_outbox has no column
 * for files, and the body is already the encrypted part). scripts/mail.mjs and the tests read it with `readLoggedBody`.
 */
export const LOGGED_WITH_ATTACHMENTS = "\u0000mail+attachments\n";

/** The text and attachments of a logged body (after decryption). */
export function readLoggedBody(stored: string): { text: string; attachments?: MailAttachment[] } {
  if (!stored.startsWith(LOGGED_WITH_ATTACHMENTS)) return { text: stored };
  return JSON.parse(stored.slice(LOGGED_WITH_ATTACHMENTS.length)) as { text: string; attachments: MailAttachment[] };
}

/** A stable mail_outbox id (UUID-shaped) for an idempotency key: a second insert of the same message is a no-op. */
async function idOfKey(key: string): Promise<string> {
  const hex = await sha256Hex(`mail:${key}`);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
}

export class MailFailed extends Error {}

/** The provider said "not now" (HTTP 429): nothing was sent, and a retry later is no sign the message is bad. */
export class MailRateLimited extends MailFailed {}

/** Messages sendMails has out at once with an HTTP provider (Resend's default limit is a few requests a second). */
export const PROVIDER_SIDE_BY_SIDE = 4;

/** The mail_outbox row a `log` message is kept in is encrypted with this purpose (lib/secret-box.ts). */
export const MAIL_LOG_PURPOSE = "mail-log";
/** What the log provider keeps of a link when it cannot encrypt the body: the capability stays out of the database. */
export const WITHHELD_LINK = "[link withheld: set MAIL_LOG_KEY to keep links in the mail log]";

/**
 * The `log` provider: a D1 row per message, its body encrypted under MAIL_LOG_KEY (links are capabilities). `db` is the
 * caller's shard (mail_outbox is organization data): the mailer reads nothing to find where to write.
 */
export function logMailer(env: Env, db: Db): Mailer {
  return {
    async send(message) {
      await db
        .insert(mailOutbox)
        .values(await loggedRow(env, message))
        .onConflictDoNothing()
        .run();
    },
  };
}

/** The mail_outbox row the log provider keeps `message` in (one row per idempotency key). */
async function loggedRow(env: Env, message: MailMessage) {
  const id = message.idempotencyKey ? await idOfKey(message.idempotencyKey) : newId();
  const key = readConfig(env).MAIL_LOG_KEY;
  const withhold = (text: string) => (key ? text : text.replace(/https?:\/\/\S+/g, WITHHELD_LINK));
  const plain = message.attachments?.length
    ? `${LOGGED_WITH_ATTACHMENTS}${JSON.stringify({
        text: withhold(message.text),
        attachments: message.attachments.map((a) => ({ ...a, content: withhold(a.content) })),
      })}`
    : withhold(message.text);
  const body = key ? await encryptText(key, MAIL_LOG_PURPOSE, id, plain) : plain;
  return {
    id,
    organizationId: message.organizationId ?? null,
    to: message.to,
    subject: message.subject,
    body,
    sealed: key !== undefined,
    createdAt: nowIso(),
  };
}

/**
 * Several messages at once (the action plans' e-mails of a cron round): answers, per message, null when it went or
 * the error when it did not. The log provider files them in one D1 batch rather than a round trip each; a provider
 * over HTTP sends them a few side by side, each on its own.
 */
export async function sendMails(env: Env, db: Db, messages: MailMessage[]): Promise<unknown[]> {
  if (readConfig(env).EMAIL_PROVIDER === "resend") {
    // PROVIDER_SIDE_BY_SIDE at a time; once the provider refuses for its rate, the rest are not tried: each answers
    // that refusal, so its sender retries it later without counting it as a failed send.
    const answers: unknown[] = [];
    let limited: MailRateLimited | null = null;
    for (let i = 0; i < messages.length; i += PROVIDER_SIDE_BY_SIDE) {
      const slice = messages.slice(i, i + PROVIDER_SIDE_BY_SIDE);
      if (limited) {
        answers.push(...slice.map(() => limited));
        continue;
      }
      const sent = await Promise.all(
        slice.map(async (message) => {
          try {
            await mailerFor(env, db).send(message);
            return null;
          } catch (err) {
            return err;
          }
        }),
      );
      limited = (sent.find((err) => err instanceof MailRateLimited) as MailRateLimited | undefined) ?? null;
      answers.push(...sent);
    }
    return answers;
  }
  if (messages.length === 0) return [];
  try {
    const rows = await Promise.all(messages.map((message) => loggedRow(env, message)));
    const [first, ...rest] = rows.map((row) => db.insert(mailOutbox).values(row).onConflictDoNothing());
    await db.batch([first!, ...rest]);
    return messages.map(() => null);
  } catch (err) {
    return messages.map(() => err);
  }
}

/** Resend's API (POST /emails with a bearer key): the real provider, tested against a fake that speaks it. */
export function resendMailer(
  config: { apiUrl: string; apiKey: string; from: string },
  fetchFn: typeof fetch = fetch,
  timeoutMs = 10_000,
): Mailer {
  return {
    async send(message) {
      const attachments = message.attachments?.map((a) => ({
        filename: a.filename,
        content: toBase64(new TextEncoder().encode(a.content)),
        content_type: a.contentType,
      }));
      const init = {
        method: "POST",
        headers: {
          authorization: `Bearer ${config.apiKey}`,
          "content-type": "application/json",
          ...(message.idempotencyKey ? { "idempotency-key": message.idempotencyKey.slice(0, 256) } : {}),
        },
        body: JSON.stringify({ from: config.from, to: [message.to], subject: message.subject, text: message.text, attachments }),
      };
      await fetchWithDeadline(fetchFn, `${config.apiUrl.replace(/\/$/, "")}/emails`, init, timeoutMs, async (res) => {
        if (res.status === 429) throw new MailRateLimited("mail provider answered 429 (rate limited)");
        if (!res.ok) throw new MailFailed(`mail provider answered ${res.status}`);
        await res.body?.cancel();
      });
    },
  };
}

/**
 * Sends after a change has landed (a signing link, a code, a copy): a failure is logged under `what`, with `context`
 * (ids, never addresses or bodies), and does not undo or fail the change.
 */
export async function sendAfterCommit(
  env: Env,
  db: Db,
  message: MailMessage,
  what: string,
  context: Record<string, unknown> = {},
): Promise<void> {
  try {
    await mailerFor(env, db).send(message);
  } catch (err) {
    createLogger().error(`${what} mail failed`, { organizationId: message.organizationId, ...context, error: loggableError(err) });
  }
}

/** The mailer this deployment is configured for; `db`, the caller's shard, is where the log provider files mail. */
export function mailerFor(env: Env, db: Db): Mailer {
  const config = readConfig(env);
  if (config.EMAIL_PROVIDER === "resend") {
    if (!config.EMAIL_API_KEY) throw new MailFailed("EMAIL_API_KEY is not configured");
    return resendMailer({ apiUrl: config.EMAIL_API_URL, apiKey: config.EMAIL_API_KEY, from: config.EMAIL_FROM });
  }
  return logMailer(env, db);
}
