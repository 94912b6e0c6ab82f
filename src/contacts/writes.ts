import { and, eq, sql } from "drizzle-orm";
import { atVersion, expectVersion, type Statement, type VersionedTable } from "../db/write";
import { recordWrites } from "../crm/record-writes";
import { contacts, contactTags, tags, users } from "../db/schema";
import { Validation } from "../lib/errors";
import { phoneKey, regionOf } from "../lib/phone";
import { newRecordId } from "../lib/ids";
import { inJsonList } from "../lib/sql";
import { newEvent } from "../events/outbox";
import type { DomainEvent } from "../events/event";
import type { ServiceContext } from "../service-context";
import { type ActivityFigures, calculateLeadScore, NO_ACTIVITY } from "./lead-score";
import { facetMoves } from "./facets";
import { type ContactRecord, toContact } from "./mapping";
import { contactWriteReads, type FigureRow, writeReads } from "./preload";
import { type ContactUpdate, READ_ONLY_FIELDS } from "./schemas";

const PALETTE = ["#2563eb", "#16a34a", "#dc2626", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563", "#65a30d", "#ea580c"];

/** A tag's color: stable for its name, so every organization sees "hot" in the same color. */
export function tagColor(name: string): string {
  let h = 0;
  for (const ch of name.toLowerCase()) h = (h * 31 + ch.codePointAt(0)!) >>> 0;
  return PALETTE[h % PALETTE.length]!;
}

export const uniqueTags = (list: string[]) => [...new Set(list.map((t) => t.trim()).filter(Boolean))];

/** A contact as every resource's writes see it (crm/record-writes.ts). */
const contactWrites = recordWrites({
  resource: "contacts",
  readOnly: READ_ONLY_FIELDS,
  updated: "contact.updated",
  shown: toContact,
  unchanged: ["updatedAt"],
});

/** The contacts' count and list version, in the same batch as every contact write; the input a write takes. */
export const { bumpCounters, writableInput } = contactWrites;

/** One contact's tags before and after a write. */
export interface TagChange {
  contactId: string;
  before: string[];
  after: string[];
}

/**
 * The contact_tags rows and tag counts for the tag changes of one batch, in at most four statements however many
 * contacts it writes (lists travel as one JSON parameter: D1 binds at most 100 values). Counts move by exactly the
 * rows added and removed; that holds because each change was computed from the contact row its batch guards
 * (db/write.ts). A tag nobody carries any more leaves the list.
 */
export function tagStatements(ctx: ServiceContext, changes: TagChange[], now: string): Statement[] {
  const org = ctx.organizationId;
  const removed: [string, string][] = [];
  const added: [string, string][] = [];
  const delta = new Map<string, number>();
  for (const { contactId, before, after } of changes) {
    for (const t of before) if (!after.includes(t)) removed.push([contactId, t]), delta.set(t, (delta.get(t) ?? 0) - 1);
    for (const t of after) if (!before.includes(t)) added.push([contactId, t]), delta.set(t, (delta.get(t) ?? 0) + 1);
  }
  const out: Statement[] = [];
  if (removed.length) {
    out.push(
      ctx.db
        .delete(contactTags)
        .where(
          and(
            eq(contactTags.organizationId, org),
            sql`(${contactTags.contactId}, ${contactTags.tag}) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(${JSON.stringify(removed)}))`,
          ),
        ),
    );
  }
  if (added.length) {
    // "WHERE true" keeps SQLite from reading ON CONFLICT as a join constraint of the SELECT.
    out.push(
      ctx.db
        .insert(contactTags)
        .select(
          sql`SELECT json_extract(value, '$[0]'), ${org}, json_extract(value, '$[1]') FROM json_each(${JSON.stringify(added)}) WHERE true`,
        )
        .onConflictDoNothing(),
    );
  }
  const moved = [...delta].filter(([, d]) => d !== 0).map(([name, d]) => [name, tagColor(name), d]);
  if (moved.length) {
    out.push(
      ctx.db
        .insert(tags)
        .select(
          sql`SELECT ${org}, json_extract(value, '$[0]'), json_extract(value, '$[1]'), ${now}, json_extract(value, '$[2]') FROM json_each(${JSON.stringify(moved)}) WHERE true`,
        )
        .onConflictDoUpdate({
          target: [tags.organizationId, tags.name],
          set: { contactCount: sql`${tags.contactCount} + excluded.contact_count` },
        }),
      ctx.db.delete(tags).where(
        and(
          eq(tags.organizationId, org),
          inJsonList(
            tags.name,
            moved.map(([name]) => name as string),
          ),
          sql`${tags.contactCount} <= 0`,
        ),
      ),
    );
  }
  return out;
}

/** assignedTo must name a user of the caller's organization. */
export async function assertAssignee(ctx: ServiceContext, userId: string | null | undefined, field = "assignedTo"): Promise<void> {
  if (!userId) return;
  const found = await ctx.db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.id, userId), eq(users.organizationId, ctx.organizationId)))
    .get();
  if (!found)
    throw new Validation([
      { field, path: field.split("."), code: "invalid_reference", message: "No user with this id in your organization" },
    ]);
}

