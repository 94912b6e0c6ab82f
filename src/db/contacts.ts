import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export interface ContactAddress {
  street?: string;
  city?: string;
  state?: string;
  zipCode?: string;
  country?: string;
}

export interface ContactPreferences {
  communicationMethod?: string;
  propertyTypes?: string[];
  priceRange?: { min?: number; max?: number };
  locations?: string[];
}

/**
 * The name-and-zip key of a contact (GET /v1/contacts/duplicates): first and last name in lower case (ASCII, as SQLite's
 * lower() folds), and the zip code without spaces in upper case, joined by "|"; NULL without a zip code. Written once
 * here: the index below and the duplicates' queries must use the very same expression for SQLite to use the index.
 */
export const NAME_ZIP_KEY_SQL =
  "CASE WHEN json_valid(address) AND trim(ifnull(json_extract(address, '$.zipCode'), '')) <> '' THEN lower(trim(first_name)) || '|' || lower(trim(last_name)) || '|' || upper(replace(json_extract(address, '$.zipCode'), ' ', '')) END";

/**
 * Contacts. Every list filter and sort has an index led by organization_id and ending in id, so a keyset page is one
 * index range (STYLE.md "Data"). lastName sorts case-insensitively; a missing leadScore sorts below 0.
 */
export const contacts = sqliteTable(
  "contacts",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    firstName: text().notNull(),
    lastName: text().notNull(),
    email: text().notNull(),
    /** Lower-cased e-mail: one contact per address per organization. */
    emailKey: text().notNull(),
    phone: text(),
    secondaryPhone: text(),
    /** The phones in E.164 (lib/phone.ts `phoneKey`, the organization's region for numbers without a country code): what lead intake and imports match on. */
    phoneKey: text(),
    secondaryPhoneKey: text(),
    address: text({ mode: "json" }).$type<ContactAddress>(),
    type: text().notNull(),
    status: text().notNull(),
    source: text(),
    leadScore: integer(),
    /** Sort key of leadScore: a missing score ranks below every given one, so keyset pages never meet a NULL. */
    leadScoreRank: integer().generatedAlwaysAs(sql`ifnull(lead_score, -1)`, { mode: "virtual" }),
    /** Set by calculateLeadScore: true; the score is then recomputed whenever its inputs change. */
    leadScoreAuto: integer({ mode: "boolean" }).notNull().default(false),
    tags: text({ mode: "json" }).$type<string[]>().notNull(),
    notes: text(),
    preferences: text({ mode: "json" }).$type<ContactPreferences>(),
    assignedTo: text(),
    /** A lead routed to a pond (issue 46) waits here, unassigned, until a member claims it. */
    pondId: text(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    lastContactedAt: text(),
    /** Values of the organization's custom fields by key (crm/custom-fields.ts); null when none was ever set. */
    customFields: text({ mode: "json" }).$type<Record<string, string | number | boolean>>(),
    /** Bumped by every write of the contact or its activities: the compare-and-set key and the ETag (db/write.ts). */
    version: integer().notNull().default(1),
  },
  (t) => [
    uniqueIndex("contacts_org_email_unique").on(t.organizationId, t.emailKey),
    index("contacts_org_created_idx").on(t.organizationId, t.createdAt, t.id),
    index("contacts_org_updated_idx").on(t.organizationId, t.updatedAt, t.id),
    index("contacts_org_last_name_idx").on(t.organizationId, sql`${t.lastName} COLLATE NOCASE`, t.id),
    index("contacts_org_lead_score_idx").on(t.organizationId, t.leadScoreRank, t.id),
    index("contacts_org_type_idx").on(t.organizationId, t.type, t.createdAt, t.id),
    index("contacts_org_status_idx").on(t.organizationId, t.status, t.createdAt, t.id),
    index("contacts_org_source_idx").on(t.organizationId, t.source, t.createdAt, t.id),
    index("contacts_org_assigned_idx").on(t.organizationId, t.assignedTo, t.createdAt, t.id),
    // lastContactedAt bounds (smart lists, issue 46): a range of this index, and the drift of a relative bound's cached
    // total. Partial: a bound implies a date, and `IS NULL` (never contacted) left to the indexes that served it before
    // (offered this one too, SQLite stopped taking the brief's uncontacted-leads index).
    index("contacts_org_last_contacted_idx").on(t.organizationId, t.lastContactedAt, t.id).where(sql`${t.lastContactedAt} IS NOT NULL`),
    index("contacts_org_pond_idx").on(t.organizationId, t.pondId, t.createdAt, t.id).where(sql`${t.pondId} IS NOT NULL`),
    // The daily brief's new leads (src/brief/): active leads never contacted, per assignee, newest first.
    index("contacts_org_uncontacted_leads_idx")
      .on(t.organizationId, t.assignedTo, t.createdAt, t.id)
      .where(sql`${t.type} = 'LEAD' AND ${t.status} = 'ACTIVE' AND ${t.lastContactedAt} IS NULL`),
    index("contacts_org_phone_key_idx").on(t.organizationId, t.phoneKey),
    index("contacts_org_secondary_phone_key_idx").on(t.organizationId, t.secondaryPhoneKey),
    index("contacts_org_name_zip_idx").on(t.organizationId, sql.raw(NAME_ZIP_KEY_SQL)),
  ],
);

