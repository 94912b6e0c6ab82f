import { z } from "zod";
import { Pagination } from "../crm/body";
import { createActivity } from "../contacts/activities";
import { Communication, CommunicationCreate } from "../communications/schemas";
import { logCommunication } from "../communications/service";
import {
  Activity,
  ActivityCreate,
  Contact,
  CONTACT_STATUSES,
  CONTACT_TYPES,
  ContactCreate,
  ContactListQuery,
  INCLUDES,
  READ_ONLY_FIELDS,
  SORT_FIELDS,
} from "../contacts/schemas";
import { createContact, listContacts } from "../contacts/service";
import { ContactMerge } from "../merge/schemas";
import { mergeContacts } from "../merge/service";
import { defineTool, definedOnly, parseWith, listInputs, listParams, requireEmbeds } from "./tool";

const id = (what: string) => z.string().min(1).max(100).describe(`The ${what}'s id`);
const timestamp = z.iso.datetime({ offset: true });

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
  assignedTo: id("assigned agent (user)").optional(),
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
  createdAfter: timestamp.optional().describe("ISO 8601 timestamp; created at or after"),
  createdBefore: timestamp.optional().describe("ISO 8601 timestamp; created at or before"),
  include: z.array(z.enum(INCLUDES)).min(1).max(INCLUDES.length).optional().describe("Embed each contact's recent activities or deals"),
  ...listInputs(SORT_FIELDS),
});

export const findContacts = defineTool({
  name: "find_contacts",
  route: "GET /v1/contacts",
  title: "Find contacts",
  description:
    "Lists the organization's contacts matching every given filter (words of their name, e-mail, phone, notes or tags; e-mail address, type, status, source, agent, tags, lead score, creation time), one keyset page at a time with a total.",
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

export const contactTools = [findContacts, createContactTool, logActivity, logCommunicationTool, mergeContactsTool];
