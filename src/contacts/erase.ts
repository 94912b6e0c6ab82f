import { and, eq, inArray, isNull, or, sql } from "drizzle-orm";
import {
  contactActivities,
  contacts,
  contactTags,
  erasures,
  mailOutbox,
  referralKeys,
  referrals,
  surveyResponses,
  surveys,
  testimonials,
  trashEntries,
  trashRows,
} from "../db/schema";
import { commit, expectRow, expectVersion, expectVersionMatch, type Statement, withRetries } from "../db/write";
import { newEvent } from "../events/outbox";
import { NotFound } from "../lib/errors";
import { newId } from "../lib/ids";
import { loggableError } from "../lib/log";
import { chunkBySize } from "../lib/sql";
import type { ServiceContext } from "../platform/context";
import { purgeFeed } from "../profiles/feed";
import { referredKey } from "../referrals/service";
import { sha256Hex } from "../lib/crypto";
import { decodeRow } from "../trash/moves";
import type { ContactRecord } from "./mapping";
import type { Erasure } from "./schemas";
import { facetMoves } from "./facets";
import { bumpCounters, CONTACTS, tagStatements } from "./writes";

/** What stands in for an erased name where a column cannot be empty. */
export const ERASED = "[erased]";

/**
 * What identifies the person in copied text: their id, e-mail, full name and phone numbers. A first or last name
 * alone is not searched for: "Lead" or "Sale" would take out every deal stage and type of every payload.
 */
interface Person {
  id: string;
  emailKey: string;
  fullName: string;
  phones: string[];
  /** Longest first. */
  words: string[];
}

function personOf(c: ContactRecord): Person {
  const fullName = `${c.firstName} ${c.lastName}`;
  const phones = [c.phone, c.secondaryPhone].filter((w): w is string => typeof w === "string" && w.trim().length >= 2);
  return { id: c.id, emailKey: c.emailKey, fullName, phones, words: [fullName, c.email, ...phones].filter((w) => w.trim().length >= 2).sort((a, b) => b.length - a.length) };
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The fields of a contact object (in an event or a stored answer) that identify the person. */
const PERSONAL_FIELDS = ["firstName", "lastName", "email", "phone", "secondaryPhone", "address", "notes", "preferences"];

/** `text` with every mention of the person (full name, e-mail, phone, in any case) replaced by ERASED. */
export function redactText(text: string, person: Person): string {
  if (person.words.length === 0) return text;
  const pattern = new RegExp(person.words.map((w) => (/^\w/u.test(w) && /\w$/u.test(w) ? `\\b${escapeRegExp(w)}\\b` : escapeRegExp(w))).join("|"), "giu");
  return text.replace(pattern, ERASED);
}

/**
 * A JSON document with the person taken out: the contact object itself (an object whose `id` is theirs) loses its
 * personal fields, and every string that names them (full name, e-mail, phone) has that part replaced. Structure,
 * ids, numbers, enum values and everything about other people stay.
 */
export function redactJson(text: string, person: Person): string {
  const scrubString = (s: string) => redactText(s, person);
  const walk = (value: unknown): unknown => {
    if (typeof value === "string") return scrubString(value);
    if (Array.isArray(value)) return value.map(walk);
    if (value && typeof value === "object") {
      const obj = value as Record<string, unknown>;
      const isPerson = obj.id === person.id;
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(obj)) out[k] = isPerson && PERSONAL_FIELDS.includes(k) && v !== null ? (typeof v === "string" ? ERASED : null) : walk(v);
      return out;
    }
    return value;
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return scrubString(text);
  }
  // Plain text that happens to parse (a number, a quoted string) is still text: only objects and arrays are JSON here.
  return parsed !== null && typeof parsed === "object" ? JSON.stringify(walk(parsed)) : scrubString(text);
}

/**
 * Text that may carry copies of the person, rewritten in place: event payloads, webhook bodies and filters, replayed
 * answers (JSON, redacted structurally), and the notes and texts the system or a form wrote about them elsewhere.
 */