/**
 * How many contacts there are per (type, status, source, assignedTo), moved in the batch of every contact write that
 * adds, removes or re-files one (contacts/facets.ts): a list filtered on these fields alone sums these few rows for
 * its total. A missing source or assignee is stored as "" (a primary key column never holds NULL).
 */
export const contactFacetCounts = sqliteTable(
  "contact_facet_counts",
  {
    organizationId: text().notNull(),
    type: text().notNull(),
    status: text().notNull(),
    source: text().notNull(),
    assignedTo: text().notNull(),
    total: integer().notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.type, t.status, t.source, t.assignedTo] })],
);

/** One row per (contact, tag): the tags filter and the tag counts read this, the contact row carries the list. */
export const contactTags = sqliteTable(
  "contact_tags",
  {
    contactId: text().notNull(),
    organizationId: text().notNull(),
    tag: text().notNull(),
  },
  (t) => [primaryKey({ columns: [t.contactId, t.tag] }), index("contact_tags_org_tag_idx").on(t.organizationId, t.tag, t.contactId)],
);

/**
 * The organization's tags in use, with a stable color and how many contacts carry each. `contactCount` moves in the
 * same batch as the contact_tags rows it counts; a tag whose count reaches 0 is deleted.
 */
export const tags = sqliteTable(
  "tags",
  {
    organizationId: text().notNull(),
    name: text().notNull(),
    color: text().notNull(),
    createdAt: text().notNull(),
    contactCount: integer().notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.organizationId, t.name] }),
    index("tags_org_count_idx").on(t.organizationId, sql`${t.contactCount} DESC`, t.name),
  ],
);

export const contactActivities = sqliteTable(
  "contact_activities",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    contactId: text().notNull(),
    type: text().notNull(),
    description: text(),
    scheduledAt: text(),
    metadata: text({ mode: "json" }).$type<Record<string, unknown>>(),
    createdBy: text(),
    createdAt: text().notNull(),
  },
  (t) => [index("contact_activities_contact_idx").on(t.organizationId, t.contactId, t.createdAt, t.id)],
);

/**
 * E-mails, SMS, calls and voicemails logged on a contact. Listed newest first on (occurredAt, id), all of a
 * contact's or one type's; the rows go to the trash with their contact and come back with it.
 */
export const contactCommunications = sqliteTable(
  "contact_communications",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    contactId: text().notNull(),
    type: text().notNull(),
    direction: text().notNull(),
    subject: text(),
    body: text(),
    durationSeconds: integer(),
    occurredAt: text().notNull(),
    metadata: text({ mode: "json" }).$type<Record<string, unknown>>(),
    createdBy: text(),
    createdAt: text().notNull(),
  },
  (t) => [
    index("contact_communications_contact_idx").on(t.organizationId, t.contactId, t.occurredAt, t.id),
    index("contact_communications_type_idx").on(t.organizationId, t.contactId, t.type, t.occurredAt, t.id),
  ],
);

/**
 * Lead intake's memory of what it answered: the first answer to one (source, sourceEventId) of an
 * organization, written in the batch of the change it reports, so a portal that sends a lead again gets the same
 * answer and status without a second contact or activity. It holds ids only (the contact, its assignee), no person.
 * A lead kept for review (status 202) names its review in `answer` and no contact (`contactId` ""), until an accept
 * records the contact it made.
 */
