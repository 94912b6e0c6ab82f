import { and, asc, eq, gt, inArray, isNull, lte, ne, or, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import { tableName } from "../db/row-json";
import {
  clickwrapAcceptances,
  contactActivities,
  contactCommunications,
  contactMergedKeys,
  contacts,
  contactTags,
  erasures,
  imports,
  leadReviews,
  mailOutbox,
  referralKeys,
  referrals,
  surveyResponses,
  surveys,
  testimonials,
  trashEntries,
  trashRows,
} from "../db/schema";
import { expectNoRow, expectRow, expectVersion, expectVersionMatch, type Statement, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { eraseDocumentsNaming } from "../documents/service";
import type { Env } from "../env";
import { newEvent } from "../events/outbox";
import { sha256Hex } from "../lib/crypto";
import { Conflict, NotFound } from "../lib/errors";
import { newId } from "../lib/ids";
import { createLogger, loggableError } from "../lib/log";
import { matcherOf, phoneParts, replaceMentions } from "../lib/mentions";
import { digitsOnly, inJsonList, mentionsAny } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import { purgeFeed } from "../reputation/feed-cache";
import { referredKey } from "../referrals/service";
import { systemContext } from "../shards/tenants";
import { closeSigningLinks, countSignedEnvelopes, eraseUnsignedEnvelopes } from "../signatures/service";
import { decodeRow } from "../crm/trash";
import { deleteExportArchives } from "../files/export-archives";
import { bumpCounters, CONTACTS, type ContactRecord, facetMoves, tagStatements } from "../contacts/service";
import { type Counted, scrubCopies, scrubTrash } from "./copies";
import { ERASED, type Person, personOf, type Scrub, scrubOf } from "./redact";
import { type Erasure, RETAINED_KINDS, type RetainedKind } from "./schemas";

// The steps of an erasure, in order: begin, envelopes, documents, trash, copies, finish. `begin` is one atomic batch;
// each later step is idempotent and made of bounded rounds (see each function), so a run that stops anywhere is
// finished by the next: the retry of the request, or the cron (`resumeErasures`).

/** Why each kind of record an erasure keeps is kept (the answer's `retainedRecords`). */
const RETAINED_REASONS: Record<RetainedKind, string> = {
  signed_envelopes:
    "A completed envelope is a signed, sealed record: its signers' names and addresses, its audit trail, the document they signed and its PDFs are part of what was signed and stay as signed",
  clickwrap_acceptances:
    "A clickwrap acceptance is an immutable record of who accepted which terms, when and from where (spec: immutable acceptances)",
  documents_by_name:
    "Unsigned documents and envelopes that never completed which mention the name alone, without the person's e-mail or phone: a name alone does not tell whose they are, so they are not deleted, nor rewritten (a document's SHA-256 identifies the text that was reviewed); review them and delete those that are this person's",
  name_mentions:
    "Mentions by name alone: another contact has the same name, so texts that name only the name may be about them and are kept as written (the person's e-mail and phone were taken out)",
};

/** A run that has not touched a pending erasure for this long has stopped: the cron takes it up. */
export const ERASURE_LEASE_MS = 2 * 60_000;

type ErasureRow = typeof erasures.$inferSelect;

interface Found {
  live: ContactRecord | null;
  trashed: ContactRecord | null;
  pending: ErasureRow | null;
  /** Contacts merged into this one (merge/merge.ts), the same person, not erased yet or not to the end. */
  merged: string[];
}

/** The person to erase: the live contact, one waiting in the trash, or an erasure of theirs that stopped half-way. */
export async function findPerson(ctx: ServiceContext, id: string): Promise<Found> {
  const org = ctx.organizationId;
  const [live, kept, pending, mergedRows] = await ctx.db.batch([
    ctx.db
      .select()
      .from(contacts)
      .where(and(eq(contacts.organizationId, org), eq(contacts.id, id))),
    ctx.db
      .select({ row: trashRows.row })
      .from(trashRows)
      .innerJoin(trashEntries, eq(trashEntries.recordId, trashRows.recordId))
      .where(
        and(
          eq(trashRows.recordId, id),
          eq(trashRows.tableName, "contacts"),
          eq(trashEntries.organizationId, org),
          eq(trashEntries.kind, "contact"),
          eq(trashEntries.state, "trashed"),
        ),
      ),
    ctx.db
      .select()
      .from(erasures)
      .where(and(eq(erasures.organizationId, org), eq(erasures.contactId, id), eq(erasures.state, "pending"))),
    ctx.db
      .select({ id: trashEntries.recordId })
      .from(trashEntries)
      .where(
        and(
          eq(trashEntries.organizationId, org),
          eq(trashEntries.mergedInto, id),
          // Waiting in the trash, or erased by a run that stopped half-way (this request's earlier try): finished now.
          or(
            eq(trashEntries.state, "trashed"),
            sql`EXISTS (SELECT 1 FROM ${erasures} e WHERE e.organization_id = ${org} AND e.contact_id = ${trashEntries.recordId} AND e.state = 'pending')`,
          ),
        ),
      ),
  ]);
  const merged = mergedRows.map((m) => m.id);
  if (live[0]) return { live: live[0], trashed: null, pending: null, merged };
  if (kept[0]) return { live: null, trashed: decodeRow<ContactRecord>(contacts, kept[0].row), pending: null, merged };
  if (pending[0]) return { live: null, trashed: null, pending: pending[0], merged };
  throw new NotFound("Contact");
}

/**
 * The contacts merged into this one are the same person: each is erased first (its own erasure, without the
 * request's If-Match or kept answer), once the request is known to go ahead, so that a run stopping anywhere leaves
 * either the target live (the retry erases the rest) or every merged contact's erasure begun (the cron ends it).
 */
async function eraseMerged(ctx: ServiceContext, found: Found): Promise<void> {
  if (found.merged.length === 0) return;
  if (!found.pending) expectVersionMatch(ctx, (found.live ?? found.trashed)!.version);
  const inner: ServiceContext = { ...ctx, ifMatch: undefined, keepAnswer: undefined };
  for (const id of found.merged) await eraseContact(inner, id);
}

/**
 * DELETE /v1/contacts/{id}?erase=true (docs/decisions/0014-erasure.md): the person erased now, without the trash. `begin` removes
 * the contact (live or in the trash), its activities and communications, clears what is found by their id, e-mail or phone
 * (testimonial author display, referrals that name them, unsent survey invitations and the respondent's address,
 * the mail log, the referral form's keys), leaves a tombstone, and records the erasure `pending` with the strings
 * it searches for. The later steps (`runErasure`) delete the envelopes that name them and never completed and the
 * unsigned documents that name them, and rewrite every other copy of their name, e-mail and phone, the trash
 * included. Kept as they are and named in `retained`: completed envelopes and clickwrap acceptances. A request that
 * finds its erasure pending (a retry after a failure) finishes it and answers the same. Contacts merged into this
 * one are erased with it (`eraseMerged`).
 */
const importRunning = () =>
  new Conflict(
    "An import of your organization is running and its file may name this person: erase once it has ended (GET /v1/imports/{id}), or cancel it",
    "import_running",
  );

export async function eraseContact(ctx: ServiceContext, id: string): Promise<Erasure> {
  const org = ctx.organizationId;
  let authors: string[] = [];
  const first = await findPerson(ctx, id);
  await eraseMerged(ctx, first);
  const row = await withRetries(async (n) => {
    const { live, trashed, pending } = n === 1 && first.merged.length === 0 ? first : await findPerson(ctx, id);
    if (pending) {
      // A retry of an erasure that stopped half-way: this run finishes it (the cron leaves a touched one alone).
      await ctx.db.update(erasures).set({ touchedAt: new Date().toISOString() }).where(eq(erasures.id, pending.id));
      return pending;
    }
    const contact = (live ?? trashed)!;
    expectVersionMatch(ctx, contact.version);
    // An import's source file may name the person and would bring them back: erasure waits for it.
    const importing = and(eq(imports.organizationId, org), inArray(imports.status, ["queued", "running"]));
    if (await ctx.db.select({ id: imports.id }).from(imports).where(importing).limit(1).get()) throw importRunning();
    const person = personOf(contact);
    // A child table's rows of the contact: live beside it, or kept in the trash with it.
    const childRows = (table: typeof contactActivities | typeof contactCommunications) =>
      live
        ? ctx.db
            .select({ n: sql<number>`COUNT(*)` })
            .from(table)
            .where(and(eq(table.organizationId, org), eq(table.contactId, id)))
        : ctx.db
            .select({ n: sql<number>`COUNT(*)` })
            .from(trashRows)
            .where(and(eq(trashRows.recordId, id), eq(trashRows.tableName, tableName(table))));
    const [authored, referred, pendingSurveys, mails, reviews, activities, communications] = await ctx.db.batch([
      ctx.db
        .select({ agentUserId: testimonials.agentUserId })
        .from(testimonials)
        .where(and(eq(testimonials.organizationId, org), eq(testimonials.authorPersonId, id))),
      ctx.db.select({ n: sql<number>`COUNT(*)` }).from(referrals).where(referredIs(ctx, person)),
      ctx.db.select({ n: sql<number>`COUNT(*)` }).from(surveys).where(unsentTo(ctx, id)),
      ctx.db.select({ n: sql<number>`COUNT(*)` }).from(mailOutbox).where(mailTo(ctx, person)),
      ctx.db.select({ n: sql<number>`COUNT(*)` }).from(leadReviews).where(reviewsWithNumbersOf(ctx, contact)),
      childRows(contactActivities),
      childRows(contactCommunications),
    ]);
    const at = new Date().toISOString();
    const statements: Statement[] = live
      ? [
          expectVersion(ctx.db, CONTACTS, org, live),
          ...tagStatements(ctx, [{ contactId: id, before: live.tags, after: [] }], at),
          ctx.db.delete(contactTags).where(and(eq(contactTags.contactId, id), eq(contactTags.organizationId, org))),
          ctx.db.delete(contactActivities).where(and(eq(contactActivities.organizationId, org), eq(contactActivities.contactId, id))),
          ctx.db
            .delete(contactCommunications)
            .where(and(eq(contactCommunications.organizationId, org), eq(contactCommunications.contactId, id))),
          ctx.db.delete(contacts).where(and(eq(contacts.organizationId, org), eq(contacts.id, id))),
          bumpCounters(ctx, -1),
          ...facetMoves(ctx, live, null),
        ]
      : [
          expectRow(
            ctx.db,
            trashEntries,
            and(eq(trashEntries.recordId, id), eq(trashEntries.organizationId, org), eq(trashEntries.state, "trashed")),
          ),
          ctx.db.delete(trashRows).where(eq(trashRows.recordId, id)),
        ];
    const erased = countsOnly({
      contacts: 1,
      activities: activities[0]!.n,
      communications: communications[0]!.n,
      testimonials: authored.length,
      referrals: referred[0]!.n,
      surveys: pendingSurveys[0]!.n,
      mails: mails[0]!.n,
      lead_reviews: reviews[0]!.n,
    });
    // The referral form's duplicate keys are hashes of the person's e-mail and phones: they go too.
    const keyHashes = await Promise.all([person.emailKey, ...person.phones].map((c) => sha256Hex(referredKey(c))));
    const started: ErasureRow = {
      id: newId(),
      organizationId: org,
      contactId: id,
      actorUserId: ctx.actor.userId ?? null,
      erased,
      retained: [],
      at,
      state: "pending",
      subject: person,
      retainedCounts: null,
      touchedAt: at,
    };
    statements.push(
      expectNoRow(ctx.db, imports, importing),
      ctx.db
        .insert(trashEntries)
        .values({
          recordId: id,
          organizationId: org,
          kind: "contact",
          state: "erased",
          label: null,
          deletedAt: at,
          deletedBy: ctx.actor.userId ?? null,
          restorableUntil: at,
          endedAt: at,
        })
        .onConflictDoUpdate({ target: trashEntries.recordId, set: { state: "erased", label: null, endedAt: at } }),
      ctx.db
        .update(testimonials)
        .set({
          displayName: null,
          displayLocation: null,
          displayPhotoUrl: null,
          permissionToPublishName: false,
          permissionToPublishLocation: false,
          permissionToPublishPhoto: false,
          updatedAt: at,
          version: sql`${testimonials.version} + 1`,
        })
        .where(and(eq(testimonials.organizationId, org), eq(testimonials.authorPersonId, id))),
      ctx.db
        .update(referrals)
        .set({ referredName: ERASED, referredContact: null, referredEmailKey: null, updatedAt: at, version: sql`${referrals.version} + 1` })
        .where(referredIs(ctx, person)),
      ctx.db
        .update(surveyResponses)
        .set({ ip: null, userAgent: null })
        .where(
          and(
            eq(surveyResponses.organizationId, org),
            inArray(
              surveyResponses.surveyId,
              ctx.db
                .select({ id: surveys.id })
                .from(surveys)
                .where(and(eq(surveys.organizationId, org), eq(surveys.recipientPersonId, id))),
            ),
          ),
        ),
      ctx.db
        .update(surveys)
        .set({ status: "SKIPPED", skippedAt: at, pendingToken: null, updatedAt: at, version: sql`${surveys.version} + 1` })
        .where(unsentTo(ctx, id)),
      // The address each EMAIL survey was scheduled for: theirs, whichever contact the survey is of now. One
      // not mailed yet is skipped first: without its address it would have nobody to be held to.
      ctx.db
        .update(surveys)
        .set({ status: "SKIPPED", skippedAt: at, pendingToken: null, updatedAt: at, version: sql`${surveys.version} + 1` })
        .where(
          and(
            eq(surveys.organizationId, org),
            eq(surveys.recipientEmailKey, person.emailKey),
            inArray(surveys.status, ["SCHEDULED", "OPENED"]),
            isNull(surveys.sentAt),
          ),
        ),
      // "" rather than null: no address is one the survey can ever be mailed to again (a re-issue included), where
      // null would mean a survey from before addresses were kept.
      ctx.db
        .update(surveys)
        .set({ recipientEmailKey: "" })
        .where(and(eq(surveys.organizationId, org), or(eq(surveys.recipientPersonId, id), eq(surveys.recipientEmailKey, person.emailKey)))),
      ctx.db.delete(mailOutbox).where(mailTo(ctx, person)),
      ctx.db.delete(referralKeys).where(and(eq(referralKeys.organizationId, org), inArray(referralKeys.contactHash, keyHashes))),
      // Leads kept for review with one of their numbers: before the merged keys they are also found by go.
      ctx.db.delete(leadReviews).where(reviewsWithNumbersOf(ctx, contact)),
      // The e-mails and phones a merge kept: the ones this contact absorbed, and (a merged contact erased) its own.
      ctx.db
        .delete(contactMergedKeys)
        .where(and(eq(contactMergedKeys.organizationId, org), or(eq(contactMergedKeys.contactId, id), eq(contactMergedKeys.sourceId, id)))),
      ctx.db.insert(erasures).values(started),
    );
    const events = live ? [newEvent(ctx, "contact.deleted", { object: { id }, previousAttributes: null, changes: null })] : [];
    // Their signing links stop first: from the moment `begin` commits, neither the contact nor a link shows them.
    await closeSigningLinks(ctx, scrubOf(person, false).recognizer);
    await commit(ctx, statements, events);
    authors = authored.map((t) => t.agentUserId);
    return started;
  });
  // The public feeds of the agents they reviewed show the author no more from the next read on.
  for (const agentUserId of new Set(authors)) purgeFeed(ctx, agentUserId);
  return runErasure(ctx, row);
}

/**
 * The steps after `begin`, each idempotent (a second run finds nothing left and counts nothing), then `finish`:
 * what was kept is counted, the erasure is `done` and its search strings are cleared. Answers the erasure.
 */
export async function runErasure(ctx: ServiceContext, row: ErasureRow): Promise<Erasure> {
  const person = row.subject;
  if (row.state === "done" || !person) return answerOf(row);
  const counted: Counted = (kind) =>
    ctx.db
      .update(erasures)
      // changes(): the rows the statement just before this one in the batch changed (a batch runs in order, on one connection).
      .set({
        erased: sql`json_set(${erasures.erased}, ${`$.${kind}`}, coalesce(json_extract(${erasures.erased}, ${`$.${kind}`}), 0) + changes())`,
      })
      .where(eq(erasures.id, row.id));
  // Every step below looks at everything again, so what each counts as kept is complete for this run.
  const scrub = scrubOf(person, !(await nameIsShared(ctx, person)));
  const who = scrub.recognizer;
  const documentsByName =
    (await eraseUnsignedEnvelopes(ctx, who, () => counted("envelopes"))) +
    (await eraseDocumentsNaming(ctx, who, () => counted("documents")));
  const nameMentions = (await scrubTrash(ctx, scrub, counted)) + (await scrubCopies(ctx, scrub, counted));
  // An organization export made before holds the person: every export zip of the organization goes.
  await deleteExportArchives(ctx, () => counted("exports"));
  const retainedCounts = countsOnly({
    signed_envelopes: await countSignedEnvelopes(ctx, who),
    clickwrap_acceptances: await countAcceptances(ctx, scrub),
    documents_by_name: documentsByName,
    name_mentions: nameMentions,
  });
  const finished = {
    state: "done" as const,
    subject: null,
    retained: Object.keys(retainedCounts),
    retainedCounts,
    touchedAt: new Date().toISOString(),
  };
  // The request's answer is kept in the batch that finishes (a retry after a reply lost there replays it: nothing is
  // left to find by then). The counts are the ones the steps above added up.
  const counts = await ctx.db.select({ erased: erasures.erased }).from(erasures).where(eq(erasures.id, row.id)).get();
  const [done] = (await commit(
    ctx,
    [
      ctx.db
        .update(erasures)
        .set(finished)
        .where(and(eq(erasures.id, row.id), eq(erasures.state, "pending")))
        .returning(),
    ],
    [],
    {
      answer: answerOf({ ...row, ...finished, erased: counts?.erased ?? row.erased }),
    },
  )) as ErasureRow[][];
  // A concurrent run (the cron and a retry) finished first: answer what it recorded.
  return answerOf(done?.[0] ?? (await ctx.db.select().from(erasures).where(eq(erasures.id, row.id)).get())!);
}

function answerOf(row: ErasureRow): Erasure {
  const counts = row.retainedCounts ?? {};
  const retained = RETAINED_KINDS.filter((k) => row.retained.includes(k));
  return {
    id: row.contactId,
    deleted: true as const,
    erased: countsOnly(row.erased),
    retained,
    retainedRecords: retained
      .filter((kind) => (counts[kind] ?? 0) > 0)
      .map((kind) => ({ kind, count: counts[kind]!, reason: RETAINED_REASONS[kind] })),
  };
}

/**
 * Cron: finishes erasures that stopped half-way (a failed step, a request that ended) and that no run has touched
 * for ERASURE_LEASE_MS, a few a pass. Each is claimed first (a compare-and-set on `touched_at`), so two passes do
 * not run one erasure side by side; a run that fails again is logged and taken up by a later pass.
 */
export async function resumeErasures(env: Env, db: Db, { now = new Date(), max = 5 } = {}): Promise<number> {
  const due = await db
    .select()
    .from(erasures)
    .where(and(eq(erasures.state, "pending"), lte(erasures.touchedAt, new Date(now.getTime() - ERASURE_LEASE_MS).toISOString())))
    .orderBy(asc(erasures.touchedAt))
    .limit(max);
  let finished = 0;
  for (const row of due) {
    const claimed = await db
      .update(erasures)
      .set({ touchedAt: now.toISOString() })
      .where(and(eq(erasures.id, row.id), eq(erasures.state, "pending"), eq(erasures.touchedAt, row.touchedAt!)))
      .returning({ id: erasures.id });
    if (claimed.length === 0) continue;
    const deferred: Promise<unknown>[] = [];
    try {
      await runErasure(
        systemContext(env, db, row.organizationId, `cron:erasure:${row.id}`, (work) => deferred.push(work)),
        row,
      );
      finished++;
    } catch (err) {
      createLogger().warn("erasure not finished; a later cron pass resumes it", { erasureId: row.id, error: loggableError(err) });
    }
    await Promise.allSettled(deferred);
  }
  return finished;
}

const countsOnly = (counts: Record<string, number>) => Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));