const COPIES: { kind: string; table: string; key: string; column: string; versioned?: boolean }[] = [
  { kind: "events", table: "outbox_events", key: "id", column: "data" },
  { kind: "webhook_deliveries", table: "webhook_deliveries", key: "id", column: "body" },
  { kind: "idempotency_records", table: "idempotency_keys", key: "key", column: "response_body" },
  { kind: "webhook_subscriptions", table: "webhook_subscriptions", key: "id", column: "filters", versioned: true },
  { kind: "webhook_subscriptions", table: "webhook_subscriptions", key: "id", column: "description", versioned: true },
  { kind: "contact_notes", table: "contacts", key: "id", column: "notes", versioned: true },
  { kind: "referral_notes", table: "referrals", key: "id", column: "notes", versioned: true },
  { kind: "testimonial_texts", table: "testimonials", key: "id", column: "headline", versioned: true },
  { kind: "testimonial_texts", table: "testimonials", key: "id", column: "body", versioned: true },
  { kind: "survey_answers", table: "survey_responses", key: "survey_id", column: "answers" },
];

const PAGE = 200;
/** One rewrite statement carries at most this much text (D1 binds a value of up to 2 MB). */
const MAX_REWRITE_CHARS = 512 * 1024;

/**
 * Rewrites the organization's rows that mention the person (their id, e-mail, full name or phone, in any case), page
 * by page; returns how many rows of each kind changed. Idempotent: a second pass finds nothing left to change.
 */
async function scrubCopies(ctx: ServiceContext, person: Person): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  const needles = [person.id, ...person.words.map((w) => w.toLowerCase())];
  for (const p of COPIES) {
    let after = "";
    let changed = 0;
    const mentions = needles.map(() => `instr(lower(${p.column}), ?) > 0`).join(" OR ");
    for (;;) {
      const { results } = await ctx.d1
        .prepare(
          `SELECT ${p.key} AS k, ${p.column} AS t FROM ${p.table}
           WHERE organization_id = ? AND ${p.key} > ? AND ${p.key} <> ? AND ${p.column} IS NOT NULL AND (${mentions})
           ORDER BY ${p.key} LIMIT ${PAGE}`,
        )
        .bind(ctx.organizationId, after, person.id, ...needles)
        .all<{ k: string; t: string }>();
      const rewrites = results.flatMap((r) => {
        const next = redactJson(r.t, person);
        return next === r.t ? [] : [JSON.stringify([r.k, next])];
      });
      for (const chunk of chunkBySize(rewrites, MAX_REWRITE_CHARS)) {
        await ctx.d1
          .prepare(
            `UPDATE ${p.table} SET ${p.column} = json_extract(j.value, '$[1]')${p.versioned ? ", version = version + 1" : ""} FROM json_each(?) AS j
             WHERE ${p.table}.organization_id = ? AND ${p.table}.${p.key} = json_extract(j.value, '$[0]')`,
          )
          .bind(`[${chunk.join(",")}]`, ctx.organizationId)
          .run();
      }
      changed += rewrites.length;
      if (results.length < PAGE) break;
      after = results[results.length - 1]!.k;
    }
    if (changed) counts[p.kind] = (counts[p.kind] ?? 0) + changed;
  }
  return counts;
}

/** The person to erase: the live contact, or one waiting in the trash. 404 otherwise (also after an erasure). */
async function findPerson(ctx: ServiceContext, id: string): Promise<{ live: ContactRecord | null; trashed: ContactRecord | null }> {
  const org = ctx.organizationId;
  const [live, kept] = await ctx.db.batch([
    ctx.db.select().from(contacts).where(and(eq(contacts.organizationId, org), eq(contacts.id, id))),
    ctx.db
      .select({ row: trashRows.row })
      .from(trashRows)
      .innerJoin(trashEntries, eq(trashEntries.recordId, trashRows.recordId))
      .where(and(eq(trashRows.recordId, id), eq(trashRows.tableName, "contacts"), eq(trashEntries.organizationId, org), eq(trashEntries.kind, "contact"), eq(trashEntries.state, "trashed"))),
  ]);
  if (live[0]) return { live: live[0], trashed: null };
  if (kept[0]) return { live: null, trashed: decodeRow<ContactRecord>(contacts, kept[0].row) };
  throw new NotFound("Contact");
}

