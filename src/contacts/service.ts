import { and, eq, ne } from "drizzle-orm";
import { contactActivities, contactCommunications, contacts, contactTags } from "../db/schema";
import { checkCustomFields, customFieldDeleted, withCustomFields } from "../crm/custom-fields";
import { expectNoRow, expectVersion, type Statement, StaleWrite, versioned, withRetries } from "../db/write";
import { commit, type CommitOptions } from "../events/commit";
import type { DomainEvent } from "../events/event";
import { newEvent } from "../events/outbox";
import { Conflict, NotFound, Validation } from "../lib/errors";
import { regionOf } from "../lib/phone";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { facetMoves } from "./facets";
import { archiveRows, readTrashed, restoreFrame, restoreRows, trashEntry } from "../crm/trash";
import { loadIncludes } from "./includes";
import { type ContactRecord, toContact } from "./mapping";
import { type Contact, type ContactCreate, type ContactUpdate, type Include, MAX_TAGS } from "./schemas";
import {
  applyInput,
  assertAssignee,
  blankContact,
  bumpCounters,
  changeEvents,
  CONTACTS,
  createdEvents,
  NO_ACTIVITY,
  readContactForWrite,
  replaceContact,
  tagStatements,
  uniqueTags,
  writableInput,
} from "./writes";

export { contactExportWalk, contactMatchSql, contactTotals, contactWhere, listContacts, resolvedAt, type ContactPage } from "./list";
export { listTags } from "./tags";
// The contact write kit, for the domains that write contacts in batches of their own (intake/, merge/,
// communications/, erasure/): the same record rules, guards, tag, facet and counter statements as a contact's own writes.
export {
  applyInput,
  blankContact,
  bumpCounters,
  changeEvents,
  CONTACTS,
  createdEvents,
  NO_ACTIVITY,
  readContactForWrite,
  readForWrite,
  replaceContact,
  type TagChange,
  touchContact,
  tagStatements,
  uniqueTags,
  updateContactStatement,
} from "./writes";
export { facetMoves, facetMovesOfMany } from "./facets";
export type { ActivityFigures } from "./lead-score";
export { type ContactRecord, toContact } from "./mapping";
export { toActivity } from "./includes";
export { contactsErasable, nameIsShared, personOf } from "./erasure";
export { writeReads } from "./preload";

/** A restore (or a second merge) of a contact that was merged into another: its records live on there (merge/). */
export const mergedConflict = (id: string, mergedInto: string) =>
  new Conflict(`Contact ${id} was merged into contact ${mergedInto}; its records are there`, "merged_contact", [
    { field: "mergedInto", path: ["mergedInto"], code: "merged_contact", message: mergedInto },
  ]);

const byId = (ctx: ServiceContext, id: string) => and(eq(contacts.id, id), eq(contacts.organizationId, ctx.organizationId));

/** The contact of the caller's organization, or 404 exactly as for an id that exists nowhere. */
export async function findContact(ctx: ServiceContext, id: string): Promise<ContactRecord> {
  const row = await ctx.db.select().from(contacts).where(byId(ctx, id)).get();
  if (!row) throw new NotFound("Contact");
  return row;
}

async function assertEmailFree(ctx: ServiceContext, emailKey: string, exceptId?: string): Promise<void> {
  const clash = await ctx.db
    .select({ id: contacts.id })
    .from(contacts)
    .where(
      and(
        eq(contacts.organizationId, ctx.organizationId),
        eq(contacts.emailKey, emailKey),
        exceptId ? ne(contacts.id, exceptId) : undefined,
      ),
    )
    .get();
  if (clash) throw emailConflict();
}

const emailConflict = () => new Conflict("A contact with this e-mail already exists in your organization", "duplicate_email");

/** `commit` for contacts: a unique-index race on the e-mail that the pre-check missed is still a 409, not a 500. */
async function commitContact(ctx: ServiceContext, statements: Statement[], events: DomainEvent[], options?: CommitOptions): Promise<void> {
  try {
    await commit(ctx, statements, events, options);
  } catch (err) {
    if (String(err).includes("contacts_org_email_unique") || String(err).includes("contacts.email_key")) throw emailConflict();
    throw err;
  }
}

/** The contact as the API shows it, marked with its version for the ETag. */
const shown = (record: ContactRecord): Contact => versioned(toContact(record), record.version);

export async function getContact(ctx: ServiceContext, id: string, include: Include[] = []): Promise<Contact> {
  const contact = shown(await findContact(ctx, id));
  await loadIncludes(ctx, [contact], include);
  return contact;
}

