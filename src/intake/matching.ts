import { and, eq, type SQL } from "drizzle-orm";
import { union } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import { contactMergedKeys, contacts } from "../db/schema";
import { phoneKey, regionOf } from "../lib/phone";
import { inJsonList } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import type { ContactRecord } from "../contacts/service";

/** Who a lead or an imported row is, as given: any number of e-mails and phones, written any way. */
export interface PersonKeys {
  emails: string[];
  phones: string[];
}

export interface ContactMatch {
  contact: ContactRecord | null;
  matchedBy: "email" | "phone" | null;
  /** Other contacts one of the person's phones names: the e-mail's match won over them (or an earlier contact did). */
  conflicts: string[];
}

/** An e-mail as the contacts' unique e-mail key holds it (and every match looks it up): case-folded. */
export const emailKey = (email: string): string => email.trim().toLowerCase();

/** The most people one call matches: their keys travel as three JSON parameters of one statement. */
export const MAX_MATCH_PEOPLE = 500;

/**
 * The contacts of the organization with one of `emails` or `phones` (keys): one indexed lookup per kind of key, joined.
 * As one WHERE with an OR of the three, SQLite walked every contact of the organization (an import's chunk on 100,000
 * contacts read all 100,000; test/intake/contacts-matching.test.ts holds the plan).
 */
function matchQuery(db: Db, organizationId: string, emails: string[], phones: string[]) {
  const by = (where: SQL) =>
    db
      .select()
      .from(contacts)
      .where(and(eq(contacts.organizationId, organizationId), where));
  return union(
    by(inJsonList(contacts.emailKey, emails)),
    by(inJsonList(contacts.phoneKey, phones)),
    by(inJsonList(contacts.secondaryPhoneKey, phones)),
  );
}

/** The live contacts that absorbed one of `keys` in a merge (merge/merge.ts), each with the key it absorbed. */
function absorbedQuery(db: Db, organizationId: string, keys: string[]) {
  const k = contactMergedKeys;
  return db
    .select({ key: k.key, contact: contacts })
    .from(k)
    .innerJoin(contacts, and(eq(contacts.organizationId, k.organizationId), eq(contacts.id, k.contactId)))
    .where(and(eq(k.organizationId, organizationId), inJsonList(k.key, keys)));
}

/**
 * The organization's live contacts that `people` already are (lead intake and imports match alike), in one
 * D1 round trip for the whole list. An e-mail matches case-folded, as the unique e-mail key stores it; a phone matches
 * either phone of a contact in E.164, numbers without a country code read in the organization's region; after a
 * contact's own keys, those of contacts merged into it (merge/merge.ts). An e-mail match wins over a phone match; among
 * several phone matches the oldest contact wins. The others a phone named are `conflicts`, for the caller to show.
 */
export async function matchContacts(ctx: ServiceContext, people: PersonKeys[]): Promise<ContactMatch[]> {
  if (people.length > MAX_MATCH_PEOPLE) throw new RangeError(`matchContacts takes at most ${MAX_MATCH_PEOPLE} people per call`);
  const region = regionOf(ctx);
  const keyed = people.map((p) => ({
    emails: [...new Set(p.emails.map(emailKey).filter(Boolean))],
    phones: [...new Set(p.phones.map((n) => phoneKey(n, region)).filter((k): k is string => k !== null))],
  }));
  const emails = [...new Set(keyed.flatMap((p) => p.emails))];
  const phones = [...new Set(keyed.flatMap((p) => p.phones))];
  if (emails.length === 0 && phones.length === 0) return people.map(() => ({ contact: null, matchedBy: null, conflicts: [] }));
  const [rows, absorbed] = await ctx.db.batch([
    matchQuery(ctx.db, ctx.organizationId, emails, phones),
    absorbedQuery(ctx.db, ctx.organizationId, [...emails, ...phones]),
  ]);
  const byEmail = new Map(rows.map((r) => [r.emailKey, r]));
  const byMerged = new Map(absorbed.map((r) => [r.key, r.contact]));
  const oldestFirst = [...rows].sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1));
  return keyed.map(({ emails: mine, phones: myPhones }) => {
    // A contact's own e-mail first, then one it absorbed in a merge; phones alike, after every e-mail.
    const emailMatch =
      mine.map((e) => byEmail.get(e)).find((r) => r !== undefined) ?? mine.map((e) => byMerged.get(e)).find((r) => r !== undefined) ?? null;
    const phoneMatches = oldestFirst.filter(
      (r) =>
        (r.phoneKey !== null && myPhones.includes(r.phoneKey)) || (r.secondaryPhoneKey !== null && myPhones.includes(r.secondaryPhoneKey)),
    );
    for (const r of myPhones.flatMap((p) => byMerged.get(p) ?? [])) if (!phoneMatches.some((m) => m.id === r.id)) phoneMatches.push(r);
    const contact = emailMatch ?? phoneMatches[0] ?? null;
    return {
      contact,
      matchedBy: emailMatch ? "email" : contact ? "phone" : null,
      conflicts: phoneMatches.filter((r) => r.id !== contact?.id).map((r) => r.id),
    };
  });
}