const toFigures = (rows: FigureRow[]) =>
  new Map(
    rows.map((r) => [r.contactId, { count: r.count, conversations: r.conversations, lastActivityAt: r.lastActivityAt } as ActivityFigures]),
  );

/**
 * The contacts a write starts from, with the activity figures their lead scores need, in one D1 round trip.
 * Unknown ids (and other organizations' ids) are simply absent.
 */
export async function readForWrite(
  ctx: ServiceContext,
  contactIds: string[],
): Promise<{ rows: ContactRecord[]; figures: Map<string, ActivityFigures> }> {
  const [rows, figures] = await ctx.db.batch(writeReads(ctx.db, ctx.organizationId, contactIds));
  return { rows, figures: toFigures(figures) };
}

/**
 * The contact a write of it starts from, with its activity figures, in one round trip (none when it was read with the
 * authentication): 404 when it does not exist (or no longer: a retry after a delete), 412 when the caller's If-Match
 * names another version.
 */
export async function readContactForWrite(ctx: ServiceContext, id: string): Promise<{ before: ContactRecord; figures: ActivityFigures }> {
  const [[before], figures] = await contactWriteReads.read(ctx, id);
  return { before: before!, figures: toFigures(figures).get(id) ?? NO_ACTIVITY };
}

const NULLABLE = ["phone", "secondaryPhone", "address", "source", "notes", "preferences", "assignedTo"] as const;

/**
 * The contact after applying `input` (create or update fields) to `base`, with the lead score rule of lead-score.ts:
 * calculateLeadScore switches the computed score on or off; a given leadScore without it switches it off. Phones are
 * keyed in `region` (lib/phone.ts) as they are written.
 */
export function applyInput(base: ContactRecord, input: ContactUpdate, figures: ActivityFigures, now: Date, region: string): ContactRecord {
  const next: ContactRecord = { ...base };
  if (input.firstName !== undefined) next.firstName = input.firstName;
  if (input.lastName !== undefined) next.lastName = input.lastName;
  if (input.email !== undefined) {
    next.email = input.email;
    next.emailKey = input.email.toLowerCase();
  }
  if (input.type !== undefined) next.type = input.type;
  if (input.status !== undefined) next.status = input.status;
  if (input.tags !== undefined) next.tags = uniqueTags(input.tags);
  for (const key of NULLABLE) if (input[key] !== undefined) (next as Record<string, unknown>)[key] = input[key] ?? null;
  // A lead given to someone by hand leaves the pond it waited in (issue 46): it is no one's to claim any more.
  if (input.assignedTo) next.pondId = null;
  if (input.phone !== undefined) next.phoneKey = phoneKey(next.phone, region);
  if (input.secondaryPhone !== undefined) next.secondaryPhoneKey = phoneKey(next.secondaryPhone, region);

  if (input.calculateLeadScore !== undefined) next.leadScoreAuto = input.calculateLeadScore;
  else if (input.leadScore !== undefined) next.leadScoreAuto = false;
  if (next.leadScoreAuto) next.leadScore = calculateLeadScore(next, figures, now);
  else if (input.leadScore !== undefined) next.leadScore = input.leadScore;
  next.leadScoreRank = next.leadScore ?? -1;
  return next;
}

/** A new contact of the organization before any input is applied: a LEAD, ACTIVE, with nothing but its name and e-mail. */
export function blankContact(
  ctx: Pick<ServiceContext, "organizationId">,
  person: { firstName: string; lastName: string; email: string },
  at: string,
): ContactRecord {
  return {
    id: newRecordId(Date.parse(at)),
    organizationId: ctx.organizationId,
    ...person,
    emailKey: person.email.toLowerCase(),
    phone: null,
    secondaryPhone: null,
    phoneKey: null,
    secondaryPhoneKey: null,
    address: null,
    type: "LEAD",
    status: "ACTIVE",
    source: null,
    leadScore: null,
    leadScoreRank: -1,
    leadScoreAuto: false,
    tags: [],
    notes: null,
    preferences: null,
    assignedTo: null,
    pondId: null,
    createdAt: at,
    updatedAt: at,
    lastContactedAt: null,
    customFields: null,
    version: 1,
  };
}

