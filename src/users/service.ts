import { and, count, desc, eq, ne, or, sql } from "drizzle-orm";
import { organizations, users } from "../db/schema";
import {
  expectNoRow,
  expectVersion,
  expectVersionMatch,
  guard,
  type Statement,
  versioned,
  type VersionedTable,
  withRetries,
} from "../db/write";
import { decodeNewestFirstCursor, olderThan, paginate } from "../crm/pagination";
import { commit } from "../events/commit";
import { newEvent } from "../events/outbox";
import { diffAttributes } from "../lib/changes";
import { Conflict, InsufficientRole, NotFound } from "../lib/errors";
import { newId } from "../lib/ids";
import { idsOf } from "../lib/sql";
import { nowIso } from "../lib/time";
import { mailerFor } from "../mail/mailer";
import type { ServiceContext } from "../service-context";
import { followOnDirectory } from "../shards/placement";
import { invitationMail, inviteMember, newInvitation, pendingInvitations, renewInvitation } from "./invitations";
import { toUser, type UserRow } from "./mapping";
import type { CreateUser, UpdateUser, User } from "./schemas";

/**
 * Admits one invitation mail to an address, or throws 429 (`RateLimited`): handed in by the route (routes.ts), so the
 * bound holds per recipient whoever invites them, and checked before anything is written or mailed.
 */
export type AdmitMail = (email: string) => Promise<void>;

type Row = UserRow;

/** The shard's copy of a user is the one that versions its changes (db/members.ts); the directory's follows. */
const USERS: VersionedTable = { table: users, id: users.id, organizationId: users.organizationId, version: users.version };

const byId = (organizationId: string, id: string) => and(eq(users.organizationId, organizationId), eq(users.id, id));
const ownersBesides = (organizationId: string, id: string) =>
  sql`(SELECT COUNT(*) FROM ${users} WHERE ${users.organizationId} = ${organizationId} AND ${users.role} = 'owner' AND ${users.id} <> ${id})`;

/** The user as shown, with its status from the directory's invitations, marked with its version for the ETag. */
async function shown(ctx: ServiceContext, row: Row): Promise<User> {
  const invited = await pendingInvitations(ctx.directory, ctx.organizationId, [row.id]);
  return versioned(toUser(row, invited.get(row.id)), row.version);
}

/** The user's shard row, or 404 (another organization's id answers the same). */
async function findUser(ctx: ServiceContext, id: string): Promise<Row> {
  const row = await ctx.db.select().from(users).where(byId(ctx.organizationId, id)).get();
  if (!row) throw new NotFound("User");
  return row;
}

/** Which of `ids` are users of the organization (a zip rule of the lead routing names one). */
export async function existingUserIds(ctx: Pick<ServiceContext, "db" | "organizationId">, ids: string[]): Promise<Set<string>> {
  const rows = await ctx.db
    .select({ id: users.id })
    .from(users)
    .where(and(idsOf(users, ctx.organizationId, ids)));
  return new Set(rows.map((r) => r.id));
}

/** The ids of the users lead routing may assign a new lead to (`acceptsLeads`), in id order: round robin's ring. */
export async function leadRecipients(ctx: Pick<ServiceContext, "db" | "organizationId">): Promise<string[]> {
  const rows = await ctx.db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.organizationId, ctx.organizationId), eq(users.acceptsLeads, true)))
    .orderBy(users.id);
  return rows.map((r) => r.id);
}

/**
 * The users a spreadsheet may name as an assignee (an import's "Assigned To"), by id, e-mail or name in any case; a
 * name two users share names neither.
 */
export async function userResolver(ctx: Pick<ServiceContext, "db" | "organizationId">): Promise<(named: string) => string | null> {
  const rows = await ctx.db
    .select({ id: users.id, email: users.email, name: users.name })
    .from(users)
    .where(eq(users.organizationId, ctx.organizationId))
    .limit(10_000);
  const byKey = new Map<string, string | null>();
  const add = (key: string | null, id: string) => {
    if (!key) return;
    const k = key.trim().toLowerCase();
    byKey.set(k, byKey.has(k) && byKey.get(k) !== id ? null : id);
  };
  for (const r of rows) add(r.id, r.id), add(r.email, r.id), add(r.name, r.id);
  return (named) => byKey.get(named.trim().toLowerCase()) ?? null;
}

