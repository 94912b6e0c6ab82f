import type { Db } from "../db/client";
import { mailOutbox } from "../db/schema";
import { readConfig, type Env } from "../env";
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
  /**
   * Makes a resend of the same message a no-op: a sender that cannot know whether its last attempt went out (it
   * failed before recording it) sends again with the same key. Resend's `Idempotency-Key` (24 hours); the log
   * provider keeps one row per key.
   */
  idempotencyKey?: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
}

export class MailFailed extends Error {}

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
      const id = message.idempotencyKey ?? newId();
      const key = readConfig(env).MAIL_LOG_KEY;
      const body = key
        ? await encryptText(key, MAIL_LOG_PURPOSE, id, message.text)
        : message.text.replace(/https?:\/\/\S+/g, WITHHELD_LINK);
      await db
        .insert(mailOutbox)
        .values({
          id,
          organizationId: message.organizationId ?? null,
          to: message.to,
          subject: message.subject,
          body,
          sealed: key !== undefined,
          createdAt: nowIso(),
        })
        .onConflictDoNothing()
        .run();
    },
  };
}

/** Resend's API (POST /emails with a bearer key): the real provider, tested against a fake that speaks it. */
export function resendMailer(
  config: { apiUrl: string; apiKey: string; from: string },
  fetchFn: typeof fetch = fetch,
  timeoutMs = 10_000,
): Mailer {
  return {
    async send(message) {
      const init = {
        method: "POST",
        headers: {
          authorization: `Bearer ${config.apiKey}`,
          "content-type": "application/json",
          ...(message.idempotencyKey ? { "idempotency-key": message.idempotencyKey } : {}),
        },
        body: JSON.stringify({ from: config.from, to: [message.to], subject: message.subject, text: message.text }),
      };
      await fetchWithDeadline(fetchFn, `${config.apiUrl.replace(/\/$/, "")}/emails`, init, timeoutMs, async (res) => {
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
