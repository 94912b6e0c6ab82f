import { z } from "zod";
import { Pagination } from "../crm/body";
import { createActivity } from "../contacts/activities";
import { Communication, CommunicationCreate, INCLUDED_COMMUNICATIONS } from "../communications/schemas";
import { logCommunication } from "../communications/service";
import {
  Activity,
  ActivityCreate,
  Contact,
  CONTACT_STATUSES,
  CONTACT_TYPES,
  ContactCreate,
  ContactListQuery,
  ContactReadQuery,
  ContactUpdate,
  INCLUDED_ACTIVITIES,
  INCLUDES,
  READ_ONLY_FIELDS,
  SORT_FIELDS,
  TagsAdd,
} from "../contacts/schemas";
import { addTags, createContact, getContact, listContacts, updateContact } from "../contacts/service";
import { receiveLead } from "../leads/inbox";
import { LeadCreate, LeadIntake, LeadReceived } from "../leads/schemas";
import { intakeLead } from "../leads/service";
import { ContactMerge, DUPLICATE_REASONS, DuplicateGroup, DuplicatesQuery } from "../merge/schemas";
import { listDuplicates, mergeContacts } from "../merge/service";
import { INCLUDED_DEALS } from "../deals/service";
import { isRelativeBound } from "../crm/date-bounds";
import { defineTool, definedOnly, parseWith, listInputs, listParams, requireEmbeds, pageInputs } from "./tool";

const id = (what: string) => z.string().min(1).max(100).describe(`The ${what}'s id`);
const timestamp = z.iso.datetime({ offset: true });
/** A date bound as the contacts list takes it: a timestamp, or a duration relative to now. */
const dateBound = (what: string) =>
  z
    .string()
    .max(64)
    .refine(
      (v) => isRelativeBound(v) || timestamp.safeParse(v).success,
      "An ISO 8601 timestamp, or a duration relative to now such as -P30D",
    )
    .describe(`ISO 8601 timestamp, or a duration relative to now (-P30D: 30 days ago); ${what}`);

/** The list filters of GET /v1/contacts with JSON types instead of query strings; mapped onto the route's query below. */
const FindContactsInput = z.strictObject({
  query: z
    .string()
    .max(200)
    .optional()
    .describe(
      "Words to find in names, e-mail, phones (digits in any format), notes and tags, each as the start of a word; every word must match",
    ),
  type: z.enum(CONTACT_TYPES).optional(),
  status: z.enum(CONTACT_STATUSES).optional(),
  source: z.string().min(1).max(40).optional().describe("Lead source code, e.g. WEBSITE or REFERRAL"),
  assignedTo: z.string().min(1).max(100).optional().describe("The assigned agent's (user's) id, or `none`: assigned to nobody"),
  email: z.email().max(254).optional().describe("The contact with exactly this e-mail address, in any case"),
  tags: z
    .array(
      z
        .string()
        .min(1)
        .max(50)
        .refine((t) => !t.includes(","), "A tag cannot contain a comma"),
    )
    .min(1)
    .max(20)
    .optional()
    .describe("Contacts carrying every one of these tags"),
  minLeadScore: z.int().min(0).max(100).optional(),
  maxLeadScore: z.int().min(0).max(100).optional(),
  createdAfter: dateBound("created at or after").optional(),
  createdBefore: dateBound("created at or before").optional(),
  lastContactedAfter: dateBound("last contacted at or after").optional(),
  lastContactedBefore: dateBound("last contacted at or before (never contacted is not before anything)").optional(),
  neverContacted: z.literal(true).optional().describe("Only contacts never contacted"),
  hasOpenTask: z.boolean().optional().describe("Only contacts with (true) or without (false) an open task"),
  include: z.array(z.enum(INCLUDES)).min(1).max(INCLUDES.length).optional().describe("Embed each contact's recent activities or deals"),
  ...listInputs(SORT_FIELDS),
});

export const findContacts = defineTool({
  name: "find_contacts",
  route: "GET /v1/contacts",
  title: "Find contacts",
  description:
    "Lists the organization's contacts matching every given filter (words of their name, e-mail, phone, notes or tags; e-mail address, type, status, source, agent or nobody, tags, lead score, creation and last-contact time, absolute or relative such as -P30D, never contacted, an open task), one keyset page at a time with a total.",
  permission: "contacts:read",
  effect: "read",
  input: FindContactsInput,
  output: z.object({ contacts: z.array(Contact), pagination: Pagination }),
  async run(i, scope) {
    const { ctx } = scope;
    requireEmbeds(scope, i.include);
    // Through the route's own query schema: the same bounds, range checks and sort parsing as GET /v1/contacts.
    const query = parseWith(
      ContactListQuery,
      definedOnly({
        ...listParams(i),
        q: i.query,
        type: i.type,
        status: i.status,
        source: i.source,
        assignedTo: i.assignedTo,
        email: i.email,
        tags: i.tags?.join(","),
        "leadScore[gte]": i.minLeadScore?.toString(),
        "leadScore[lte]": i.maxLeadScore?.toString(),
        "createdAt[gte]": i.createdAfter,
        "createdAt[lte]": i.createdBefore,
        "lastContactedAt[gte]": i.lastContactedAfter,
        "lastContactedAt[lte]": i.lastContactedBefore,
        lastContactedAt: i.neverContacted ? "never" : undefined,
        hasOpenTask: i.hasOpenTask?.toString(),
        include: i.include?.join(","),
      }),
    );
    const page = await listContacts(ctx, query);
    // No sparse fieldset (`fields`) is asked for: every contact is whole.
    return { contacts: page.data as z.input<typeof Contact>[], pagination: page.pagination };
  },
});