export async function createContact(ctx: ServiceContext, raw: ContactCreate): Promise<Contact> {
  const input = writableInput(raw);
  const now = new Date();
  const at = now.toISOString();
  const [, , custom] = await Promise.all([
    assertEmailFree(ctx, input.email.toLowerCase()),
    assertAssignee(ctx, input.assignedTo),
    checkCustomFields(ctx, "contact", input.customFields),
  ]);
  const blank = blankContact(ctx, { firstName: input.firstName, lastName: input.lastName, email: input.email }, at);
  const record = withCustomFields(applyInput(blank, input, NO_ACTIVITY, now, regionOf(ctx)), custom);
  const events = createdEvents(ctx, record);
  const { leadScoreRank: _rank, ...row } = record;
  const answer = shown(record);
  try {
    await commitContact(
      ctx,
      [
        ...(custom?.guard ?? []),
        ctx.db.insert(contacts).values(row),
        ...tagStatements(ctx, [{ contactId: record.id, before: [], after: record.tags }], at),
        bumpCounters(ctx, 1),
        ...facetMoves(ctx, null, record),
      ],
      events,
      { answer },
    );
  } catch (err) {
    // The only guard of a create: a custom field it sets was deleted since its definitions were read.
    if (err instanceof StaleWrite) throw customFieldDeleted("contact");
    throw err;
  }
  return answer;
}

/**
 * PUT /v1/contacts/{id}. Only the fields the request names change: on a lost race the change is applied again to the
 * contact as it now is, so concurrent updates of different fields all land. The contact was read with the
 * authentication, so the guarded batch (with the answer's idempotency record) is the request's only other round
 * trip; its events are confirmed sent by the consumer. A retry, a new assignee or a new e-mail read once more each.
 */
export async function updateContact(ctx: ServiceContext, id: string, raw: ContactUpdate): Promise<Contact> {
  const input = writableInput(raw);
  await assertAssignee(ctx, input.assignedTo);
  return withRetries(async () => {
    const { before, figures } = await readContactForWrite(ctx, id);
    const now = new Date();
    const [, custom] = await Promise.all([
      input.email !== undefined && input.email.toLowerCase() !== before.emailKey
        ? assertEmailFree(ctx, input.email.toLowerCase(), id)
        : undefined,
      checkCustomFields(ctx, "contact", input.customFields),
    ]);
    const after = {
      ...withCustomFields(applyInput(before, input, figures, now, regionOf(ctx)), custom),
      updatedAt: now.toISOString(),
      version: before.version + 1,
    };
    const events = changeEvents(ctx, before, after);
    // Switching the computed score on or off changes no public field (so no event) but must still be stored.
    if (events.length === 0 && after.leadScoreAuto === before.leadScoreAuto) return shown(before);
    const tagChange = { contactId: id, before: before.tags, after: after.tags };
    const answer = shown(after);
    await commitContact(
      ctx,
      [
        ...(custom?.guard ?? []),
        ...replaceContact(ctx, before, after),
        ...tagStatements(ctx, [tagChange], after.updatedAt),
        bumpCounters(ctx, 0),
        ...facetMoves(ctx, before, after),
      ],
      events,
      { answer, markSent: false },
    );
    return answer;
  });
}

/**
 * DELETE /v1/contacts/{id}: the contact goes to the trash with its activities and communications (its tags leave the
 * tag counts).
 * Guarded on the version read, so of concurrent deletes exactly one answers 200, moves the counters and emits
 * contact.deleted; the others find it gone (404). A child write racing the delete is guarded on the same version, so
 * nothing is left behind outside the trash.
 */
export async function deleteContact(ctx: ServiceContext, id: string): Promise<void> {
  await withRetries(async () => {
    const { before } = await readContactForWrite(ctx, id);
    const event = newEvent(ctx, "contact.deleted", { object: { id }, previousAttributes: null, changes: null });
    const org = ctx.organizationId;
    await commit(
      ctx,
      [
        expectVersion(ctx.db, CONTACTS, org, before),
        ...tagStatements(ctx, [{ contactId: id, before: before.tags, after: [] }], new Date().toISOString()),
        ctx.db.delete(contactTags).where(and(eq(contactTags.contactId, id), eq(contactTags.organizationId, org))),
        ...archiveRows(ctx, id, contactActivities, and(eq(contactActivities.contactId, id), eq(contactActivities.organizationId, org))),
        ...archiveRows(
          ctx,
          id,
          contactCommunications,
          and(eq(contactCommunications.contactId, id), eq(contactCommunications.organizationId, org)),
        ),
        ...archiveRows(ctx, id, contacts, byId(ctx, id)),
        trashEntry(ctx, "contact", id, `${before.firstName} ${before.lastName}`),
        bumpCounters(ctx, -1),
        ...facetMoves(ctx, before, null),
      ],
      [event],
    );
  });
}