/** Clickwrap acceptances recorded under the person's id, e-mail or phone (or a name that is theirs alone). */
export async function acceptancesOf(ctx: ServiceContext, scrub: Scrub): Promise<(typeof clickwrapAcceptances.$inferSelect)[]> {
  const { person, recognizer: who } = scrub;
  const theirs: (typeof clickwrapAcceptances.$inferSelect)[] = [];
  for (let after = ""; ; ) {
    const page = await ctx.db
      .select()
      .from(clickwrapAcceptances)
      .where(
        and(
          eq(clickwrapAcceptances.organizationId, ctx.organizationId),
          gt(clickwrapAcceptances.id, after),
          mentionsAny(clickwrapAcceptances.subjectRef, who.needles),
        ),
      )
      .orderBy(asc(clickwrapAcceptances.id))
      .limit(PAGE);
    theirs.push(
      ...page.filter((a) => a.subjectRef === person.id || who.identifies(a.subjectRef) || (who.nameIsTheirs && who.names(a.subjectRef))),
    );
    if (page.length < PAGE) return theirs;
    after = page[page.length - 1]!.id;
  }
}

/** The person's clickwrap acceptances are immutable: counted and kept. */
const countAcceptances = async (ctx: ServiceContext, scrub: Scrub): Promise<number> => (await acceptancesOf(ctx, scrub)).length;