/** The events of a new contact: contact.created, and contact.tagged and contact.assigned when it has tags or an assignee. */
export function createdEvents(ctx: ServiceContext, record: ContactRecord): DomainEvent[] {
  const object = toContact(record);
  const events = [newEvent(ctx, "contact.created", { object, previousAttributes: null, changes: null })];
  if (record.tags.length)
    events.push(newEvent(ctx, "contact.tagged", { object, previousAttributes: { tags: [] }, changes: ["tags"], tags: record.tags }));
  if (record.assignedTo)
    events.push(newEvent(ctx, "contact.assigned", { object, previousAttributes: { assignedTo: null }, changes: ["assignedTo"] }));
  return events;
}

/**
 * The events of one contact change: contact.updated, plus tagged, untagged and assigned where those changed. None
 * when nothing but updatedAt differs, so callers stamp `after.updatedAt` first and skip the write on an empty answer.
 */
export function changeEvents(ctx: ServiceContext, before: ContactRecord, after: ContactRecord): DomainEvent[] {
  const updated = contactWrites.updated(ctx, before, after);
  if (!updated) return [];
  const { object } = updated;
  const events = [updated.event];
  const added = after.tags.filter((t) => !before.tags.includes(t));
  const removed = before.tags.filter((t) => !after.tags.includes(t));
  const tagChange = { previousAttributes: { tags: before.tags }, changes: ["tags"] };
  if (added.length) events.push(newEvent(ctx, "contact.tagged", { object, ...tagChange, tags: added }));
  if (removed.length) events.push(newEvent(ctx, "contact.untagged", { object, ...tagChange, tags: removed }));
  if (before.assignedTo !== after.assignedTo) {
    events.push(
      newEvent(ctx, "contact.assigned", { object, previousAttributes: { assignedTo: before.assignedTo }, changes: ["assignedTo"] }),
    );
  }
  return events;
}

export const CONTACTS: VersionedTable = {
  table: contacts,
  id: contacts.id,
  organizationId: contacts.organizationId,
  version: contacts.version,
};

/**
 * The update of a contact read at `before.version` to `after` (`after.version` is the next one). Only the columns that
 * differ from `before` are set: the row is `before` exactly (the update is conditional on its version), and SQLite
 * rewrites the entries of every index on a column a SET names, changed or not (contacts carry 15 indexes).
 */
export function updateContactStatement(ctx: ServiceContext, before: ContactRecord, after: ContactRecord): Statement {
  const { id: _id, organizationId: _org, createdAt: _created, leadScoreRank: _rank, ...columns } = after;
  const changed = Object.fromEntries(
    Object.entries(columns).filter(
      ([k, v]) => k === "version" || JSON.stringify(v) !== JSON.stringify((before as Record<string, unknown>)[k]),
    ),
  ) as Partial<typeof columns>;
  return ctx.db
    .update(contacts)
    .set(changed)
    .where(atVersion(CONTACTS, ctx.organizationId, before.id, before.version));
}

/** The compare-and-set of one contact: the guard that it is still at the version read, and its update. */
export const replaceContact = (ctx: ServiceContext, before: ContactRecord, after: ContactRecord): Statement[] => [
  expectVersion(ctx.db, CONTACTS, ctx.organizationId, before),
  updateContactStatement(ctx, before, after),
];

/**
 * The contact under a write of one of its records (an activity, a communication), for that write's guarded batch: its
 * lastContactedAt moves to `touchedAt` when that is later (never backwards; null: no touch), an automatic lead score is
 * recomputed from `figures`, and either change is a contact.updated (with the updatedAt moved). Its version moves in
 * any case: the record is an input of the contact (its score, its includes), so concurrent writes each see the others
 * and none lands under a contact being deleted. Answers the statements and the contact's events.
 */
export function touchContact(
  ctx: ServiceContext,
  before: ContactRecord,
  figures: ActivityFigures,
  touchedAt: string | null,
  now: Date,
): { statements: Statement[]; events: DomainEvent[] } {
  const moves = touchedAt !== null && (before.lastContactedAt === null || touchedAt > before.lastContactedAt);
  const touched = { ...before, lastContactedAt: moves ? touchedAt : before.lastContactedAt };
  const changed = { ...applyInput(touched, {}, figures, now, regionOf(ctx)), updatedAt: now.toISOString(), version: before.version + 1 };
  const events = changeEvents(ctx, before, changed);
  // Without a visible change the contact keeps its updatedAt; only its version moves.
  const after = events.length ? changed : { ...before, version: before.version + 1 };
  return {
    statements: [
      ...replaceContact(ctx, before, after),
      ...(events.length ? [bumpCounters(ctx, 0)] : []),
      ...facetMoves(ctx, before, after),
    ],
    events,
  };
}

export { NO_ACTIVITY };
