import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import { decryptText } from "../../src/lib/secret-box";
import {
  logMailer,
  MAIL_LOG_PURPOSE,
  MailFailed,
  MailRateLimited,
  PROVIDER_SIDE_BY_SIDE,
  resendMailer,
  sendMails,
  WITHHELD_LINK,
} from "../../src/mail/mailer";
import type { Env } from "../../src/env";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { openMailbox } from "../helpers/receiver";

const message = (to: string, organizationId?: string) => ({
  to,
  subject: "Sign please",
  text: "Open https://app.example.test/sign/sign_secret123 to sign.",
  organizationId,
});
/** The mail kept for `to` on one shard (issue 24: mail_outbox is organization data). */
const rowOn = (db: D1Database, to: string) =>
  db
    .prepare('SELECT id, subject, body, sealed FROM mail_outbox WHERE "to" = ?')
    .bind(to)
    .first<{ id: string; subject: string; body: string; sealed: number }>();
const row = (to: string) => rowOn(env.DB_SHARD_0, to);

describe("mail", () => {
  it("the log provider keeps each message with its body encrypted, so the table holds no link", async () => {
    const to = `${crypto.randomUUID()}@mail.test`;
    await logMailer(env, createDb(env.DB_SHARD_0)).send(message(to));
    const kept = (await row(to))!;
    expect(kept).toMatchObject({ subject: "Sign please", sealed: 1 });
    expect(kept.body).not.toContain("sign_secret123");
    expect(await decryptText(env.MAIL_LOG_KEY!, MAIL_LOG_PURPOSE, kept.id, kept.body)).toBe(message(to).text);
  });

  it("without MAIL_LOG_KEY the log provider withholds links rather than store them", async () => {
    const to = `${crypto.randomUUID()}@mail.test`;
    await logMailer({ ...env, MAIL_LOG_KEY: undefined }, createDb(env.DB_SHARD_0)).send(message(to));
    const kept = (await row(to))!;
    expect(kept.sealed).toBe(0);
    expect(kept.body).toBe(`Open ${WITHHELD_LINK} to sign.`);
  });

  it("the log provider files an organization's mail on the caller's shard, reading nothing in the directory to send", async () => {
    const { organizationId } = await createPrincipal({ shard: 1 });
    const to = `${crypto.randomUUID()}@mail.test`;
    // A directory that fails every call: sending must not look the organization up (issue 30).
    const noDirectory = new Proxy(env.DB, { get: () => () => Promise.reject(new Error("the mailer read the directory")) });
    await logMailer({ ...env, DB: noDirectory }, createDb(await tenantDb(organizationId))).send(message(to, organizationId));
    expect(await rowOn(await tenantDb(organizationId), to)).toMatchObject({ subject: "Sign please" });
    expect(await rowOn(env.DB_SHARD_0, to)).toBeNull();
  });

  it("the log provider writes through the caller's shard when it has one open", async () => {
    const to = `${crypto.randomUUID()}@mail.test`;
    await logMailer(env, createDb(env.DB_SHARD_1)).send(message(to, crypto.randomUUID()));
    expect(await rowOn(env.DB_SHARD_1, to)).not.toBeNull();
  });

  it("the Resend provider posts to /emails with the bearer key, against a server speaking Resend's API", async () => {
    const box = await openMailbox({ fallback: 200 });
    const mailer = resendMailer({ apiUrl: box.url, apiKey: "re_test_key", from: "Brokerage <no-reply@brokerage.test>" });
    await mailer.send(message("client@mail.test"));
    const [req] = await box.received();
    expect(req!.headers.authorization).toBe("Bearer re_test_key");
    expect(req!.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(req!.body)).toEqual({
      from: "Brokerage <no-reply@brokerage.test>",
      to: ["client@mail.test"],
      subject: "Sign please",
      text: message("x").text,
    });
    const failing = await openMailbox({ fallback: 422 });
    await expect(resendMailer({ apiUrl: failing.url, apiKey: "k", from: "f@x.test" }).send(message("c@mail.test"))).rejects.toBeInstanceOf(
      MailFailed,
    );
  });

  it("several messages go to Resend a few at a time; once it answers 429 the rest are not tried, each answered rate-limited", async () => {
    const ok = Array(PROVIDER_SIDE_BY_SIDE).fill(200);
    const box = await openMailbox({ script: [...ok, 200, 429], fallback: 200 });
    const resend = { ...env, EMAIL_PROVIDER: "resend", EMAIL_API_URL: box.url, EMAIL_API_KEY: "re_test_key" } as Env;
    const messages = Array.from({ length: PROVIDER_SIDE_BY_SIDE * 3 }, (_, i) => message(`c${i}@mail.test`));
    const answers = await sendMails(resend, createDb(env.DB_SHARD_0), messages);
    // The first slice all went; the second met the 429 (what went in it went); the third was not tried.
    expect(answers.slice(0, PROVIDER_SIDE_BY_SIDE)).toEqual(ok.map(() => null));
    const second = answers.slice(PROVIDER_SIDE_BY_SIDE, 2 * PROVIDER_SIDE_BY_SIDE);
    expect(second.filter((a) => a === null)).toHaveLength(PROVIDER_SIDE_BY_SIDE - 1);
    expect(second.filter((a) => a instanceof MailRateLimited)).toHaveLength(1);
    expect(answers.slice(2 * PROVIDER_SIDE_BY_SIDE).every((a) => a instanceof MailRateLimited)).toBe(true);
    expect(await box.count()).toBe(2 * PROVIDER_SIDE_BY_SIDE);
  });
});