/** GET /v1/users/{id}. */
export async function getUser(ctx: ServiceContext, id: string): Promise<User> {
  const [row, invited] = await Promise.all([findUser(ctx, id), pendingInvitations(ctx.directory, ctx.organizationId, [id])]);
  return versioned(toUser(row, invited.get(id)), row.version);
}

/** GET /v1/users: newest first, keyset on (createdAt, id); the page's statuses from the directory. */
export async function listUsers(ctx: ServiceContext, { limit, cursor }: { limit: number; cursor?: string }) {
  const after = decodeNewestFirstCursor(cursor);
  const mine = eq(users.organizationId, ctx.organizationId);
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(users)
      .where(after ? and(mine, olderThan(users.createdAt, users.id, after)) : mine)
      .orderBy(desc(users.createdAt), desc(users.id))
      .limit(limit + 1),
    ctx.db.select({ n: count() }).from(users).where(mine),
  ]);
  const { page, pagination } = paginate(rows, limit, total?.n ?? 0, (r) => ({ at: r.createdAt, id: r.id }));
  const invited = await pendingInvitations(
    ctx.directory,
    ctx.organizationId,
    page.map((r) => r.id),
  );
  return { data: page.map((r) => toUser(r, invited.get(r.id))), pagination };
}

/**
 * POST /v1/users: the user and a one-time sign-in link mailed to them, valid 7 days. In this order, so that a failure
 * at any step is finished by the retry: the directory's row and invitation (a retry reuses the row and replaces the
 * invitation), the mail (a retry mails a new link; only the last one works), then the shard's copy with `user.created`
 * and the kept answer (with an Idempotency-Key a retry replays it). The shard copy makes the user complete: an e-mail
 * with one is a 409. Only an owner may make an owner.
 */
export async function createUser(ctx: ServiceContext, input: CreateUser, admitMail: AdmitMail): Promise<User> {
  const email = input.email.toLowerCase();
  // Whatever the case it was stored in (users_email_lower_idx): one address, one user.
  const sameEmail = and(eq(users.organizationId, ctx.organizationId), sql`lower(${users.email}) = ${email}`);
  return withRetries(async () => {
    const [[copy], [actor], [organization]] = await ctx.db.batch([
      ctx.db.select({ id: users.id }).from(users).where(sameEmail),
      ctx.db
        .select({ role: users.role })
        .from(users)
        .where(byId(ctx.organizationId, ctx.actor.userId ?? "")),
      organizationNames(ctx),
    ]);
    if (copy) throw new Conflict("A user of your organization has this e-mail address", "duplicate_email");
    if (input.role === "owner" && actor?.role !== "owner") throw new InsufficientRole("Only an owner may make another user an owner");
    await admitMail(email);
    const now = nowIso();
    const invitation = await newInvitation();
    const member: Row = {
      id: newId(),
      organizationId: ctx.organizationId,
      email,
      name: input.name,
      role: input.role,
      acceptsLeads: true,
      createdAt: now,
      updatedAt: now,
      version: 1,
    };
    const row = await inviteMember(ctx.directory, member, invitation);
    // Awaited: a link that was not mailed fails the request, and its retry mails a new one.
    await mailerFor(ctx.env, ctx.db).send(invitationMail(ctx.env, row, nameOf(organization), invitation.token, invitation.expiresAt));
    const user = versioned(toUser(row, invitation.expiresAt), row.version);
    await commit(
      ctx,
      [expectNoRow(ctx.db, users, or(eq(users.id, row.id), sameEmail)), ctx.db.insert(users).values(row)],
      [newEvent(ctx, "user.created", { object: user, previousAttributes: null, changes: null })],
      { answer: user },
    );
    return user;
  });
}

/** The organization's name as the invitation mail gives it. */
const organizationNames = (ctx: ServiceContext) =>
  ctx.db
    .select({ name: organizations.name, displayName: organizations.displayName })
    .from(organizations)
    .where(eq(organizations.id, ctx.organizationId));
const nameOf = (row: { name: string; displayName: string | null } | undefined) => row?.displayName ?? row?.name ?? "your organization";

/**
 * POST /v1/users/{id}/invitation: a new link, valid 7 days, mailed to a user who has not signed in yet (their earlier
 * link stops working); 409 user_active for one who has. A failed mail fails the request, whose retry mails another.
 */