/**
 * POST /v1/contacts/{id}/restore: the contact back from the trash as it was, with its activities, communications and tags; emits
 * contact.restored. Of concurrent restores one answers 200; 409 duplicate_email when another contact took its
 * address meanwhile; 409 merged_contact for a contact merged into another (its records live on there).
 */
export async function restoreContact(ctx: ServiceContext, id: string): Promise<Contact> {
  return withRetries(async () => {
    const { entry, record } = await readTrashed<ContactRecord>(ctx, "contact", id, contacts, "Contact");
    if (entry.mergedInto) throw mergedConflict(id, entry.mergedInto);
    await assertEmailFree(ctx, record.emailKey);
    const restored = { ...record, leadScoreRank: record.leadScore ?? -1 };
    const frame = restoreFrame(ctx, "contact", id);
    await commitContact(
      ctx,
      [
        frame.guard,
        restoreRows(ctx.db, id, contacts),
        restoreRows(ctx.db, id, contactActivities),
        restoreRows(ctx.db, id, contactCommunications),
        ...tagStatements(ctx, [{ contactId: id, before: [], after: restored.tags }], new Date().toISOString()),
        ...frame.clear,
        bumpCounters(ctx, 1),
        ...facetMoves(ctx, null, restored),
      ],
      [newEvent(ctx, "contact.restored", { object: toContact(restored), previousAttributes: null, changes: null })],
    );
    return shown(restored);
  });
}

/** POST /v1/contacts/{id}/tags: adds tags (keeping the ones it has); emits contact.tagged with the new ones. */
export async function addTags(ctx: ServiceContext, id: string, add: string[]): Promise<Contact> {
  return withRetries(async () => {
    const { before } = await readContactForWrite(ctx, id);
    const merged = uniqueTags([...before.tags, ...add]);
    const added = merged.filter((t) => !before.tags.includes(t));
    if (added.length === 0) return shown(before);
    if (merged.length > MAX_TAGS) {
      throw new Validation([
        {
          field: "tags",
          path: ["tags"],
          code: "too_big",
          message: `A contact carries at most ${MAX_TAGS} tags; this one has ${before.tags.length}, and ${added.length} would be added`,
        },
      ]);
    }
    const after: ContactRecord = { ...before, tags: merged, updatedAt: new Date().toISOString(), version: before.version + 1 };
    // Tags are not a lead-score input, so an automatic score stays as it is.
    const object = toContact(after);
    const event = newEvent(ctx, "contact.tagged", { object, previousAttributes: { tags: before.tags }, changes: ["tags"], tags: added });
    const tagChange = { contactId: id, before: before.tags, after: merged };
    await commitContact(
      ctx,
      [
        ...replaceContact(ctx, before, after),
        ...tagStatements(ctx, [tagChange], after.updatedAt),
        bumpCounters(ctx, 0),
        ...facetMoves(ctx, before, after),
      ],
      [event],
    );
    return shown(after);
  });
}

/** "Ada Lovelace King" → first "Ada", last "Lovelace King"; one word is a first name with an empty last name. */
function splitName(name: string) {
  const [first, ...rest] = name.trim().split(/\s+/);
  return { firstName: first!.slice(0, 100), lastName: rest.join(" ").slice(0, 100) };
}

/**
 * For the domains that bring people in (referrals): the contact of `email` in the organization, or the statements that make it (with its guard: no contact with this
 * e-mail may appear meanwhile; when one does the batch fails and the caller re-reads and links it instead).
 */
export async function contactByEmail(
  ctx: ServiceContext,
  person: { name: string; email: string; type: string; source: string; assignedTo: string | null; notes: string | null },
): Promise<{ id: string; statements: Statement[]; events: DomainEvent[] }> {
  const emailKey = person.email.toLowerCase();
  const byEmail = and(eq(contacts.organizationId, ctx.organizationId), eq(contacts.emailKey, emailKey));
  const found = await ctx.db.select({ id: contacts.id }).from(contacts).where(byEmail).get();
  if (found) return { id: found.id, statements: [], events: [] };
  const at = nowIso();
  const record: ContactRecord = {
    ...blankContact(ctx, { ...splitName(person.name), email: person.email }, at),
    type: person.type,
    source: person.source,
    notes: person.notes,
    assignedTo: person.assignedTo,
  };
  const events = createdEvents(ctx, record);
  const { leadScoreRank: _rank, ...row } = record;
  return {
    id: record.id,
    statements: [
      expectNoRow(ctx.db, contacts, byEmail),
      ctx.db.insert(contacts).values(row),
      bumpCounters(ctx, 1),
      ...facetMoves(ctx, null, record),
    ],
    events,
  };
}