const READ_ONLY = Object.fromEntries(READ_ONLY_FIELDS.map((f) => [f, true] as const)) as Record<(typeof READ_ONLY_FIELDS)[number], true>;

export const createContactTool = defineTool({
  name: "create_contact",
  route: "POST /v1/contacts",
  title: "Create a contact",
  description:
    "Creates a contact (lead, client, vendor …) in the organization; the e-mail must be unique in it. With calculateLeadScore: true the lead score is computed and kept up to date.",
  permission: "contacts:write",
  // The body of POST /v1/contacts, less the read-only fields that route merely tolerates.
  input: ContactCreate.omit(READ_ONLY),
  output: z.object({ contact: Contact }),
  effect: "write",
  run: async (input, { ctx }) => ({ contact: await createContact(ctx, input) }),
});

export const logActivity = defineTool({
  name: "log_activity",
  route: "POST /v1/contacts/{id}/activities",
  title: "Log an activity on a contact",
  description:
    "Records an e-mail, call, SMS, meeting, showing, note or task on a contact. Activities that have happened (not scheduled ones) move the contact's lastContactedAt.",
  permission: "contacts:write",
  input: ActivityCreate.extend({ contactId: id("contact") }),
  output: z.object({ activity: Activity }),
  effect: "write",
  async run({ contactId, ...activity }, { ctx }) {
    return { activity: await createActivity(ctx, contactId, activity) };
  },
});

export const logCommunicationTool = defineTool({
  name: "log_communication",
  route: "POST /v1/contacts/{id}/communications",
  title: "Log an e-mail, SMS, call or voicemail with a contact",
  description:
    "Records a communication that has happened: an e-mail (subject, body), SMS (body), call (durationSeconds once it has ended) or voicemail (always inbound; durationSeconds, transcript as body), inbound or outbound, at occurredAt (default now). Emits the matching communication.* webhook event and moves the contact's lastContactedAt forward.",
  permission: "contacts:write",
  input: CommunicationCreate.extend({ contactId: id("contact") }),
  output: z.object({ communication: Communication }),
  effect: "write",
  async run({ contactId, ...communication }, { ctx }) {
    return { communication: await logCommunication(ctx, contactId, communication) };
  },
});

export const mergeContactsTool = defineTool({
  name: "merge_contacts",
  route: "POST /v1/contacts/{id}/merge",
  title: "Merge duplicate contacts into one",
  description:
    "Moves every activity, communication, deal, testimonial, survey, referral and tag of the source contacts onto the contact kept, fills its empty fields from them, and sends the sources to the trash (they cannot be restored). Emits contact.updated and contact.deleted per source.",
  permission: "contacts:write",
  input: ContactMerge.extend({ contactId: id("contact to keep") }),
  output: z.object({ contact: Contact }),
  // The sources go to the trash for good: a merge cannot be taken back.
  effect: "destructive",
  async run({ contactId, sourceIds }, { ctx }) {
    return { contact: await mergeContacts(ctx, contactId, sourceIds) };
  },
});

export const getContactTool = defineTool({
  name: "get_contact",
  route: "GET /v1/contacts/{id}",
  title: "Read a contact",
  description: `One contact of the organization by id, with every field (status, type, agent, tags, lead score, custom fields …). include adds its ${INCLUDED_ACTIVITIES} most recent activities, its ${INCLUDED_COMMUNICATIONS} most recent communications and its ${INCLUDED_DEALS} newest deals (deals need the deals:read permission too). An id that is not a contact of this organization, or a contact in the trash, answers not_found.`,
  permission: "contacts:read",
  effect: "read",
  input: z.strictObject({
    contactId: id("contact"),
    include: z
      .array(z.enum(INCLUDES))
      .min(1)
      .max(INCLUDES.length)
      .optional()
      .describe("Embed the contact's recent activities, communications or deals"),
  }),
  output: z.object({ contact: Contact }),
  async run({ contactId, include }, scope) {
    requireEmbeds(scope, include);
    // GET /v1/contacts/{id}'s own query schema.
    const query = parseWith(ContactReadQuery, definedOnly({ include: include?.join(",") }));
    return { contact: await getContact(scope.ctx, contactId, query.include) };
  },
});