/**
 * DELETE /v1/contacts/{id}?erase=true (issue 21): the person erased now, without the trash. The contact (live or in
 * the trash) and its activities go; their name, e-mail and phone go from every copy: testimonial author display,
 * referrals that name them as the referred person, unsent survey invitations and the respondent's address, the mail
 * log, and the texts of COPIES (event payloads, webhook bodies and filters, stored replay answers, notes, testimonial
 * texts, survey answers). Numbers stay (ratings, aggregates, counts); signed envelopes stay as signed.
 * References to the contact then point at a tombstone (`{id, deleted: true}`), and an `erasures` row records who
 * erased what kinds, without personal data.
 *
 * The payload copies are rewritten before the contact goes (so a failure leaves the person erasable again) and once
 * more after, for an event a concurrent write emitted in between.
 */
export async function eraseContact(ctx: ServiceContext, id: string): Promise<Erasure> {
  const org = ctx.organizationId;
  return withRetries(async () => {
    const { live, trashed } = await findPerson(ctx, id);
    expectVersionMatch(ctx, (live ?? trashed)!.version);
    const person = personOf((live ?? trashed)!);
    const scrubbed = await scrubCopies(ctx, person);
    const [authored, referred, pendingSurveys, mails, activities] = await ctx.db.batch([
      ctx.db.select({ agentUserId: testimonials.agentUserId }).from(testimonials).where(and(eq(testimonials.organizationId, org), eq(testimonials.authorPersonId, id))),
      ctx.db.select({ n: sql<number>`COUNT(*)` }).from(referrals).where(referredIs(ctx, person)),
      ctx.db.select({ n: sql<number>`COUNT(*)` }).from(surveys).where(unsentTo(ctx, id)),
      ctx.db.select({ n: sql<number>`COUNT(*)` }).from(mailOutbox).where(mailTo(ctx, person)),
      live
        ? ctx.db.select({ n: sql<number>`COUNT(*)` }).from(contactActivities).where(and(eq(contactActivities.organizationId, org), eq(contactActivities.contactId, id)))
        : ctx.db.select({ n: sql<number>`COUNT(*)` }).from(trashRows).where(and(eq(trashRows.recordId, id), eq(trashRows.tableName, "contact_activities"))),
    ]);
    const at = new Date().toISOString();
    const statements: Statement[] = live
      ? [
          expectVersion(ctx.db, CONTACTS, org, live),
          ...tagStatements(ctx, [{ contactId: id, before: live.tags, after: [] }], at),
          ctx.db.delete(contactTags).where(and(eq(contactTags.contactId, id), eq(contactTags.organizationId, org))),
          ctx.db.delete(contactActivities).where(and(eq(contactActivities.organizationId, org), eq(contactActivities.contactId, id))),
          ctx.db.delete(contacts).where(and(eq(contacts.organizationId, org), eq(contacts.id, id))),
          bumpCounters(ctx, -1),
          ...facetMoves(ctx, live, null),
        ]
      : [
          expectRow(ctx.db, trashEntries, and(eq(trashEntries.recordId, id), eq(trashEntries.organizationId, org), eq(trashEntries.state, "trashed"))),
          ctx.db.delete(trashRows).where(eq(trashRows.recordId, id)),
        ];
    const erased: Record<string, number> = {
      contacts: 1,
      activities: activities[0]!.n,
      testimonials: authored.length,
      referrals: referred[0]!.n,
      surveys: pendingSurveys[0]!.n,
      mails: mails[0]!.n,
      ...scrubbed,
    };
    const retained = ["signed_envelopes" as const];
    // The referral form's duplicate keys are hashes of the person's e-mail and phones: they go too.
    const keyHashes = await Promise.all([person.emailKey, ...person.phones].map((c) => sha256Hex(referredKey(c))));
    statements.push(
      ctx.db
        .insert(trashEntries)
        .values({ recordId: id, organizationId: org, kind: "contact", state: "erased", label: null, deletedAt: at, deletedBy: ctx.actor.userId ?? null, restorableUntil: at, endedAt: at })
        .onConflictDoUpdate({ target: trashEntries.recordId, set: { state: "erased", label: null, endedAt: at } }),
      ctx.db
        .update(testimonials)
        .set({ displayName: null, displayLocation: null, displayPhotoUrl: null, permissionToPublishName: false, permissionToPublishLocation: false, permissionToPublishPhoto: false, updatedAt: at, version: sql`${testimonials.version} + 1` })
        .where(and(eq(testimonials.organizationId, org), eq(testimonials.authorPersonId, id))),
      ctx.db
        .update(referrals)
        .set({ referredName: ERASED, referredContact: null, referredEmailKey: null, updatedAt: at, version: sql`${referrals.version} + 1` })
        .where(referredIs(ctx, person)),
      ctx.db
        .update(surveyResponses)
        .set({ ip: null, userAgent: null })
        .where(and(eq(surveyResponses.organizationId, org), inArray(surveyResponses.surveyId, ctx.db.select({ id: surveys.id }).from(surveys).where(and(eq(surveys.organizationId, org), eq(surveys.recipientPersonId, id)))))),
      ctx.db.update(surveys).set({ status: "SKIPPED", skippedAt: at, pendingToken: null, updatedAt: at, version: sql`${surveys.version} + 1` }).where(unsentTo(ctx, id)),
      ctx.db.delete(mailOutbox).where(mailTo(ctx, person)),
      ctx.db.delete(referralKeys).where(and(eq(referralKeys.organizationId, org), inArray(referralKeys.contactHash, keyHashes))),
      ctx.db.insert(erasures).values({ id: newId(), organizationId: org, contactId: id, actorUserId: ctx.actor.userId ?? null, erased: countsOnly(erased), retained, at }),
    );
    const events = live ? [newEvent(ctx, "contact.deleted", { object: { id }, previousAttributes: null, changes: null })] : [];
    await commit(ctx, statements, events);
    // The public feeds of the agents they reviewed show the author no more from the next read on.
    for (const agentUserId of new Set(authored.map((t) => t.agentUserId))) purgeFeed(ctx, agentUserId);
    // A write that landed between the first pass and the commit may have emitted a copy: take it out too.
    await scrubCopies(ctx, person).catch((err) => console.warn(JSON.stringify({ message: "erasure second pass failed", contactId: id, error: loggableError(err) })));
    return { id, deleted: true as const, erased: countsOnly(erased), retained };
  });
}

const countsOnly = (counts: Record<string, number>) => Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));

/** Referrals whose referred person is this one: the lead made from them, their e-mail or their phone. */
const referredIs = (ctx: ServiceContext, person: Person) =>
  and(
    eq(referrals.organizationId, ctx.organizationId),
    or(eq(referrals.leadContactId, person.id), eq(referrals.referredEmailKey, person.emailKey), person.phones.length ? inArray(referrals.referredContact, person.phones) : undefined),
  );

/** Survey invitations not mailed yet: they will never go. */
const unsentTo = (ctx: ServiceContext, id: string) =>
  and(eq(surveys.organizationId, ctx.organizationId), eq(surveys.recipientPersonId, id), inArray(surveys.status, ["SCHEDULED", "OPENED"]), isNull(surveys.sentAt));

const mailTo = (ctx: ServiceContext, person: Person) => and(eq(mailOutbox.organizationId, ctx.organizationId), sql`lower(${mailOutbox.to}) = ${person.emailKey}`);