export async function resendInvitation(ctx: ServiceContext, id: string, admitMail: AdmitMail): Promise<User> {
  const [row, [organization]] = await Promise.all([findUser(ctx, id), organizationNames(ctx)]);
  // Before the renewal: a refused resend leaves the link already mailed working.
  await admitMail(row.email);
  const invitation = await newInvitation();
  if (!(await renewInvitation(ctx.directory, ctx.organizationId, id, invitation)))
    throw new Conflict("This user has signed in already: invitations are for users who have not", "user_active");
  await mailerFor(ctx.env, ctx.db).send(invitationMail(ctx.env, row, nameOf(organization), invitation.token, invitation.expiresAt));
  return versioned(toUser(row, invitation.expiresAt), row.version);
}

/** What the directory's copy of a user carries of a change. */
const changedOf = (row: Row) => ({ name: row.name, role: row.role, acceptsLeads: row.acceptsLeads, updatedAt: row.updatedAt });

/**
 * PATCH /v1/users/{id}. Only an owner may make or unmake an owner, and the organization keeps at least one owner
 * (409 last_owner): both are guards of the batch, so two owners demoting each other at once leave one. The shard's
 * copy changes first with `user.updated`, then the directory's follows (its role is what authentication reads); a
 * change that changes nothing still brings the directory along, so a retry finishes an interrupted one.
 */
export async function updateUser(ctx: ServiceContext, id: string, input: UpdateUser): Promise<User> {
  return withRetries(async () => {
    const [[row], [actor], [owners]] = await ctx.db.batch([
      ctx.db.select().from(users).where(byId(ctx.organizationId, id)),
      ctx.db
        .select({ role: users.role })
        .from(users)
        .where(byId(ctx.organizationId, ctx.actor.userId ?? "")),
      ctx.db
        .select({ n: count() })
        .from(users)
        .where(and(eq(users.organizationId, ctx.organizationId), eq(users.role, "owner"), ne(users.id, id))),
    ]);
    if (!row) throw new NotFound("User");
    expectVersionMatch(ctx, row.version);
    const role = input.role ?? row.role;
    const touchesOwner = role !== row.role && (role === "owner" || row.role === "owner");
    if (touchesOwner && actor?.role !== "owner") throw new InsufficientRole("Only an owner may make or unmake an owner");
    const losesOwner = row.role === "owner" && role !== "owner";
    if (losesOwner && (owners?.n ?? 0) === 0) throw new Conflict("The organization must keep at least one owner", "last_owner");
    const next: Row = { ...row, name: input.name ?? row.name, role, acceptsLeads: input.acceptsLeads ?? row.acceptsLeads };
    const before = await shown(ctx, row);
    const { changes, previousAttributes } = diffAttributes(
      before,
      { ...before, name: next.name, role: next.role, acceptsLeads: next.acceptsLeads },
      ["updatedAt"],
    );
    if (changes.length === 0) {
      await followOnDirectory(ctx.directory, users, row.id, changedOf(row), row.version);
      return before;
    }
    const updated: Row = { ...next, updatedAt: nowIso(), version: row.version + 1 };
    const object = versioned(
      { ...before, name: updated.name, role: updated.role, acceptsLeads: updated.acceptsLeads, updatedAt: updated.updatedAt! },
      updated.version,
    );
    const guards: Statement[] = [
      expectVersion(ctx.db, USERS, ctx.organizationId, row),
      ...(touchesOwner
        ? [
            guard(
              ctx.db,
              sql`EXISTS (SELECT 1 FROM ${users} WHERE ${byId(ctx.organizationId, ctx.actor.userId ?? "")} AND ${users.role} = 'owner')`,
            ),
          ]
        : []),
      ...(losesOwner ? [guard(ctx.db, sql`${ownersBesides(ctx.organizationId, id)} > 0`)] : []),
    ];
    await commit(
      ctx,
      [
        ...guards,
        ctx.db
          .update(users)
          .set({ ...changedOf(updated), version: updated.version })
          .where(byId(ctx.organizationId, id)),
      ],
      [newEvent(ctx, "user.updated", { object, previousAttributes, changes })],
    );
    await followOnDirectory(ctx.directory, users, row.id, changedOf(updated), updated.version);
    return object;
  });
}
