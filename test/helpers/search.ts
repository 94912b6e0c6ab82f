import { contactTermsOf, phoneTerms, termsOf } from "../../src/lib/search-terms";
import type { ContactJson } from "./contacts";

/** The terms the index should hold for a contact as the API shows it (names, e-mail, tags as stored, notes, phones), sorted. */
export const contactTerms = (c: ContactJson): string[] =>
  contactTermsOf({
    firstName: c.firstName,
    lastName: c.lastName,
    email: c.email,
    tags: c.tags,
    notes: c.notes,
    phone: c.phone,
    secondaryPhone: c.secondaryPhone,
  }).sort();

/** Every term the index holds for `organizationId` on a shard, as `kind record term`, sorted. */
export async function indexRows(db: D1Database, organizationId: string): Promise<string[]> {
  const rows = await db
    .prepare("SELECT kind, record_id AS id, term FROM search_terms WHERE organization_id = ?")
    .bind(organizationId)
    .all<{ kind: string; id: string; term: string }>();
  return rows.results.map((r) => `${r.kind} ${r.id} ${r.term}`).sort();
}

/** One record's terms in the index, sorted. */
export async function termsIndexed(db: D1Database, recordId: string): Promise<string[]> {
  const rows = await db.prepare("SELECT term FROM search_terms WHERE record_id = ?").bind(recordId).all<{ term: string }>();
  return rows.results.map((r) => r.term).sort();
}

/**
 * The terms of a person's own name, e-mail and phone that the organization's index still holds (an erasure must
 * leave none): their names' words, their e-mail's words but its domain's, their phone's digits.
 */
export async function personalTermsIndexed(
  db: D1Database,
  organizationId: string,
  person: { firstName: string; lastName: string; email: string; phone: string },
): Promise<string[]> {
  const personal = [...termsOf(`${person.firstName} ${person.lastName} ${person.email.split("@")[0]}`), ...phoneTerms(person.phone)];
  const rows = await db
    .prepare("SELECT DISTINCT term FROM search_terms WHERE organization_id = ? AND term IN (SELECT value FROM json_each(?))")
    .bind(organizationId, JSON.stringify(personal))
    .all<{ term: string }>();
  return rows.results.map((r) => r.term).sort();
}
