import { and, eq, or, type SQL } from "drizzle-orm";
import { contactActivities, contacts } from "../db/schema";
import { expectNoRow, StaleWrite, type Statement } from "../db/write";
import type { DomainEvent } from "../events/event";
import { NotFound } from "../lib/errors";
import { newId } from "../lib/ids";
import { inJsonList } from "../lib/sql";
import { phoneKey, regionOf } from "../lib/phone";
import type { ServiceContext } from "../service-context";
import type { ActivityCreate, ContactUpdate } from "../contacts/schemas";
import {
  applyInput,
  blankContact,
  bumpCounters,
  changeEvents,
  type ContactRecord,
  createdEvents,
  facetMoves,
  NO_ACTIVITY,
  readContactForWrite,
  replaceContact,
  tagStatements,
} from "../contacts/service";
import { emailKey } from "./matching";

export { type DuplicateRule, type ImportOutcome, type IncomingContact, planContactImport } from "./import-batch";
export { MAX_MATCH_PEOPLE, matchContacts, type PersonKeys } from "./matching";

/**
 * People coming in (a lead, an import's rows) matched against the contacts they already are, and the contact side of
 * what they bring. Here: lead intake's, a new contact from a lead or a matched one filled with what the lead brings,
 * each with the lead's activity, as statements and events for the intake's own batch (leads/service.ts adds its
 * record, the routing turn and the property's inquiry, and commits once); matching.ts: who they are;
 * import-batch.ts: an import chunk's contacts.
 */

/** A person as a lead brings them: e-mails in order (the first is a new contact's `email`), phones as written. */
export interface IntakePerson {
  firstName?: string;
  lastName?: string;
  emails: string[];
  phones: string[];
  address?: ContactUpdate["address"];
}

/** The lead's activity; what is not written on the contact (more e-mails, a third phone, a match's suggestions) joins its metadata. */
export interface IntakeActivity {
  type: ActivityCreate["type"];
  description: string | null;
  metadata: Record<string, unknown>;
}

export interface IntakeWrite {
  contact: ContactRecord;
  statements: Statement[];
  events: DomainEvent[];
}

