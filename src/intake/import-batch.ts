import { and, eq } from "drizzle-orm";
import { contacts } from "../db/schema";
import { insertRowsFromJson } from "../db/row-json";
import { expectNoRow, expectVersions, type Statement } from "../db/write";
import { inJsonList } from "../lib/sql";
import { contactTermsOf } from "../lib/search-terms";
import { writeTermsInBatch } from "../db/search-bulk";
import { phoneKey, regionOf } from "../lib/phone";
import type { ServiceContext } from "../service-context";
import type { ContactCreate, ContactUpdate } from "../contacts/schemas";
import {
  applyInput,
  blankContact,
  bumpCounters,
  CONTACTS,
  type ContactRecord,
  facetMovesOfMany,
  NO_ACTIVITY,
  readForWrite,
  type TagChange,
  tagStatements,
  uniqueTags,
  updateContactStatement,
} from "../contacts/service";
import { emailKey, matchContacts } from "./matching";

/**
 * Contacts written many at a time (an import's chunk): the rows and statements of a chunk's creates and
 * updates, built with the same `applyInput`, tag, facet and counter statements as one contact's write, so every
 * count stays exact, but with no per-contact event (a bulk load is not 100,000 deliveries). The caller commits them
 * in one batch with its own progress; a lost race (a guard) fails the whole batch and the caller plans again.
 */
export type DuplicateRule = "skip" | "update" | "merge";

export interface IncomingContact {
  /** Validated through ContactCreate: a new contact needs every field it requires. */
  input: ContactCreate;
  /** Every e-mail and phone of the row, for matching (the input's first). */
  emails: string[];
  phones: string[];
}

export type ImportOutcome = "created" | "updated" | "skipped";

export interface ContactImportPlan {
  statements: Statement[];
  outcomes: ImportOutcome[];
}

const blank = (v: unknown) => v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0);

/**
 * The part of a row that changes an existing contact: `update` takes the row's non-blank values (tags are added,
 * never removed), `merge` only fills what the contact lacks. The e-mail an import matched by never changes.
 */
function changeOf(existing: ContactRecord, input: ContactCreate, rule: DuplicateRule): ContactUpdate {
  const out: Record<string, unknown> = {};
  const current = existing as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(input)) {
    if (key === "email" || blank(value)) continue;
    if (key === "tags") {
      if (rule === "update" || existing.tags.length === 0) out.tags = uniqueTags([...existing.tags, ...(value as string[])]);
    } else if (key === "address") {
      const was = (existing.address ?? {}) as Record<string, unknown>;
      const row = value as Record<string, unknown>;
      const merged = { ...was };
      for (const [k, v] of Object.entries(row)) if (!blank(v) && (rule === "update" || blank(was[k]))) merged[k] = v;
      out.address = merged;
    } else if (rule === "update" || blank(current[key])) out[key] = value;
  }
  return out as ContactUpdate;
}

/** A row's custom field values (checked by the import against the definitions) on the record: `update` overwrites, `merge` fills keys it lacks. */
function withImportedValues(record: ContactRecord, input: ContactCreate, rule: DuplicateRule): ContactRecord {
  const values = Object.fromEntries(Object.entries(input.customFields ?? {}).filter(([, v]) => v !== null && v !== "")) as NonNullable<
    ContactRecord["customFields"]
  >;
  if (Object.keys(values).length === 0) return record;
  const mine = record.customFields ?? {};
  return { ...record, customFields: rule === "merge" ? { ...values, ...mine } : { ...mine, ...values } };
}

const sameRecord = (a: ContactRecord, b: ContactRecord) =>
  JSON.stringify({ ...a, updatedAt: "", version: 0 }) === JSON.stringify({ ...b, updatedAt: "", version: 0 });

/**
 * Plans one chunk of incoming contacts (at most 500: one match query). A person matching a contact (or one created
 * earlier in the same chunk) is skipped, updated or merged by `rule`; a matched row that changes nothing is skipped.
 */
