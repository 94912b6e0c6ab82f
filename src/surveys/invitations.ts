import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { contacts, organizations, type surveys, trashEntries } from "../db/schema";
import { type Env, readConfig } from "../env";
import { mailerFor } from "../mail/mailer";
import { newToken, sha256Hex } from "../lib/crypto";
import { NotConfigured } from "../lib/errors";
import { encryptText } from "../lib/secret-box";

/**
 * A survey's link: its raw token (in the creating answer and the invitation mail only), encrypted until the cron has
 * mailed it (db/surveys.ts), and the invitation mail itself.
 */
export const TOKEN_PURPOSE = "survey-token";

export const surveyUrl = (env: Env, token: string) => `${readConfig(env).APP_URL.replace(/\/$/, "")}/survey/${token}`;

export async function encryptToken(env: Env, surveyId: string, token: string) {
  const key = readConfig(env).SURVEY_TOKEN_KEY;
  if (!key) throw new NotConfigured("SURVEY_TOKEN_KEY (needed to mail surveys later; use channel LINK without it)");
  return encryptText(key, TOKEN_PURPOSE, surveyId, token);
}

export async function mintSurveyToken() {
  const token = newToken("srv");
  return { token, hash: await sha256Hex(token) };
}

/** The stored form of a raw token (its SHA-256), also its key in the directory; null for what no survey token looks like. */
export const surveyTokenKey = async (token: string) => (/^srv_[A-Za-z0-9_-]{43}$/.test(token) ? sha256Hex(token) : null);

/** Whether a deleted contact waits in the trash (restorable), rather than being gone for good. */
export const inTrash = async (db: Db, contactId: string) =>
  (await db
    .select({ id: trashEntries.recordId })
    .from(trashEntries)
    .where(and(eq(trashEntries.recordId, contactId), eq(trashEntries.state, "trashed")))
    .get()) !== undefined;

/** The survey's contact was deleted: no one to mail. */
export class RecipientGone extends Error {}

/** The survey's contact has another address than the one it was scheduled for: it is not mailed there. */
export class RecipientChanged extends Error {
  constructor() {
    super("the contact's address is not the one the survey was scheduled for");
  }
}

/**
 * Mails the survey's link to its recipient. The raw token exists only in this message and the creating answer. Only
 * to the address it was scheduled for (`recipientEmailKey`): a contact re-addressed or merged since is another
 * recipient, whoever changed it, and the survey is not theirs to answer.
 */
export async function mailInvitation(env: Env, db: Db, survey: typeof surveys.$inferSelect, token: string): Promise<void> {
  const row = await db
    .select({ email: contacts.email, emailKey: contacts.emailKey, firstName: contacts.firstName, brokerage: organizations.name })
    .from(contacts)
    .innerJoin(organizations, eq(organizations.id, contacts.organizationId))
    .where(and(eq(contacts.organizationId, survey.organizationId), eq(contacts.id, survey.recipientPersonId)))
    .get();
  if (!row) throw new RecipientGone();
  if (survey.recipientEmailKey !== null && survey.recipientEmailKey !== row.emailKey) throw new RecipientChanged();
  const until = survey.expiresAt.slice(0, 10);
  await mailerFor(env, db).send({
    organizationId: survey.organizationId,
    to: row.email,
    subject: `How did we do? A short survey from ${row.brokerage}`,
    text: `Hello ${row.firstName},\n\n${row.brokerage} would like to hear about your experience. The survey takes a minute:\n${surveyUrl(env, token)}\n\nThe link is personal and works until ${until}.`,
  });
}
