import { and, eq } from "drizzle-orm";
import {
  bumpCounters,
  changeEvents,
  type ContactRecord,
  facetMoves,
  readContactForWrite,
  replaceContact,
  toContact,
} from "../contacts/service";
import type { Contact } from "../contacts/schemas";
import { contactRouting, pondMembers } from "../db/schema";
import { expectRow, type Statement, versioned, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { newEvent } from "../events/outbox";
import { Conflict, InsufficientPermission } from "../lib/errors";
import { organizationSettings } from "../organization/service";
import type { ServiceContext } from "../service-context";
import { routingColumns } from "./targets";

type RoutingRow = typeof contactRouting.$inferSelect;

export const routingOf = (ctx: Pick<ServiceContext, "db" | "organizationId">, contactId: string) =>
  ctx.db
    .select()
    .from(contactRouting)
    .where(and(eq(contactRouting.organizationId, ctx.organizationId), eq(contactRouting.contactId, contactId)))
    .get();

/** The routing row must still be at the version read: the compare-and-set every routing move makes. */
export const expectRouting = (ctx: Pick<ServiceContext, "db" | "organizationId">, row: RoutingRow): Statement =>
  expectRow(
    ctx.db,
    contactRouting,
    and(
      eq(contactRouting.organizationId, ctx.organizationId),
      eq(contactRouting.contactId, row.contactId),
      eq(contactRouting.version, row.version),
    ),
  );

const isMember = (ctx: ServiceContext, pondId: string, userId: string) =>
  ctx.db
    .select({ userId: pondMembers.userId })
    .from(pondMembers)
    .where(and(eq(pondMembers.organizationId, ctx.organizationId), eq(pondMembers.pondId, pondId), eq(pondMembers.userId, userId)))
    .get()
    .then((r) => r !== undefined);

/** May `userId` claim the lead as it waits: a member of its pond, or one of the users its first-to-claim offer went to. */
async function mayClaim(ctx: ServiceContext, row: RoutingRow, contact: ContactRecord, userId: string): Promise<boolean> {
  if (row.state === "offered") return (row.offeredTo ?? []).includes(userId);
  return contact.pondId !== null && isMember(ctx, contact.pondId, userId);
}

/**
 * POST /v1/contacts/{id}/claim: the caller takes a lead waiting in a pond of theirs or offered to them first-to-claim;
 * it is assigned to them and leaves the pond (contact.assigned, contact.claimed). The batch is guarded on the routing
 * row's version and the contact's: of concurrent claims exactly one wins, the others find it claimed on their retry (409
 * already_claimed). Speed to lead starts counting from the claim.
 */
export async function claimContact(ctx: ServiceContext, contactId: string): Promise<Contact> {
  const userId = ctx.actor.userId;
  if (!userId) throw new InsufficientPermission("A lead is claimed by a user: use a user's session or a key acting for one");
  return withRetries(async () => {
    const [{ before }, row, settings] = await Promise.all([
      readContactForWrite(ctx, contactId),
      routingOf(ctx, contactId),
      organizationSettings(ctx),
    ]);
    if (!row || (row.state !== "pond" && row.state !== "offered")) {
      throw row?.state === "claimed"
        ? new Conflict("This lead was claimed already", "already_claimed")
        : new Conflict("This lead waits in no pond and is offered to nobody: there is nothing to claim", "not_claimable");
    }
    // Someone assigned it by hand meanwhile (PUT /v1/contacts/{id}): it waits for nobody any more.
    if (before.assignedTo !== null) throw new Conflict("This lead was assigned meanwhile: there is nothing to claim", "not_claimable");
    if (!(await mayClaim(ctx, row, before, userId)))
      throw new InsufficientPermission(
        row.state === "offered" ? "This lead was not offered to you" : "Only a member of the lead's pond may claim it",
      );
    const now = new Date();
    const at = now.toISOString();
    const after: ContactRecord = { ...before, assignedTo: userId, pondId: null, updatedAt: at, version: before.version + 1 };
    const why = row.state === "pond" ? `claimed from pond ${before.pondId}` : "claimed first";
    const columns = routingColumns(
      { kind: "user", userId, reason: why, statements: [] },
      settings.leadRouting.speedToLead,
      row.trail,
      "claimed",
      at,
    );
    const claimed = newEvent(ctx, "contact.claimed", {
      object: toContact(after),
      previousAttributes: { assignedTo: before.assignedTo },
      changes: ["assignedTo"],
      claimedBy: userId,
      pondId: before.pondId,
    });
    const answer = versioned(toContact(after), after.version);
    await commit(
      ctx,
      [
        expectRouting(ctx, row),
        ...replaceContact(ctx, before, after),
        bumpCounters(ctx, 0),
        ...facetMoves(ctx, before, after),
        ctx.db
          .update(contactRouting)
          .set({ ...columns, state: "claimed", version: row.version + 1 })
          .where(and(eq(contactRouting.organizationId, ctx.organizationId), eq(contactRouting.contactId, contactId))),
      ],
      [...changeEvents(ctx, before, after), claimed],
      { answer },
    );
    return answer;
  });
}
