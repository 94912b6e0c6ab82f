import { and, asc, eq, gt, ne, sql } from "drizzle-orm";
import { COPY_PAGE, type Copy, keepsName, namesPerson, rewriteCopies, rewriteItem, rewriteList } from "../crm/copies";
import type { Counted, Erasable, Person, Scrub } from "../crm/erasure";
import { tableName } from "../db/row-json";
import { contactActivities, contacts, contactTags, tags, trashEntries, trashRows } from "../db/schema";
import { expectRow, expectVersion, expectVersions, isGuardFailure, type Statement } from "../db/write";
import { newEvent } from "../events/outbox";
import { matcherOf, parseStructure, replaceMentions } from "../lib/mentions";
import { inJsonList, mentionsAny } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import { facetMoves } from "./facets";
import type { ContactRecord } from "./mapping";
import { bumpCounters, CONTACTS, tagStatements } from "./writes";

// The contacts' share of a person's erasure (crm/erasure.ts, erasure/erase.ts): the contact, its tags and activities
// in `begin`; later, the person named in other contacts' notes, activities and tags.

/** The person a contact is: what identifies them in copied text. */
export function personOf(c: ContactRecord): Person {
  const fullName = `${c.firstName} ${c.lastName}`;
  const phones = [c.phone, c.secondaryPhone].filter((w): w is string => typeof w === "string" && w.trim().length >= 2);
  return {
    id: c.id,
    emailKey: c.emailKey,
    fullName,
    phones,
    words: [fullName, c.email, ...phones].filter((w) => w.trim().length >= 2).sort((a, b) => b.length - a.length),
  };
}

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
      .limit(COPY_PAGE);
    if (page.some((c) => same(c.firstName, c.lastName))) return true;
    if (page.length < COPY_PAGE) break;
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
      .limit(COPY_PAGE);
    if (page.some((c) => same(c.firstName, c.lastName))) return true;
    if (page.length < COPY_PAGE) return false;
    after = page[page.length - 1]!.id;
  }
}

/** The fields of a contact object (in an event or a stored answer) that identify the person. */
const PERSONAL_FIELDS = ["firstName", "lastName", "email", "phone", "secondaryPhone", "address", "notes", "preferences"];

/** Other contacts' texts that may name the person (their own contact and activities went in `begin`). */
const COPIES: Copy[] = [
  { kind: "contact_notes", table: contacts, key: "id", column: "notes", versioned: true, listed: "contacts" },
  { kind: "contact_notes", table: contacts, key: "id", column: "preferences", versioned: true, listed: "contacts" },
  { kind: "contact_notes", table: contacts, key: "id", column: "address", versioned: true, listed: "contacts" },
  { kind: "activity_texts", table: contactActivities, key: "id", column: "description" },
  { kind: "activity_texts", table: contactActivities, key: "id", column: "metadata" },
];

export const contactsErasable: Erasable = {
  /**
   * The contact out, live (its tags leave the counts, its activities go) or in the trash (its kept rows, its
   * activities' and communications' among them, go with its entry), and a tombstone in its place. Its activities are
   * counted where they are, live beside it or kept in the trash with it.
   */
  begin(ctx, { id, contact, live, at }) {
    const org = ctx.organizationId;
    return {
      reads: [
        live
          ? ctx.db
              .select({ n: sql<number>`COUNT(*)` })
              .from(contactActivities)
              .where(and(eq(contactActivities.organizationId, org), eq(contactActivities.contactId, id)))
          : ctx.db
              .select({ n: sql<number>`COUNT(*)` })
              .from(trashRows)
              .where(and(eq(trashRows.recordId, id), eq(trashRows.tableName, tableName(contactActivities)))),
      ],
      write([activities]) {
        const statements: Statement[] = live
          ? [
              expectVersion(ctx.db, CONTACTS, org, contact),
              ...tagStatements(ctx, [{ contactId: id, before: contact.tags, after: [] }], at),
              ctx.db.delete(contactTags).where(and(eq(contactTags.contactId, id), eq(contactTags.organizationId, org))),
              ctx.db.delete(contactActivities).where(and(eq(contactActivities.organizationId, org), eq(contactActivities.contactId, id))),
              ctx.db.delete(contacts).where(and(eq(contacts.organizationId, org), eq(contacts.id, id))),
              bumpCounters(ctx, -1),
              ...facetMoves(ctx, contact, null),
            ]
          : [
              expectRow(
                ctx.db,
                trashEntries,
                and(eq(trashEntries.recordId, id), eq(trashEntries.organizationId, org), eq(trashEntries.state, "trashed")),
              ),
              ctx.db.delete(trashRows).where(eq(trashRows.recordId, id)),
            ];
        statements.push(
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
        );
        return {
          statements,
          erased: { contacts: 1, activities: (activities as { n: number }[])[0]!.n },
          events: live ? [newEvent(ctx, "contact.deleted", { object: { id }, previousAttributes: null, changes: null })] : [],
        };
      },
    };
  },
  async erase(ctx, scrub, counted) {
    return { name_mentions: (await rewriteCopies(ctx, scrub, counted, COPIES)) + (await dropTags(ctx, scrub, counted)) };
  },
  objects: [{ is: (obj, person) => obj.id === person.id, fields: PERSONAL_FIELDS }],
  trashedRow: { table: tableName(contacts), rewrite: withoutTagsNaming },
};

/**
 * Tags that name the person (by e-mail, phone, or a name that is theirs alone) are taken off every contact that
 * carries them, rather than rewritten: "friend of [erased]" would be one tag for every person ever erased. Each
 * page of carriers loses them under a compare-and-set on the versions read, and the tag counts move in the same
 * batch (writes.ts `tagStatements`), so counts stay exact; a tag nobody carries any more leaves the list.
 * A contact in the trash loses them from its kept row (`withoutTagsNaming`), so a restore does not bring them back.
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
      .limit(COPY_PAGE);
    for (const { name } of page) {
      if (namesPerson(name, scrub)) names.push(name);
      else if (keepsName(scrub, name)) byName++;
    }
    if (page.length < COPY_PAGE) break;
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
      .limit(COPY_PAGE);
    if (carriers.length === 0) break;
    const changes = carriers.map((c) => ({ contactId: c.id, before: c.tags, after: c.tags.filter((t) => !names.includes(t)) }));
    // contact_tags moves with contacts.tags in every write; should they ever disagree, stop rather than loop.
    if (changes.every((c) => c.after.length === c.before.length)) break;
    try {
      await ctx.db.batch([
        expectVersions(ctx.db, CONTACTS, org, carriers),
        ctx.db
          .update(contacts)
          .set({ tags: rewriteItem(1), version: sql`${contacts.version} + 1` })
          .from(rewriteList(changes.map((c) => JSON.stringify([c.contactId, c.after]))))
          .where(and(eq(contacts.organizationId, org), eq(contacts.id, rewriteItem(0)))),
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
