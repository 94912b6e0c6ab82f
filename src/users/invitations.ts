import { and, eq, gt, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { organizations, sessions, userInvitations, users } from "../db/schema";
import { guard, isGuardFailure, rowExists } from "../db/write";
import { appUrlOf, type Env, readConfig } from "../env";
import { newToken, sha256Hex } from "../lib/crypto";
import { newId } from "../lib/ids";
import { inJsonList } from "../lib/sql";
import { addSeconds, nowIso } from "../lib/time";
import type { MailMessage } from "../mail/mailer";
import { commitInDirectory, type DirectoryWork } from "../events/directory-outbox";
import { newEvent } from "../events/outbox";
import { toUser, type UserRow } from "./mapping";

/**
 * Invitations: a one-time sign-in link mailed to a new user, valid 7 days. The link's token is a
 * capability: only its SHA-256 is kept (in the directory, `user_invitations`), it is never logged, and it signs its
 * holder in once, through the e-mail-code sign-in of the invitation page (invite-routes.ts), which mints a session.
 */
export const INVITATION_TTL_SECONDS = 7 * 86_400;
/** The session a redeemed invitation mints: the same kind and lifetime as `npm run token`'s. */
export const SESSION_TTL_SECONDS = 30 * 86_400;

type Member = typeof users.$inferSelect;

/** A new invitation token and when it stops working. */
export async function newInvitation(now = new Date()): Promise<{ token: string; tokenHash: string; expiresAt: string }> {
  const token = newToken("inv");
  return { token, tokenHash: await sha256Hex(token), expiresAt: nowIso(addSeconds(now, INVITATION_TTL_SECONDS)) };
}

/**
 * The directory's half of inviting `member`, in one batch: the member's row unless the organization already has one
 * with this e-mail (a create that stopped before its shard copy: this one finishes it), and its invitation, which
 * replaces any earlier one (so only the link mailed last works). Answers the directory's row, whoever wrote it.
 */
export async function inviteMember(directory: Db, member: Member, invitation: { tokenHash: string; expiresAt: string }): Promise<Member> {
  const now = nowIso();
  const same = and(eq(users.organizationId, member.organizationId), eq(users.email, member.email));
  const [, , rows] = await directory.batch([
    directory
      .insert(users)
      .values(member)
      .onConflictDoNothing({ target: [users.organizationId, users.email] }),
    directory
      .insert(userInvitations)
      .select(
        sql`SELECT ${users.id}, ${users.organizationId}, ${invitation.tokenHash}, ${now}, ${invitation.expiresAt} FROM ${users} WHERE ${same}`,
      )
      .onConflictDoUpdate({
        target: userInvitations.userId,
        set: { tokenHash: invitation.tokenHash, createdAt: now, expiresAt: invitation.expiresAt },
      }),
    directory.select().from(users).where(same),
  ]);
  return rows[0]!;
}

/**
 * A new link for a user who is still invited: their invitation row takes the new token (the old link stops working).
 * False when they have none left, having signed in: an update, never an insert, so a resend racing the sign-in never
 * makes an active user invited again.
 */
export async function renewInvitation(
  directory: Db,
  organizationId: string,
  userId: string,
  invitation: { tokenHash: string; expiresAt: string },
): Promise<boolean> {
  const renewed = await directory
    .update(userInvitations)
    .set({ tokenHash: invitation.tokenHash, createdAt: nowIso(), expiresAt: invitation.expiresAt })
    .where(and(eq(userInvitations.organizationId, organizationId), eq(userInvitations.userId, userId)))
    .returning({ userId: userInvitations.userId });
  return renewed.length > 0;
}

/** When each of `userIds` (of one organization) was invited until, for those still invited. */
export async function pendingInvitations(directory: Db, organizationId: string, userIds: string[]): Promise<Map<string, string>> {
  if (userIds.length === 0) return new Map();
  const rows = await directory
    .select({ userId: userInvitations.userId, expiresAt: userInvitations.expiresAt })
    .from(userInvitations)
    .where(and(eq(userInvitations.organizationId, organizationId), inJsonList(userInvitations.userId, userIds)));
  return new Map(rows.map((r) => [r.userId, r.expiresAt]));
}

/** The mail that carries the link. Its body is the capability: the log provider encrypts it (MAIL_LOG_KEY). */
export function invitationMail(
  env: Env,
  to: { email: string; organizationId: string },
  organizationName: string,
  token: string,
  expiresAt: string,
): MailMessage {
  const link = `${appUrlOf(readConfig(env))}/invite/${token}`;
  return {
    to: to.email,
    organizationId: to.organizationId,
    subject: `You are invited to ${organizationName}`,
    text: `You have been invited to join ${organizationName}.\n\nOpen this link to sign in: ${link}\n\nIt works once, until ${expiresAt.slice(0, 16).replace("T", " ")} UTC. The page sends a 6-digit code to this address to check it is you. If you did not expect this invitation, ignore this message.`,
  };
}

/** A live invitation, as the invitation page shows it. */
export interface Invitation {
  userId: string;
  organizationId: string;
  email: string;
  organizationName: string;
  tokenHash: string;
  /** When the link stops working: the user's `invitationExpiresAt` until they sign in with it. */
  expiresAt: string;
  /** The directory's copy of the user, which `user.updated` shows once the link is spent. */
  user: UserRow;
}

const TOKEN = /^inv_[A-Za-z0-9_-]{43}$/;

/** The live invitation of a link's token, or null: unknown, used, expired and malformed links all answer the same. */
export async function findInvitation(directory: Db, token: string): Promise<Invitation | null> {
  if (!TOKEN.test(token)) return null;
  const tokenHash = await sha256Hex(token);
  const row = await directory
    .select({ user: users, name: organizations.name, displayName: organizations.displayName, expiresAt: userInvitations.expiresAt })
    .from(userInvitations)
    .innerJoin(users, eq(users.id, userInvitations.userId))
    .innerJoin(organizations, eq(organizations.id, userInvitations.organizationId))
    .where(and(eq(userInvitations.tokenHash, tokenHash), gt(userInvitations.expiresAt, nowIso())))
    .get();
  return row
    ? {
        userId: row.user.id,
        organizationId: row.user.organizationId,
        email: row.user.email,
        organizationName: row.displayName ?? row.name,
        tokenHash,
        expiresAt: row.expiresAt,
        user: row.user,
      }
    : null;
}

/**
 * Spends the invitation and mints its user a session, in one batch that holds only while the invitation is still live:
 * of two redemptions at once, one gets the session and the other null (as for a used link). The session token is in
 * this answer only; the session keeps its SHA-256. The user turning active is a `user.updated` (status), staged in
 * that batch and relayed to the organization's shard outbox (events/directory-outbox.ts).
 */
export async function redeemInvitation(
  work: Omit<DirectoryWork, "shard">,
  invitation: Invitation,
): Promise<{ token: string; expiresAt: string } | null> {
  const { directory } = work;
  const now = new Date();
  const token = newToken("sess");
  const expiresAt = nowIso(addSeconds(now, SESSION_TTL_SECONDS));
  const live = and(eq(userInvitations.tokenHash, invitation.tokenHash), gt(userInvitations.expiresAt, nowIso(now)));
  try {
    const activated = newEvent(
      { organizationId: invitation.organizationId, actor: { type: "user", userId: invitation.userId } },
      "user.updated",
      {
        object: toUser(invitation.user, undefined),
        previousAttributes: { status: "invited", invitationExpiresAt: invitation.expiresAt },
        changes: ["status", "invitationExpiresAt"],
      },
    );
    await commitInDirectory(work, [
      guard(directory, rowExists(userInvitations, live)),
      directory.delete(userInvitations).where(eq(userInvitations.tokenHash, invitation.tokenHash)),
      directory.insert(sessions).values({
        id: newId(),
        tokenHash: await sha256Hex(token),
        userId: invitation.userId,
        organizationId: invitation.organizationId,
        createdAt: nowIso(now),
        expiresAt,
      }),
      { event: activated },
    ]);
  } catch (err) {
    if (isGuardFailure(err)) return null;
    throw err;
  }
  return { token, expiresAt };
}