const PAGE = 200;

/**
 * Whether another contact of the organization, live or in the trash, has the person's full name (as the matcher
 * reads names: any case, Unicode form or spacing). Then a mention of the name alone may be theirs: it is not scrubbed,
 * and no record is deleted for it.
 */
export async function nameIsShared(ctx: ServiceContext, person: Person): Promise<boolean> {
  const name = matcherOf({ names: [person.fullName] });
  const same = (first: unknown, last: unknown) => replaceMentions(`${first} ${last}`, name, "").trim() === "";
  const org = ctx.organizationId;
  for (let after = ""; ; ) {
    const page = await ctx.db
      .select({ id: contacts.id, firstName: contacts.firstName, lastName: contacts.lastName })
      .from(contacts)
      .where(
        and(
          eq(contacts.organizationId, org),
          gt(contacts.id, after),
          ne(contacts.id, person.id),
          mentionsAny(sql`${contacts.firstName} || ' ' || ${contacts.lastName}`, name.needles),
        ),
      )
      .orderBy(asc(contacts.id))
      .limit(PAGE);
    if (page.some((c) => same(c.firstName, c.lastName))) return true;
    if (page.length < PAGE) break;
    after = page[page.length - 1]!.id;
  }
  const kept = (field: string) => sql.raw(`json_extract(${tableName(trashRows)}.row, '$.${field}')`);
  for (let after = ""; ; ) {
    const page = await ctx.db
      .select({ id: trashRows.recordId, firstName: sql<string>`${kept("firstName")}`, lastName: sql<string>`${kept("lastName")}` })
      .from(trashRows)
      .innerJoin(trashEntries, eq(trashEntries.recordId, trashRows.recordId))
      .where(
        and(
          eq(trashRows.organizationId, org),
          eq(trashRows.tableName, tableName(contacts)),
          eq(trashEntries.state, "trashed"),
          gt(trashRows.recordId, after),
          ne(trashRows.recordId, person.id),
          mentionsAny(sql`${kept("firstName")} || ' ' || ${kept("lastName")}`, name.needles),
        ),
      )
      .orderBy(asc(trashRows.recordId))
      .limit(PAGE);
    if (page.some((c) => same(c.firstName, c.lastName))) return true;
    if (page.length < PAGE) return false;
    after = page[page.length - 1]!.id;
  }
}