export const updateContactTool = defineTool({
  name: "update_contact",
  route: "PUT /v1/contacts/{id}",
  title: "Update a contact",
  description:
    "Sets the fields given and leaves the others, as PUT /v1/contacts/{id}: status, type, assignedTo (a user id: list_users), tags (the whole list, replacing it: tag_contact adds without replacing), name, e-mail (unique in the organization: duplicate_email), phones, address, source, notes, preferences, leadScore or calculateLeadScore, customFields (keys: list_custom_fields). null clears an optional field. Emits contact.updated, and contact.assigned, contact.tagged or contact.untagged when those changed; setting what is already there changes nothing. Another organization's id answers not_found.",
  permission: "contacts:write",
  // The body of PUT /v1/contacts/{id}, less the read-only fields that route merely tolerates.
  input: ContactUpdate.omit(READ_ONLY).extend({ contactId: id("contact") }),
  output: z.object({ contact: Contact }),
  effect: "write",
  // A set to the values given: the same call again changes nothing more.
  idempotent: true,
  async run({ contactId, ...update }, { ctx }) {
    return { contact: await updateContact(ctx, contactId, update) };
  },
});

export const tagContact = defineTool({
  name: "tag_contact",
  route: "POST /v1/contacts/{id}/tags",
  title: "Tag a contact",
  description:
    "Adds tags to a contact, keeping the ones it has (at most 50 in all: too_big beyond). Emits contact.tagged with the tags that were new; tags it already carries change nothing. There is no removal of single tags: to take tags off, send the whole remaining list to update_contact.",
  permission: "contacts:write",
  input: TagsAdd.extend({ contactId: id("contact") }),
  output: z.object({ contact: Contact }),
  effect: "write",
  // Tags are a set: adding ones the contact carries changes nothing, so a repeat does nothing more.
  idempotent: true,
  async run({ contactId, tags }, { ctx }) {
    return { contact: await addTags(ctx, contactId, tags) };
  },
});

export const findDuplicates = defineTool({
  name: "find_duplicates",
  route: "GET /v1/contacts/duplicates",
  title: "Find likely duplicate contacts",
  description:
    "Groups of the organization's contacts that are likely one person: the same phone number in either phone field (however written), then the same first and last name and zip code. Each group names what its contacts share and lists them (id, name, e-mail, phones). A page may hold fewer groups than limit while hasMore is true: follow nextCursor. Merge a group with merge_contacts.",
  permission: "contacts:read",
  effect: "read",
  input: z.strictObject({
    reason: z.enum(DUPLICATE_REASONS).optional().describe("Only groups of this kind (default both, phone groups first)"),
    ...pageInputs,
  }),
  output: z.object({ groups: z.array(DuplicateGroup), pagination: Pagination }),
  async run({ reason, limit, cursor }, { ctx }) {
    // GET /v1/contacts/duplicates' own query schema.
    const query = parseWith(DuplicatesQuery, definedOnly({ limit: String(limit), cursor, reason }));
    const page = await listDuplicates(ctx, query);
    return { groups: page.data, pagination: page.pagination };
  },
});

/** What became of a lead: the route's status, named. */
const LEAD_OUTCOMES = {
  200: "matched",
  201: "created",
  202: "kept_for_review",
} as const;

export const submitLead = defineTool({
  name: "submit_lead",
  route: "POST /v1/leads",
  title: "Take in a lead",
  description:
    "Takes a lead in as POST /v1/leads does, without duplicating anyone: the person is matched to a contact by any e-mail or phone number. A match (outcome matched) is filled with the names and address fields it lacks and never blanked; no match creates a contact routed to an agent by the organization's lead routing (created; contact.created, contact.assigned); a lead with only phone numbers that match nobody is kept for the team to review (kept_for_review, with its reviewId). The message becomes a NOTE activity, and a property named by propertyId or exact address gets an inquiry. The same source and sourceEventId again answers as the first time and writes nothing. Without the contacts:read permission the answer is always outcome received and says nothing about who matched (the lead is taken in right after). Refused: a phone that is no phone number (invalid_phone), a propertyId of no property of the organization (invalid_reference), a lead with neither e-mail nor phone.",
  permission: "leads:write",
  input: LeadCreate,
  output: z.object({
    outcome: z
      .enum(["matched", "created", "kept_for_review", "received"])
      .describe("received: taken in for a caller who may not read contacts, who learns nothing more"),
    lead: z.union([LeadIntake, LeadReceived]).describe("The answer of POST /v1/leads"),
  }),
  effect: "write",
  async run(lead, { ctx, granted }) {
    // As the route: only a caller that may read contacts learns what the lead met.
    if (!granted.has("contacts:read")) {
      await receiveLead(ctx, lead);
      return { outcome: "received" as const, lead: { received: true as const } };
    }
    const { status, answer } = await intakeLead(ctx, lead);
    return { outcome: LEAD_OUTCOMES[status], lead: answer };
  },
});

export const contactTools = [
  findContacts,
  createContactTool,
  logActivity,
  logCommunicationTool,
  mergeContactsTool,
  getContactTool,
  updateContactTool,
  tagContact,
  findDuplicates,
  submitLead,
];