export async function planContactImport(ctx: ServiceContext, people: IncomingContact[], rule: DuplicateRule): Promise<ContactImportPlan> {
  const now = new Date();
  const at = now.toISOString();
  const region = regionOf(ctx);
  // Lead intake's matching (matching.ts): by any e-mail, case-folded, or any phone in E.164; an e-mail match wins.
  const matches = (await matchContacts(ctx, people)).map((m) => m.contact);
  const matchedIds = [...new Set(matches.filter((m) => m !== null).map((m) => m!.id))];
  // The matched contacts as a write starts from them (with the activity figures a computed score needs).
  const { rows, figures } =
    rule === "skip" || matchedIds.length === 0 ? { rows: [] as ContactRecord[], figures: new Map() } : await readForWrite(ctx, matchedIds);
  const before = new Map(rows.map((r) => [r.id, r]));
  const current = new Map<string, ContactRecord>(rows.map((r) => [r.id, r]));
  const createdByKey = new Map<string, ContactRecord>();
  const created: ContactRecord[] = [];
  const outcomes: ImportOutcome[] = [];

  for (let i = 0; i < people.length; i++) {
    const person = people[i]!;
    // A person created earlier in this chunk is matched as the database would match them: e-mail first, then phone.
    const keys = [...person.emails.map(emailKey), ...person.phones.flatMap((n) => phoneKey(n, region) ?? [])];
    const earlier = keys.map((k) => createdByKey.get(k)).find((c) => c !== undefined);
    const match = earlier ?? (matches[i] ? (current.get(matches[i]!.id) ?? matches[i]!) : null);
    if (!match) {
      const input = person.input;
      const record = withImportedValues(
        applyInput(blankContact(ctx, { firstName: "", lastName: "", email: input.email }, at), input, NO_ACTIVITY, now, region),
        input,
        "update",
      );
      created.push(record);
      for (const k of [...keys, record.emailKey, record.phoneKey, record.secondaryPhoneKey])
        if (k && !createdByKey.has(k)) createdByKey.set(k, record);
      outcomes.push("created");
      continue;
    }
    if (rule === "skip") {
      outcomes.push("skipped");
      continue;
    }
    const next = withImportedValues(
      applyInput(match, changeOf(match, person.input, rule), figures.get(match.id) ?? NO_ACTIVITY, now, region),
      person.input,
      rule,
    );
    if (sameRecord(next, match)) {
      outcomes.push("skipped");
      continue;
    }
    if (earlier) {
      Object.assign(earlier, next);
    } else {
      const base = before.get(match.id)!;
      current.set(match.id, { ...next, updatedAt: at, version: base.version + 1 });
    }
    outcomes.push("updated");
  }

  const updates = [...current.values()]
    .filter((c) => c.version !== before.get(c.id)!.version)
    .map((after) => ({ before: before.get(after.id)!, after }));
  const tagChanges: TagChange[] = [
    ...created.filter((c) => c.tags.length > 0).map((c) => ({ contactId: c.id, before: [], after: c.tags })),
    ...updates.map(({ before: b, after: a }) => ({ contactId: a.id, before: b.tags, after: a.tags })),
  ];
  const statements: Statement[] = [];
  if (updates.length)
    statements.push(
      expectVersions(
        ctx.db,
        CONTACTS,
        ctx.organizationId,
        updates.map((u) => u.before),
      ),
    );
  if (created.length) {
    // Another writer (a lead, another import) may take one of these e-mails meanwhile: the batch then fails as a lost race.
    statements.push(
      expectNoRow(
        ctx.db,
        contacts,
        and(
          eq(contacts.organizationId, ctx.organizationId),
          inJsonList(
            contacts.emailKey,
            created.map((c) => c.emailKey),
          ),
        ),
      ),
    );
    statements.push(...insertRowsFromJson(ctx.db, contacts, created as unknown as Record<string, unknown>[]));
  }
  statements.push(...updates.map(({ before: b, after: a }) => updateContactStatement(ctx, b, a)));
  statements.push(...tagStatements(ctx, tagChanges, at));
  if (created.length || updates.length) statements.push(bumpCounters(ctx, created.length));
  statements.push(...facetMovesOfMany(ctx, [...created.map((c) => ({ before: null, after: c })), ...updates]));
  // The index's terms of the written contacts, folded here rather than by the triggers in SQL (migration 0019).
  const written = [...created, ...updates.map((u) => u.after)].map((c) => ({ id: c.id, terms: contactTermsOf(c) }));
  return {
    statements: writeTermsInBatch(
      ctx.db,
      ctx.organizationId,
      "contact",
      statements,
      written,
      updates.map((u) => u.after.id),
    ),
    outcomes,
  };
}