/** Referrals whose referred person is this one: the lead made from them, their e-mail or their phone (in any format). */
export const referredIs = (ctx: ServiceContext, person: Person) =>
  and(
    eq(referrals.organizationId, ctx.organizationId),
    or(
      eq(referrals.leadContactId, person.id),
      eq(referrals.referredEmailKey, person.emailKey),
      ...person.phones.map((phone) => phoneIs(referrals.referredContact, phone)),
    ),
  );

/** The column holds the phone, in whatever format: its digits, with or without the country code (or as written, when short). */
function phoneIs(column: SQLiteColumn, phone: string): SQL {
  const parts = phoneParts(phone);
  if (!parts) return eq(column, phone);
  return inJsonList(digitsOnly(column), [parts.national, ...(parts.cc ? [parts.cc + parts.national] : [])]);
}

/**
 * Leads kept for review (leads/reviews.ts) that carry one of the person's phone numbers: the contact's own, or one a
 * merge made theirs (`contact_merged_keys`, absorbed by them or theirs before they were merged), compared in E.164.
 */
export const reviewsWithNumbersOf = (ctx: ServiceContext, contact: ContactRecord) => {
  const own = [contact.phoneKey, contact.secondaryPhoneKey].filter((k): k is string => k !== null);
  const k = contactMergedKeys;
  const merged = sql`SELECT ${k.key} FROM ${k} WHERE ${k.organizationId} = ${ctx.organizationId} AND (${k.contactId} = ${contact.id} OR ${k.sourceId} = ${contact.id})`;
  return and(
    eq(leadReviews.organizationId, ctx.organizationId),
    sql`EXISTS (SELECT 1 FROM json_each(${leadReviews.phoneKeys}) n WHERE n.value IN (SELECT value FROM json_each(${JSON.stringify(own)})) OR n.value IN (${merged}))`,
  );
};

/** Survey invitations not mailed yet: they will never go. */
const unsentTo = (ctx: ServiceContext, id: string) =>
  and(
    eq(surveys.organizationId, ctx.organizationId),
    eq(surveys.recipientPersonId, id),
    inArray(surveys.status, ["SCHEDULED", "OPENED"]),
    isNull(surveys.sentAt),
  );

export const mailTo = (ctx: ServiceContext, person: Person) =>
  and(eq(mailOutbox.organizationId, ctx.organizationId), sql`lower(${mailOutbox.to}) = ${person.emailKey}`);
