import { and, eq, isNotNull, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { bumpResourceCounter } from "../crm/list-totals";
import { archiveRows, trashEntry } from "../crm/trash";
import { tableName } from "../db/row-json";
import {
  contactActivities,
  contactCommunications,
  contactMergedKeys,
  contacts,
  deals,
  referrals,
  surveys,
  testimonials,
  trashEntries,
  trashRows,
} from "../db/schema";
import { expectVersionMatch, expectVersions, type Statement, versioned, withRetries } from "../db/write";
import { commit } from "../events/commit";
import { newEvent } from "../events/outbox";
import { type FieldIssue, NotFound, Validation } from "../lib/errors";
import { phoneKey, regionOf } from "../lib/phone";
import { inJsonList } from "../lib/sql";
import type { ServiceContext } from "../service-context";
import { type Contact, type ContactUpdate, MAX_TAGS } from "../contacts/schemas";
import {
  type ActivityFigures,
  applyInput,
  bumpCounters,
  changeEvents,
  CONTACTS,
  type ContactRecord,
  facetMoves,
  mergedConflict,
  tagStatements,
  toContact,
  uniqueTags,
  updateContactStatement,
  writeReads,
} from "../contacts/service";

/**
 * POST /v1/contacts/{id}/merge: the sources' records move onto the target and the sources go to the trash, in one
 * guarded batch (the target and every source at the versions read, so a concurrent write of any of them makes the
 * merge read again, and a write of a source after the merge finds it gone). Moved: activities, communications,
 * deals, testimonials they wrote, surveys sent to them, referrals they made or that made them, and deals of theirs
 * waiting in the trash; tags are united (counts exact). The target's empty fields are filled from the sources, the
 * first source first (`mergedInput`); its lead score follows its rule with every moved activity counted. Emits
 * contact.updated for the target (with `mergedFrom`) and contact.deleted per source (with `mergedInto`).
 * 404 for an unknown target, 422 `invalid_reference` naming each unknown source, 409 `merged_contact` for a source
 * already merged.
 */
export async function mergeContacts(ctx: ServiceContext, id: string, sourceIds: string[]): Promise<Contact> {
  const self = sourceIds.indexOf(id);
  if (self >= 0)
    throw new Validation([
      { field: `sourceIds.${self}`, path: ["sourceIds", self], code: "same_as_target", message: "A contact cannot be merged into itself" },
    ]);
  const org = ctx.organizationId;
  return withRetries(async () => {
    const [rows, figureRows, merged] = await ctx.db.batch([
      ...writeReads(ctx.db, org, [id, ...sourceIds]),
      ctx.db
        .select({ id: trashEntries.recordId, mergedInto: trashEntries.mergedInto })
        .from(trashEntries)
        .where(and(eq(trashEntries.organizationId, org), inJsonList(trashEntries.recordId, sourceIds), isNotNull(trashEntries.mergedInto))),
    ]);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const target = byId.get(id);
    if (!target) throw new NotFound("Contact");
    expectVersionMatch(ctx, target.version);
    const unknown: FieldIssue[] = sourceIds.flatMap((s, i) =>
      byId.has(s) || merged.some((m) => m.id === s)
        ? []
        : [
            {
              field: `sourceIds.${i}`,
              path: ["sourceIds", i],
              code: "invalid_reference",
              message: "No contact with this id in your organization",
            },
          ],
    );
    if (unknown.length) throw new Validation(unknown);
    const gone = merged.find((m) => !byId.has(m.id));
    if (gone) throw mergedConflict(gone.id, gone.mergedInto!);
    const sources = sourceIds.map((s) => byId.get(s)!);

    const now = new Date();
    const at = now.toISOString();
    const figures = sumFigures(figureRows);
    const base = { ...target, lastContactedAt: latest([target, ...sources].map((c) => c.lastContactedAt)) };
    const after: ContactRecord = {
      ...applyInput(base, mergedInput(target, sources, regionOf(ctx)), figures, now, regionOf(ctx)),
      customFields: mergedCustomFields(target, sources),
      updatedAt: at,
      version: target.version + 1,
    };
    const mergedFrom = sourceIds;
    const changed = changeEvents(ctx, target, after);
    const events = [
      ...(changed.length
        ? changed
        : [newEvent(ctx, "contact.updated", { object: toContact(after), previousAttributes: {}, changes: [] })]
      ).map((e) => (e.type === "contact.updated" ? { ...e, data: { ...e.data, mergedFrom } } : e)),
      ...sources.map((s) =>
        newEvent(ctx, "contact.deleted", { object: { id: s.id }, previousAttributes: null, changes: null, mergedInto: id }),
      ),
    ];
    const answer = versioned(toContact(after), after.version);
    await commit(
      ctx,
      [
        expectVersions(ctx.db, CONTACTS, org, [target, ...sources]),
        ...moveRecords(ctx, sourceIds, id, at),
        ...tagStatements(
          ctx,
          [
            { contactId: id, before: target.tags, after: after.tags },
            ...sources.map((s) => ({ contactId: s.id, before: s.tags, after: [] })),
          ],
          at,
        ),
        updateContactStatement(ctx, target, after),
        ...sources.flatMap((s) => [
          ...archiveRows(ctx, s.id, contacts, and(eq(contacts.organizationId, org), eq(contacts.id, s.id))),
          trashEntry(ctx, "contact", s.id, `${s.firstName} ${s.lastName}`, { now, mergedInto: id }),
        ]),
        ...keepKeys(ctx, id, sources),
        bumpCounters(ctx, -sources.length),
        ...facetMoves(ctx, target, after),
        ...sources.flatMap((s) => facetMoves(ctx, s, null)),
      ],
      events,
      { answer },
    );
    return answer;
  });
}

/**
 * The sources' e-mails and phones, and the keys they had absorbed in merges of their own, become the target's
 * (`contact_merged_keys`): a lead or an import row that still names the merged person by them matches the target.
 */
function keepKeys(ctx: ServiceContext, to: string, sources: ContactRecord[]): Statement[] {
  const org = ctx.organizationId;
  const keys = sources.flatMap((s) => [s.emailKey, s.phoneKey, s.secondaryPhoneKey].flatMap((key) => (key ? [[key, s.id]] : [])));
  const t = contactMergedKeys;
  return [
    ctx.db
      .update(t)
      .set({ contactId: to })
      .where(
        and(
          eq(t.organizationId, org),
          inJsonList(
            t.contactId,
            sources.map((s) => s.id),
          ),
        ),
      ),
    ...(keys.length
      ? [
          ctx.db
            .insert(t)
            .select(
              sql`SELECT ${org}, json_extract(value, '$[0]'), ${to}, json_extract(value, '$[1]') FROM json_each(${JSON.stringify(keys)}) WHERE true`,
            )
            .onConflictDoUpdate({ target: [t.organizationId, t.key], set: { contactId: to, sourceId: sql`excluded.source_id` } }),
        ]
      : []),
  ];
}

/** Fields a merge fills when the target has none (whole values: an address is not stitched from two); custom fields key by key. */
const FILLED = ["address", "source", "notes", "preferences", "assignedTo"] as const;
const PHONES = ["phone", "secondaryPhone"] as const;

const isEmpty = (v: unknown) =>
  v === null || v === undefined || (typeof v === "string" && v.trim() === "") || (typeof v === "object" && Object.keys(v).length === 0);
/** One number however it is written: its E.164 key (lib/phone.ts), or its digits when it is no possible number. */
const numberOf = (p: string, region: string) => phoneKey(p, region) ?? p.replace(/\D/g, "");

/**
 * What the target takes from the sources: each empty field from the first source that has it; the sources' phones
 * the target lacks (by number: "+1 416 555 0199" is "(416) 555-0199") into its free phone slots, in order; every tag; and a lead score when it has
 * none (an automatic one stays automatic, so it is computed anew over everything merged).
 */
function mergedInput(target: ContactRecord, sources: ContactRecord[], region: string): ContactUpdate {
  const input: Record<string, unknown> = {};
  for (const key of FILLED) {
    if (!isEmpty(target[key])) continue;
    const from = sources.find((s) => !isEmpty(s[key]));
    if (from) input[key] = from[key];
  }
  const known = new Set(PHONES.flatMap((k) => (target[k] ? [numberOf(target[k], region)] : [])));
  const free = PHONES.filter((k) => isEmpty(target[k]));
  for (const p of sources.flatMap((s) => PHONES.map((k) => s[k]))) {
    if (!p || known.has(numberOf(p, region)) || free.length === 0) continue;
    input[free.shift()!] = p;
    known.add(numberOf(p, region));
  }
  const tags = uniqueTags([...target.tags, ...sources.flatMap((s) => s.tags)]);
  if (tags.length > MAX_TAGS) {
    throw new Validation([
      {
        field: "sourceIds",
        path: ["sourceIds"],
        code: "too_many_tags",
        message: `The merged contact would carry ${tags.length} tags; a contact carries at most ${MAX_TAGS}`,
      },
    ]);
  }
  if (tags.length > target.tags.length) input.tags = tags;
  if (target.leadScore === null && !target.leadScoreAuto) {
    const scored = sources.find((s) => s.leadScoreAuto || s.leadScore !== null);
    if (scored?.leadScoreAuto) input.calculateLeadScore = true;
    else if (scored) input.leadScore = scored.leadScore;
  }
  return input as ContactUpdate;
}

/** The target's custom field values, with each key it lacks taken from the first source that has one. */
function mergedCustomFields(target: ContactRecord, sources: ContactRecord[]): ContactRecord["customFields"] {
  const merged = Object.assign({}, ...[...sources].reverse().map((s) => s.customFields ?? {}), target.customFields ?? {});
  return Object.keys(merged).length ? merged : target.customFields;
}

/** The lead-score figures of the merged contact: every activity of the target and the sources. */
function sumFigures(rows: { count: number; conversations: number; lastActivityAt: string | null }[]): ActivityFigures {
  return {
    count: rows.reduce((n, r) => n + r.count, 0),
    conversations: rows.reduce((n, r) => n + r.conversations, 0),
    lastActivityAt: latest(rows.map((r) => r.lastActivityAt)),
  };
}

const latest = (times: (string | null)[]) =>
  times
    .filter((t): t is string => t !== null)
    .sort()
    .at(-1) ?? null;

/**
 * The statements that re-point every record of the sources at the target, whatever their number (one statement per
 * kind, the ids as one JSON list). Records with a version move it, so a write computed from the old reference
 * reads again; a deal of theirs in the trash comes back on the target.
 */
function moveRecords(ctx: ServiceContext, from: string[], to: string, at: string): Statement[] {
  const org = ctx.organizationId;
  const bump = (t: { version: SQLiteColumn }) => ({ updatedAt: at, version: sql`${t.version} + 1` });
  return [
    ctx.db
      .update(contactActivities)
      .set({ contactId: to })
      .where(and(eq(contactActivities.organizationId, org), inJsonList(contactActivities.contactId, from))),
    ctx.db
      .update(contactCommunications)
      .set({ contactId: to })
      .where(and(eq(contactCommunications.organizationId, org), inJsonList(contactCommunications.contactId, from))),
    ctx.db
      .update(deals)
      .set({ contactId: to, ...bump(deals) })
      .where(and(eq(deals.organizationId, org), inJsonList(deals.contactId, from))),
    ctx.db
      .update(testimonials)
      .set({ authorPersonId: to, ...bump(testimonials) })
      .where(and(eq(testimonials.organizationId, org), inJsonList(testimonials.authorPersonId, from))),
    ctx.db
      .update(surveys)
      .set({ recipientPersonId: to, ...bump(surveys) })
      .where(and(eq(surveys.organizationId, org), inJsonList(surveys.recipientPersonId, from))),
    ctx.db
      .update(referrals)
      .set({ referrerPersonId: to, ...bump(referrals) })
      .where(and(eq(referrals.organizationId, org), inJsonList(referrals.referrerPersonId, from))),
    ctx.db
      .update(referrals)
      .set({ leadContactId: to, ...bump(referrals) })
      .where(and(eq(referrals.organizationId, org), inJsonList(referrals.leadContactId, from))),
    ctx.db
      .update(trashRows)
      .set({ row: sql`json_set(${trashRows.row}, '$.contactId', ${to})` })
      .where(
        and(
          eq(trashRows.organizationId, org),
          eq(trashRows.tableName, tableName(deals)),
          inJsonList(sql`json_extract(${trashRows.row}, '$.contactId')`, from),
        ),
      ),
    // A cached deals total may filter on what moved.
    bumpResourceCounter(ctx.db, org, "deals", 0),
  ];
}
