import { and, count, desc, eq, isNull } from "drizzle-orm";
import { toContact } from "../contacts/service";
import { decodeNewestFirstCursor, olderThan, paginate } from "../crm/pagination";
import { contactRouting, contacts, pondMembers, ponds } from "../db/schema";
import {
  expectNoRow,
  expectVersion,
  expectVersionMatch,
  StaleWrite,
  type Statement,
  type VersionedTable,
  versioned,
  withRetries,
} from "../db/write";
import { commit } from "../events/commit";
import { Conflict, type FieldIssue, NotFound, Validation } from "../lib/errors";
import { newId } from "../lib/ids";
import { inJsonList } from "../lib/sql";
import { organizationSettings } from "../organization/service";
import type { ServiceContext } from "../service-context";
import { existingUserIds } from "../users/service";
import type { ContactRouting, Pond, PondCreate, PondUpdate } from "./schemas";
import { readKnown, readTurn, decideByRules, type LeadFacts, targetsOf, type Decision, type Turn } from "./targets";

export { claimContact } from "./claims";
export { reassignSlowLeads, routeExpiredOffers } from "./timeouts";
export {
  type Decision,
  type LeadFacts,
  newRoutingRow,
  placementOf,
  routedTarget,
  type Turn,
} from "./targets";

/**
 * Ponds (issue 46): shared pools of unassigned leads. A lead routed to a pond waits there (contacts.pond_id, no
 * assignee) until one of the pond's members claims it (claims.ts).
 */

const PONDS: VersionedTable = { table: ponds, id: ponds.id, organizationId: ponds.organizationId, version: ponds.version };
type PondRow = typeof ponds.$inferSelect;

const byId = (ctx: ServiceContext, id: string) => and(eq(ponds.organizationId, ctx.organizationId), eq(ponds.id, id));

/** Mode rules' decision for a new lead: its targets' users and ponds and round robin's turn read side by side. */
export async function routeByRules(
  ctx: ServiceContext,
  routing: Parameters<typeof decideByRules>[1],
  lead: LeadFacts,
  turn?: Turn,
): Promise<Decision> {
  const [known, read] = await Promise.all([readKnown(ctx, targetsOf(routing)), turn ?? readTurn(ctx)]);
  return decideByRules(ctx, routing, lead, known, read);
}

/** Each listed member that is no user of the organization, as the 422 lists it. */
async function checkMembers(ctx: ServiceContext, members: string[] | undefined): Promise<void> {
  if (!members?.length) return;
  const known = await existingUserIds(ctx, members);
  const issues: FieldIssue[] = members.flatMap((id, i) =>
    known.has(id)
      ? []
      : [{ field: `members.${i}`, path: ["members", i], code: "invalid_reference", message: "No user of your organization has this id" }],
  );
  if (issues.length) throw new Validation(issues);
}

/** The ponds' members and waiting leads, for a page of them, in one round trip. */
async function shown(ctx: ServiceContext, rows: PondRow[]): Promise<Pond[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const [members, counts] = await ctx.db.batch([
    ctx.db
      .select({ pondId: pondMembers.pondId, userId: pondMembers.userId })
      .from(pondMembers)
      .where(and(eq(pondMembers.organizationId, ctx.organizationId), inJsonList(pondMembers.pondId, ids)))
      .orderBy(pondMembers.userId),
    ctx.db
      .select({ pondId: contacts.pondId, n: count() })
      .from(contacts)
      .where(and(eq(contacts.organizationId, ctx.organizationId), inJsonList(contacts.pondId, ids), isNull(contacts.assignedTo)))
      .groupBy(contacts.pondId),
  ]);
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    members: members.filter((m) => m.pondId === r.id).map((m) => m.userId),
    contactCount: counts.find((c) => c.pondId === r.id)?.n ?? 0,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  }));
}

async function findPond(ctx: ServiceContext, id: string): Promise<PondRow> {
  const row = await ctx.db.select().from(ponds).where(byId(ctx, id)).get();
  if (!row) throw new NotFound("Pond");
  return row;
}

const memberRows = (ctx: ServiceContext, pondId: string, members: string[]) =>
  members.length
    ? [ctx.db.insert(pondMembers).values(members.map((userId) => ({ pondId, userId, organizationId: ctx.organizationId })))]
    : [];

export async function createPond(ctx: ServiceContext, input: PondCreate): Promise<Pond> {
  await checkMembers(ctx, input.members);
  const at = new Date().toISOString();
  const row: PondRow = { id: newId(), organizationId: ctx.organizationId, name: input.name, createdAt: at, updatedAt: at, version: 1 };
  await commit(ctx, [ctx.db.insert(ponds).values(row), ...memberRows(ctx, row.id, input.members)]);
  return versioned({ id: row.id, name: row.name, members: [...input.members].sort(), contactCount: 0, createdAt: at, updatedAt: at }, 1);
}

/** A pond as answered, marked with its version for the ETag (If-Match on PATCH and DELETE compares it). */
export async function getPond(ctx: ServiceContext, id: string): Promise<Pond> {
  const row = await findPond(ctx, id);
  return versioned((await shown(ctx, [row]))[0]!, row.version);
}