export const leadIntakes = sqliteTable(
  "lead_intakes",
  {
    organizationId: text().notNull(),
    source: text().notNull(),
    sourceEventId: text().notNull(),
    contactId: text().notNull(),
    status: integer().notNull(),
    answer: text({ mode: "json" }).$type<Record<string, unknown>>().notNull(),
    createdAt: text().notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.organizationId, t.source, t.sourceEventId] }),
    index("lead_intakes_contact_idx").on(t.organizationId, t.contactId),
  ],
);

/**
 * Leads kept for the team to review: a lead with only phone numbers that match no contact cannot become a
 * contact (a contact needs an e-mail), and refusing it told a web form's key which numbers are clients'. Listed
 * newest first (GET /v1/leads/reviews), accepted into a contact given an e-mail or dismissed; an erasure deletes those
 * carrying the erased person's numbers, and the cron those older than REVIEW_RETENTION_DAYS (leads/reviews.ts). Every
 * field is bounded by the intake's schema: names 100 characters, at most 10 numbers of 40, a message of 5,000.
 */
export const leadReviews = sqliteTable(
  "lead_reviews",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    source: text().notNull(),
    sourceEventId: text(),
    type: text().notNull(),
    firstName: text(),
    lastName: text(),
    /** The numbers as written, and their keys in E.164 (lib/phone.ts), by which an erasure finds the person's. */
    phones: text({ mode: "json" }).$type<string[]>().notNull(),
    phoneKeys: text({ mode: "json" }).$type<string[]>().notNull(),
    address: text({ mode: "json" }).$type<ContactAddress>(),
    message: text(),
    /** The property of ours the lead asked about, and the zip code a contact made from it is routed by. */
    propertyId: text(),
    zipCode: text(),
    createdAt: text().notNull(),
  },
  (t) => [index("lead_reviews_org_created_idx").on(t.organizationId, t.createdAt, t.id), index("lead_reviews_created_idx").on(t.createdAt)],
);

/**
 * Leads a web form's key sent, waiting to be taken in: a credential that may not read contacts is answered
 * 202 as soon as its lead is stored here, and the intake runs after the answer (leads/inbox.ts), so neither the answer,
 * its headers nor its time tell a match from a new person. Taking it in deletes the row in the intake's own batch
 * (exactly once); the cron takes in what an answer's deferred work left, and deletes what failed for a week.
 * `lead` is the validated POST body (bounded by its schema).
 */
export const leadInbox = sqliteTable(
  "lead_inbox",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    /** Who sent it (the key's user), the actor of the intake. */
    userId: text().notNull(),
    lead: text({ mode: "json" }).$type<Record<string, unknown>>().notNull(),
    receivedAt: text().notNull(),
    attempts: integer().notNull().default(0),
    lastError: text(),
    /** When a drain may try it next: pushed out on each attempt, so a failing lead backs off. */
    dueAt: text().notNull(),
  },
  (t) => [index("lead_inbox_due_idx").on(t.dueAt), index("lead_inbox_org_idx").on(t.organizationId, t.receivedAt)],
);

/**
 * Round-robin routing's turn: the user the last routed lead went to and how many turns have been taken.
 * Every lead routed round robin moves it in its own batch, guarded on the turn it read, so two concurrent leads never
 * take the same turn.
 */
export const leadRoutingCursors = sqliteTable("lead_routing_cursors", {
  organizationId: text().primaryKey(),
  lastUserId: text(),
  turn: integer().notNull().default(0),
});

/**
 * The e-mails and phones of contacts merged into another: after a merge the source waits in the trash, so
 * its e-mail was free again and the next lead or import row with it made the duplicate anew. Each key (a case-folded
 * e-mail, an E.164 phone) names the live contact that absorbed it; matching reads them after the live contacts' own
 * keys. Written in the merge's batch, re-pointed by a merge of that contact in turn, deleted with an erasure of
 * either contact.
 */
export const contactMergedKeys = sqliteTable(
  "contact_merged_keys",
  {
    organizationId: text().notNull(),
    key: text().notNull(),
    /** The contact the key now belongs to. */
    contactId: text().notNull(),
    /** The merged contact the key came from. */
    sourceId: text().notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.organizationId, t.key] }),
    index("contact_merged_keys_contact_idx").on(t.organizationId, t.contactId),
    index("contact_merged_keys_source_idx").on(t.organizationId, t.sourceId),
  ],
);
