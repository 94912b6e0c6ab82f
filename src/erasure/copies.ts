import { and, asc, eq, getTableColumns, gt, isNotNull, ne, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import {
  agentProfiles,
  contactActivities,
  contactCommunications,
  contacts,
  contactTags,
  dealActivities,
  deals,
  dealTasks,
  idempotencyKeys,
  leadReviews,
  outboxEvents,
  properties,
  referrals,
  surveyResponses,
  tags,
  testimonials,
  trashEntries,
  trashRows,
  webhookDeliveries,
  webhookSubscriptions,
} from "../db/schema";
import { tableName } from "../db/row-json";
import { bumpResourceCounter, type ListResource } from "../crm/list-totals";
import { expectVersions, isGuardFailure, type Statement } from "../db/write";
import { removeFiles } from "../files/storage";
import { mentionedIn, parseStructure } from "../lib/mentions";
import { chunkBySize, inJsonList, mentionsAny } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import { purgeFeed } from "../reputation/feed-cache";
import { reportsPrefix } from "../files/keys";
import { bumpCounters, CONTACTS, tagStatements } from "../contacts/service";
import { redactJson, type Scrub } from "./redact";

/** Adds the rows the statement before it changed to the erasure's count of `kind` (erase.ts). */
export type Counted = (kind: string) => Statement;

/** An agent's public feed shows their testimonials and their profile: a rewrite of either purges it at once. */
const purgeTestimonialFeeds = async (ctx: ServiceContext, ids: string[]) => {
  const agents = await ctx.db
    .selectDistinct({ agentUserId: testimonials.agentUserId })
    .from(testimonials)
    .where(and(eq(testimonials.organizationId, ctx.organizationId), inJsonList(testimonials.id, ids)));
  for (const { agentUserId } of agents) purgeFeed(ctx, agentUserId);
};
const purgeProfileFeeds = async (ctx: ServiceContext, userIds: string[]) => {
  for (const userId of userIds) purgeFeed(ctx, userId);
};

/**
 * Text that may carry copies of the person, rewritten in place: event payloads, webhook bodies and filters, replayed
 * answers (JSON, redacted structurally), and the notes and texts the system, a form or an agent wrote about them
 * elsewhere (other contacts' notes, preferences, addresses, activities and communications, deals, their tasks and activities,
 * listings' texts, referrals, testimonials and agents' public profiles, the labels of other records in the
 * trash). `key` and `column` name the table's properties; `clear`: the column is emptied (NULL) rather than rewritten
 * (a testimonial's display name: "[erased]" is no name to show); `after`: what to do once rows changed (their
 * keys). Not here: uploaded files (a deal's documents, a listing's photos), whose names and bytes stay together in R2.
 */
const COPIES: {
  kind: string;
  table: SQLiteTable;
  key: string;
  column: string;
  versioned?: boolean;
  clear?: boolean;
  files?: (organizationId: string, key: string) => string;
  after?: (ctx: ServiceContext, keys: string[]) => Promise<void>;
}[] = [
  { kind: "events", table: outboxEvents, key: "id", column: "data" },
  { kind: "webhook_deliveries", table: webhookDeliveries, key: "id", column: "body" },
  { kind: "idempotency_records", table: idempotencyKeys, key: "key", column: "responseBody" },
  { kind: "webhook_subscriptions", table: webhookSubscriptions, key: "id", column: "filters", versioned: true },
  { kind: "webhook_subscriptions", table: webhookSubscriptions, key: "id", column: "description", versioned: true },
  { kind: "contact_notes", table: contacts, key: "id", column: "notes", versioned: true },
  { kind: "contact_notes", table: contacts, key: "id", column: "preferences", versioned: true },
  { kind: "contact_notes", table: contacts, key: "id", column: "address", versioned: true },
  { kind: "activity_texts", table: contactActivities, key: "id", column: "description" },
  { kind: "activity_texts", table: contactActivities, key: "id", column: "metadata" },
  // Other contacts' communications that name them (the person's own went with their contact).
  { kind: "communication_texts", table: contactCommunications, key: "id", column: "subject" },
  { kind: "communication_texts", table: contactCommunications, key: "id", column: "body" },
  { kind: "communication_texts", table: contactCommunications, key: "id", column: "metadata" },
  { kind: "deal_texts", table: deals, key: "id", column: "title", versioned: true },
  { kind: "deal_texts", table: deals, key: "id", column: "description", versioned: true },
  { kind: "deal_texts", table: deals, key: "id", column: "notes", versioned: true },
  { kind: "deal_texts", table: dealTasks, key: "id", column: "title" },
  { kind: "deal_texts", table: dealTasks, key: "id", column: "description" },
  { kind: "activity_texts", table: dealActivities, key: "id", column: "description" },
  { kind: "activity_texts", table: dealActivities, key: "id", column: "metadata" },
  // A listing sheet prints the marketing texts and features: the listing's reports go before its text is rewritten.
  { kind: "property_texts", table: properties, key: "id", column: "marketing", versioned: true, files: reportsPrefix },
  { kind: "property_texts", table: properties, key: "id", column: "features", versioned: true, files: reportsPrefix },
  { kind: "property_texts", table: properties, key: "id", column: "disclosure", versioned: true },
  { kind: "property_texts", table: properties, key: "id", column: "hoa", versioned: true },
  { kind: "property_texts", table: properties, key: "id", column: "media", versioned: true },
  { kind: "property_texts", table: properties, key: "id", column: "listing", versioned: true },
  { kind: "referral_notes", table: referrals, key: "id", column: "notes", versioned: true },
  { kind: "referral_notes", table: referrals, key: "id", column: "referredName", versioned: true },
  { kind: "testimonial_texts", table: testimonials, key: "id", column: "headline", versioned: true, after: purgeTestimonialFeeds },
  { kind: "testimonial_texts", table: testimonials, key: "id", column: "body", versioned: true, after: purgeTestimonialFeeds },
  // Imported reviews have no author id: a display name that is theirs is theirs all the same (the public feed shows it).
  {
    kind: "testimonial_texts",
    table: testimonials,
    key: "id",
    column: "displayName",
    versioned: true,
    clear: true,
    after: purgeTestimonialFeeds,
  },
  { kind: "testimonial_texts", table: testimonials, key: "id", column: "rejectionReason", versioned: true },
  { kind: "agent_profiles", table: agentProfiles, key: "userId", column: "draftConfig", versioned: true },
  { kind: "agent_profiles", table: agentProfiles, key: "userId", column: "publishedConfig", versioned: true, after: purgeProfileFeeds },
  { kind: "survey_answers", table: surveyResponses, key: "surveyId", column: "answers" },
  { kind: "trash_labels", table: trashEntries, key: "recordId", column: "label" },
  // Leads waiting for review whose message names them (those with their numbers went in `begin`).
  { kind: "lead_review_texts", table: leadReviews, key: "id", column: "message" },
];

/**
 * A rewrite of a listed record moves its list's version, as every write of one does: a total cached before it
 * (crm/list-totals.ts) would still count the text it takes out (a search of the name in another contact's notes).
 */
const LISTED = new Map<SQLiteTable, ListResource>([
  [contacts, "contacts"],
  [deals, "deals"],
  [properties, "properties"],
]);

const PAGE = 200;
/** One rewrite statement carries at most this much text (D1 binds a value of up to 2 MB; old and new are both in it). */
const MAX_REWRITE_CHARS = 512 * 1024;

/** The rows a rewrite names, as one JSON parameter its statement joins (json_each) by position. */
const rewriteList = (chunk: string[]) => sql`json_each(${`[${chunk.join(",")}]`}) AS j`;
const item = (i: number) => sql.raw(`json_extract(j.value, '$[${i}]')`);

/** Whether text the erasure leaves as it is still names the name (kept: another contact has it), for `name_mentions`. */
const keepsName = (scrub: Scrub, text: string | null) => !scrub.recognizer.nameIsTheirs && scrub.recognizer.names(text);

/**
 * Rewrites the organization's rows that mention the person (their e-mail, phone, and full name when it is theirs
 * alone; their id finds the contact objects of payloads), page by page, and drops the tags that name them. Each
 * rewrite is a compare-and-set on the text it was computed from (an agent's edit in between is theirs to keep) and
 * goes in one batch with its count. Idempotent: a second run finds nothing left to change and counts nothing.
 * Answers how many rows still name the name because another contact has it (each run counts them all anew).
 */
export async function scrubCopies(ctx: ServiceContext, scrub: Scrub, counted: Counted): Promise<number> {
  let byName = 0;
  for (const p of COPIES) {
    const columns = getTableColumns(p.table) as Record<string, SQLiteColumn>;
    const key = columns[p.key]!;
    const column = columns[p.column]!;
    const organizationId = columns.organizationId!;
    for (let after = ""; ; ) {
      const results: { k: string; t: string }[] = await ctx.db
        .select({ k: sql<string>`${key}`, t: sql<string>`${column}` })
        .from(p.table)
        .where(
          and(
            eq(organizationId, ctx.organizationId),
            gt(key, after),
            ne(key, scrub.person.id),
            isNotNull(column),
            mentionsAny(column, scrub.recognizer.needles),
          ),
        )
        .orderBy(asc(key))
        .limit(PAGE);
      const changed = results.flatMap((r) => {
        const next = redactJson(r.t, scrub);
        if (next === r.t) return keepsName(scrub, r.t) ? (byName++, []) : [];
        if (keepsName(scrub, next) && !p.clear) byName++;
        return [{ ...r, next: p.clear ? null : next }];
      });
      // Files made from the text go first: a failure leaves the text, and so the row, for the next run to find.
      if (p.files) for (const r of changed) await removeFiles(ctx.files, [], p.files(ctx.organizationId, r.k));
      const rewrites = changed.map((r) => JSON.stringify([r.k, r.t, r.next]));
      const listed = LISTED.get(p.table);
      for (const chunk of chunkBySize(rewrites, MAX_REWRITE_CHARS)) {
        const set: Record<string, SQL> = { [p.column]: item(2), ...(p.versioned ? { version: sql`${columns.version} + 1` } : {}) };
        await ctx.db.batch([
          ctx.db
            .update(p.table)
            .set(set)
            .from(rewriteList(chunk))
            .where(and(eq(organizationId, ctx.organizationId), eq(key, item(0)), eq(column, item(1)))),
          counted(p.kind),
          ...(listed ? [bumpResourceCounter(ctx.db, ctx.organizationId, listed, 0)] : []),
        ]);
      }
      if (p.after && changed.length > 0)
        await p.after(
          ctx,
          changed.map((r) => r.k),
        );
      if (results.length < PAGE) break;
      after = results[results.length - 1]!.k;
    }
  }
  return byName + (await dropTags(ctx, scrub, counted));
}

/**
 * Tags that name the person (by e-mail, phone, or a name that is theirs alone) are taken off every contact that
 * carries them, rather than rewritten: "friend of [erased]" would be one tag for every person ever erased. Each
 * page of carriers loses them under a compare-and-set on the versions read, and the tag counts move in the same
 * batch (contacts/writes.ts `tagStatements`), so counts stay exact; a tag nobody carries any more leaves the list.
 * A contact in the trash loses them from its kept row (`scrubTrash`), so a restore does not bring them back.
 * Answers how many tags name the name alone and stay (another contact has it).
 */
async function dropTags(ctx: ServiceContext, scrub: Scrub, counted: Counted): Promise<number> {
  const org = ctx.organizationId;
  const names: string[] = [];
  let byName = 0;
  for (let after = ""; ; ) {
    const page = await ctx.db
      .select({ name: tags.name })
      .from(tags)
      .where(and(eq(tags.organizationId, org), gt(tags.name, after), mentionsAny(tags.name, scrub.recognizer.needles)))
      .orderBy(asc(tags.name))
      .limit(PAGE);
    for (const { name } of page) {
      if (namesPerson(name, scrub)) names.push(name);
      else if (keepsName(scrub, name)) byName++;
    }
    if (page.length < PAGE) break;
    after = page[page.length - 1]!.name;
  }
  for (let lost = 0; names.length > 0; ) {
    const carriers = await ctx.db
      .select({ id: contacts.id, tags: contacts.tags, version: contacts.version })
      .from(contacts)
      .where(
        and(
          eq(contacts.organizationId, org),
          sql`EXISTS (SELECT 1 FROM ${contactTags} ct WHERE ct.contact_id = ${contacts.id} AND ${inJsonList(sql`ct.tag`, names)})`,
        ),
      )
      .orderBy(asc(contacts.id))
      .limit(PAGE);
    if (carriers.length === 0) break;
    const changes = carriers.map((c) => ({ contactId: c.id, before: c.tags, after: c.tags.filter((t) => !names.includes(t)) }));
    // contact_tags moves with contacts.tags in every write; should they ever disagree, stop rather than loop.
    if (changes.every((c) => c.after.length === c.before.length)) break;
    try {
      await ctx.db.batch([
        expectVersions(ctx.db, CONTACTS, org, carriers),
        ctx.db
          .update(contacts)
          .set({ tags: item(1), version: sql`${contacts.version} + 1` })
          .from(rewriteList(changes.map((c) => JSON.stringify([c.contactId, c.after]))))
          .where(and(eq(contacts.organizationId, org), eq(contacts.id, item(0)))),
        counted("tags"),
        ...tagStatements(ctx, changes, new Date().toISOString()),
        bumpCounters(ctx, 0),
      ]);
    } catch (err) {
      // A carrier changed after it was read (an agent's edit): read the page again.
      if (!isGuardFailure(err) || ++lost >= 5) throw err;
    }
  }
  return byName;
}

/** Whether a tag (or any short text) names the person as this run redacts them. */
const namesPerson = (text: string, scrub: Scrub) => mentionedIn(text, scrub.redacted);

/** A trashed contact's kept row without the tags that name the person (the row's `tags` is JSON text inside its JSON). */
function withoutTagsNaming(row: string, scrub: Scrub): string {
  const parsed = JSON.parse(row) as Record<string, unknown>;
  const list =
    typeof parsed.tags === "string" ? (parseStructure(parsed.tags) as unknown[] | undefined) : (parsed.tags as unknown[] | undefined);
  if (!Array.isArray(list)) return row;
  const kept = list.filter((t) => typeof t !== "string" || !namesPerson(t, scrub));
  if (kept.length === list.length) return row;
  return JSON.stringify({ ...parsed, tags: typeof parsed.tags === "string" ? JSON.stringify(kept) : kept });
}

/**
 * The kept rows of other records in the trash (each the JSON of a row, crm/trash.ts) that name the person,
 * redacted structurally like the copies above (a trashed contact's tags that name them dropped, as `dropTags` does
 * for the live ones): a restore writes back what is kept, so it brings back no name. Walked in key order on the
 * organization's index (`trash_rows_org_idx`). Answers how many kept rows still name the name (another contact has it).
 */
export async function scrubTrash(ctx: ServiceContext, scrub: Scrub, counted: Counted): Promise<number> {
  let byName = 0;
  for (let after: [string, number] | null = null; ; ) {
    const rows: { recordId: string; seq: number; tableName: string; row: string }[] = await ctx.db
      .select({ recordId: trashRows.recordId, seq: trashRows.seq, tableName: trashRows.tableName, row: trashRows.row })
      .from(trashRows)
      .where(
        and(
          eq(trashRows.organizationId, ctx.organizationId),
          ne(trashRows.recordId, scrub.person.id),
          after ? sql`(${trashRows.recordId}, ${trashRows.seq}) > (${after[0]}, ${after[1]})` : undefined,
          mentionsAny(trashRows.row, scrub.recognizer.needles),
        ),
      )
      .orderBy(asc(trashRows.recordId), asc(trashRows.seq))
      .limit(PAGE);
    const rewrites = rows.flatMap((r) => {
      const next = redactJson(r.tableName === tableName(contacts) ? withoutTagsNaming(r.row, scrub) : r.row, scrub);
      if (keepsName(scrub, next)) byName++;
      return next === r.row ? [] : [JSON.stringify([r.recordId, r.seq, r.row, next])];
    });
    for (const chunk of chunkBySize(rewrites, MAX_REWRITE_CHARS)) {
      await ctx.db.batch([
        ctx.db
          .update(trashRows)
          .set({ row: item(3) })
          .from(rewriteList(chunk))
          .where(and(eq(trashRows.recordId, item(0)), eq(trashRows.seq, item(1)), eq(trashRows.row, item(2)))),
        counted("trash_rows"),
      ]);
    }
    if (rows.length < PAGE) break;
    const last = rows[rows.length - 1]!;
    after = [last.recordId, last.seq];
  }
  return byName;
}