/** GET /v1/ponds: newest first, keyset-paginated, with the total. */
export async function listPonds(ctx: ServiceContext, q: { limit: number; cursor?: string }) {
  const after = decodeNewestFirstCursor(q.cursor);
  const scope = eq(ponds.organizationId, ctx.organizationId);
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(ponds)
      .where(after ? and(scope, olderThan(ponds.createdAt, ponds.id, after)) : scope)
      .orderBy(desc(ponds.createdAt), desc(ponds.id))
      .limit(q.limit + 1),
    ctx.db.select({ n: count() }).from(ponds).where(scope),
  ]);
  const { page, pagination } = paginate(rows, q.limit, total?.n ?? 0, (r) => ({ at: r.createdAt, id: r.id }));
  return { data: await shown(ctx, page), pagination };
}

/** PATCH /v1/ponds/{id}: the name, or the members replaced whole; compare-and-set on the pond's version. */
export async function updatePond(ctx: ServiceContext, id: string, input: PondUpdate): Promise<Pond> {
  await checkMembers(ctx, input.members);
  return withRetries(async () => {
    const before = await findPond(ctx, id);
    expectVersionMatch(ctx, before.version);
    const at = new Date().toISOString();
    const statements: Statement[] = [
      expectVersion(ctx.db, PONDS, ctx.organizationId, before),
      ctx.db
        .update(ponds)
        .set({ name: input.name ?? before.name, updatedAt: at, version: before.version + 1 })
        .where(byId(ctx, id)),
    ];
    if (input.members) {
      statements.push(
        ctx.db.delete(pondMembers).where(and(eq(pondMembers.organizationId, ctx.organizationId), eq(pondMembers.pondId, id))),
        ...memberRows(ctx, id, input.members),
      );
    }
    await commit(ctx, statements);
    return getPond(ctx, id);
  });
}

/**
 * DELETE /v1/ponds/{id}: refused (409 pond_in_use) while leads wait in it (guarded in the batch: a lead routed there
 * meanwhile fails it) or the lead routing names it; a pond the routing loses later is skipped by intake.
 */
export async function deletePond(ctx: ServiceContext, id: string): Promise<void> {
  // Leads waiting in it: a lead assigned by hand since left it (listPondContacts).
  const waiting = and(eq(contacts.organizationId, ctx.organizationId), eq(contacts.pondId, id), isNull(contacts.assignedTo));
  await withRetries(async () => {
    const [before, settings] = await Promise.all([findPond(ctx, id), organizationSettings(ctx)]);
    if (JSON.stringify(settings.leadRouting).includes(`"pondId":${JSON.stringify(id)}`))
      throw new Conflict("The lead routing (settings.leadRouting) sends leads to this pond; change it first", "pond_in_use");
    expectVersionMatch(ctx, before.version);
    try {
      await commit(ctx, [
        expectVersion(ctx.db, PONDS, ctx.organizationId, before),
        expectNoRow(ctx.db, contacts, waiting),
        ctx.db.delete(pondMembers).where(and(eq(pondMembers.organizationId, ctx.organizationId), eq(pondMembers.pondId, id))),
        ctx.db.delete(ponds).where(byId(ctx, id)),
      ]);
    } catch (err) {
      // A lead waiting is a refusal; a pond changed or deleted meanwhile is read again (404 once it is gone).
      if (err instanceof StaleWrite && (await ctx.db.select({ id: contacts.id }).from(contacts).where(waiting).get()))
        throw new Conflict("Leads wait in this pond; let them be claimed or reassign them first", "pond_in_use");
      throw err;
    }
  });
}

/** GET /v1/ponds/{id}/contacts: the leads waiting in the pond, unassigned, newest first, with the total. */
export async function listPondContacts(ctx: ServiceContext, id: string, q: { limit: number; cursor?: string }) {
  await findPond(ctx, id);
  const after = decodeNewestFirstCursor(q.cursor);
  // A lead someone assigned by hand while it waited is no longer the pond's to offer.
  const scope = and(eq(contacts.organizationId, ctx.organizationId), eq(contacts.pondId, id), isNull(contacts.assignedTo));
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(contacts)
      .where(after ? and(scope, olderThan(contacts.createdAt, contacts.id, after)) : scope)
      .orderBy(desc(contacts.createdAt), desc(contacts.id))
      .limit(q.limit + 1),
    ctx.db.select({ n: count() }).from(contacts).where(scope),
  ]);
  const { page, pagination } = paginate(rows, q.limit, total?.n ?? 0, (r) => ({ at: r.createdAt, id: r.id }));
  return { data: page.map(toContact), pagination };
}

/** GET /v1/contacts/{id}/routing: where the lead went and why, step by step (404 for a contact that is none of ours). */
export async function getContactRouting(ctx: ServiceContext, contactId: string): Promise<ContactRouting> {
  const [[contact], [row]] = await ctx.db.batch([
    ctx.db
      .select({ id: contacts.id, pondId: contacts.pondId })
      .from(contacts)
      .where(and(eq(contacts.organizationId, ctx.organizationId), eq(contacts.id, contactId))),
    ctx.db
      .select()
      .from(contactRouting)
      .where(and(eq(contactRouting.organizationId, ctx.organizationId), eq(contactRouting.contactId, contactId))),
  ]);
  if (!contact) throw new NotFound("Contact");
  return {
    contactId,
    state: row?.state ?? "assigned",
    pondId: contact.pondId,
    offeredTo: row?.offeredTo ?? null,
    offerExpiresAt: row?.offerExpiresAt ?? null,
    speedDueAt: row?.speedDueAt ?? null,
    trail: row?.trail ?? [],
  };
}