/** Distinct by key, first spelling kept: e-mails case-folded, phones in E.164 (the caller checked they key). */
function distinct(values: string[], key: (v: string) => string | null): string[] {
  const seen = new Set<string>();
  return values.filter((v) => {
    const k = key(v);
    if (k === null || seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

function activityRow(
  ctx: ServiceContext,
  contactId: string,
  activity: IntakeActivity,
  extra: { emails: string[]; phones: string[] },
  at: string,
) {
  const metadata = {
    ...activity.metadata,
    ...(extra.emails.length ? { extraEmails: extra.emails } : {}),
    ...(extra.phones.length ? { extraPhones: extra.phones } : {}),
  };
  return {
    id: newId(),
    organizationId: ctx.organizationId,
    contactId,
    type: activity.type,
    description: activity.description,
    scheduledAt: null,
    metadata,
    createdBy: ctx.actor.userId ?? null,
    createdAt: at,
  };
}

/**
 * A guard: no contact of the organization has any of these e-mail keys or phone keys when the batch runs. Whatever a
 * lead makes of matching nobody (a contact, a review) is then made only while that still holds.
 */
export function noContactWith(ctx: ServiceContext, emailKeys: string[], phoneKeys: string[]): Statement {
  const clash: SQL | undefined = or(
    ...(emailKeys.length ? [inJsonList(contacts.emailKey, emailKeys)] : []),
    ...(phoneKeys.length ? [inJsonList(contacts.phoneKey, phoneKeys), inJsonList(contacts.secondaryPhoneKey, phoneKeys)] : []),
  );
  return expectNoRow(ctx.db, contacts, and(eq(contacts.organizationId, ctx.organizationId), clash));
}

/**
 * A new contact for a lead that matched nobody: e-mail the first of the lead's, phone and secondary phone its first two
 * numbers, the rest in the activity. Guarded: no contact of the organization may have any of its e-mails or phone
 * numbers when the batch runs, so of concurrent intakes of one person one creates and the others find it on their
 * retry (StaleWrite) and land as a match.
 */
export function newContactForLead(
  ctx: ServiceContext,
  person: IntakePerson,
  fields: { source: string; assignedTo: string | null; pondId?: string | null; tags?: string[] },
  activity: IntakeActivity,
  now: Date,
): IntakeWrite {
  const region = regionOf(ctx);
  const emails = distinct(person.emails, emailKey);
  const phones = distinct(person.phones, (p) => phoneKey(p, region));
  const email = emails[0]!;
  const at = now.toISOString();
  const input: ContactUpdate = {
    firstName: person.firstName || email.split("@")[0]!.slice(0, 100),
    lastName: person.lastName || "",
    email,
    phone: phones[0] ?? null,
    secondaryPhone: phones[1] ?? null,
    address: person.address ?? null,
    source: fields.source,
    assignedTo: fields.assignedTo,
    ...(fields.tags?.length ? { tags: fields.tags } : {}),
  };
  const applied = applyInput(
    blankContact(ctx, { firstName: input.firstName!, lastName: input.lastName!, email }, at),
    input,
    NO_ACTIVITY,
    now,
    region,
  );
  // A lead routed to a pond waits there unassigned (issue 46).
  const record = { ...applied, pondId: fields.pondId ?? null };
  const events = createdEvents(ctx, record);
  const { leadScoreRank: _rank, ...row } = record;
  const row2 = activityRow(ctx, record.id, activity, { emails: emails.slice(1), phones: phones.slice(2) }, at);
  const keys = phones.map((p) => phoneKey(p, region)!);
  return {
    contact: record,
    statements: [
      noContactWith(ctx, emails.map(emailKey), keys),
      ctx.db.insert(contacts).values(row),
      ...(record.tags.length ? tagStatements(ctx, [{ contactId: record.id, before: [], after: record.tags }], at) : []),
      bumpCounters(ctx, 1),
      ...facetMoves(ctx, null, record),
      ctx.db.insert(contactActivities).values(row2),
    ],
    events,
  };
}

/**
 * The matched contact filled with what the lead brings, never blanked nor overwritten: names and address fields only
 * where the contact has none (a lead is whoever posts a web form knowing someone's e-mail or phone: it may add to a
 * client's record, not rename or move them). The lead's phone numbers and source are never written on it (a
 * poster's own number in a free phone slot would match the poster's next leads to the client): those the contact lacks
 * go to the activity's `metadata.suggested {phones, source}` for an agent to accept, an e-mail it lacks to
 * `extraEmails`. Guarded on the version read; a contact deleted since its match is a StaleWrite too, so the intake
 * matches again.
 */
export async function fillContactFromLead(
  ctx: ServiceContext,
  contactId: string,
  person: IntakePerson,
  source: string,
  activity: IntakeActivity,
  now: Date,
): Promise<IntakeWrite> {
  const region = regionOf(ctx);
  const read = await readContactForWrite(ctx, contactId).catch((err) => {
    throw err instanceof NotFound ? new StaleWrite() : err;
  });
  const { before, figures } = read;
  const at = now.toISOString();
  const update: ContactUpdate = {};
  if (person.firstName && !before.firstName.trim()) update.firstName = person.firstName;
  if (person.lastName && !before.lastName.trim()) update.lastName = person.lastName;
  const stored = (before.address ?? {}) as Record<string, unknown>;
  const added = Object.entries(person.address ?? {}).filter(
    ([k, v]) => v && !(typeof stored[k] === "string" && (stored[k] as string).trim()),
  );
  if (added.length) update.address = { ...stored, ...Object.fromEntries(added) };
  const extraEmails = distinct(person.emails, emailKey).filter((e) => emailKey(e) !== before.emailKey);
  const known = new Set([before.phoneKey, before.secondaryPhoneKey].filter((k): k is string => k !== null));
  const phones = distinct(person.phones, (v) => phoneKey(v, region)).filter((p) => !known.has(phoneKey(p, region)!));
  const suggested = { ...(phones.length ? { phones } : {}), ...(source !== before.source ? { source } : {}) };
  const withThis = { count: figures.count + 1, conversations: figures.conversations, lastActivityAt: at };
  const changed = { ...applyInput(before, update, withThis, now, region), updatedAt: at, version: before.version + 1 };
  const events = changeEvents(ctx, before, changed);
  // The activity moves the version whatever else changes (it is an input of the contact), as every activity does.
  const after = events.length ? changed : { ...before, version: before.version + 1 };
  const withSuggestions = Object.keys(suggested).length ? { ...activity, metadata: { ...activity.metadata, suggested } } : activity;
  const row = activityRow(ctx, contactId, withSuggestions, { emails: extraEmails, phones: [] }, at);
  return {
    contact: after,
    statements: [
      ...replaceContact(ctx, before, after),
      ...(events.length ? [bumpCounters(ctx, 0)] : []),
      ...facetMoves(ctx, before, after),
      ctx.db.insert(contactActivities).values(row),
    ],
    events,
  };
}
