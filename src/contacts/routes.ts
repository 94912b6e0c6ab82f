import { CUSTOM_FILTER_DOC } from "../crm/custom-fields";
import { OpenAPIHono } from "@hono/zod-openapi";
import { CRM, CRM_PRECONDITION_ERROR, crmError, crmSuccess, keptAnswer, Page } from "../crm/body";
import { defineRoute, jsonBody } from "../platform/route";
import { listQuery, NoQuery } from "../crm/list-query";
import { grantedPermissions, requirePermission, serviceContext } from "../platform/auth";
import { RESTORE_DAYS } from "../crm/trash";
import { Erasure, PersonalData } from "../erasure/schemas";
import { z } from "@hono/zod-openapi";
import { ETAG_HEADER, withEtag } from "../platform/etag";
import type { AppBindings } from "../platform/context";
import { issuesOf, validationHookWith } from "../platform/openapi";
import { createActivity, listActivities } from "./activities";
import { bulkUpdateContacts } from "./bulk";
import { assertAssignee } from "./writes";
import { LEAD_SCORE_METHOD } from "./lead-score";
import { ContactMerge, DuplicateGroup, DuplicatesQuery } from "../merge/schemas";
import { listDuplicates, mergeContacts } from "../merge/service";
import {
  Activity,
  ActivityCreate,
  BulkResult,
  BulkUpdate,
  Contact,
  ContactCreate,
  ContactDeleteQuery,
  ContactListQuery,
  ContactReadQuery,
  ContactTag,
  ContactUpdate,
  IdParam,
  TagsAdd,
} from "./schemas";
import { addTags, createContact, deleteContact, getContact, listContacts, listTags, restoreContact, updateContact } from "./service";
import { eraseContact, personalData } from "../erasure/service";

/**
 * When a contact body breaks the schema and names an assignee (assignedTo, or updates.assignedTo in a bulk update),
 * the assignee is checked too, so the 422 lists every problem at once; the service checks it again when it passes.
 */
const contactValidationHook = validationHookWith(async (body, c) => {
  const updates = body.updates as Record<string, unknown> | undefined;
  const [field, assignee] =
    typeof body.assignedTo === "string" ? ["assignedTo", body.assignedTo] : ["updates.assignedTo", updates?.assignedTo];
  return typeof assignee === "string" ? issuesOf(() => assertAssignee(serviceContext(c), assignee, field)) : [];
});

const tags = ["Contacts"];
const security = [{ bearerAuth: [] }];
const NOT_FOUND = { 404: crmError("No contact with this id in your organization (not_found_error)") };
const DUPLICATE = { 409: crmError("A contact with this e-mail already exists in your organization (duplicate_email)") };
const CONTENDED = { 409: crmError("Changed by too many requests at once (concurrent_modification); retry") };

const CONDITIONAL = "Send the contact's ETag in `If-Match` to make the write conditional: 412 when the contact has changed since.";

const FIELD_RULES = `Unknown fields are rejected (422 \`unknown_field\`); the read-only fields id, organizationId, createdAt, updatedAt and
lastContactedAt are ignored, so a fetched contact can be sent back as is. Optional fields take null to clear them.
With \`calculateLeadScore: true\` the score is computed (${LEAD_SCORE_METHOD}) and recomputed whenever its inputs change;
a leadScore given without the flag is stored as is and switches the computed score off.`;

const list = defineRoute(CRM, {
  operationId: "listContacts",
  method: "get",
  path: "/v1/contacts",
  tags,
  security,
  summary: "List contacts",
  description:
    "Keyset-paginated: pass `pagination.nextCursor` back as `cursor`. A cursor walk returns every matching contact exactly once, also while contacts are being added. Unknown query parameters are rejected (422)." +
    CUSTOM_FILTER_DOC,
  request: { query: ContactListQuery },
  responses: {
    200: {
      description: "A page of contacts (only the requested fields with `fields`)",
      content: { "application/json": { schema: Page(Contact.partial()) } },
    },
  },
});

const access = defineRoute(CRM, {
  operationId: "exportContactData",
  method: "get",
  path: "/v1/contacts/{id}/export",
  tags,
  security,
  summary: "Everything held about one person (the right of access)",
  description:
    "One JSON document: the contact (also one in the trash), its activities and communications, their deals, the testimonials they wrote, referrals naming them, their surveys and answers, clickwrap acceptances, the mail sent to them, the documents and envelopes that name them, and the tasks on their contact — found where an erasure of the person would look. Needs `exports:read` and `contacts:read`; each part another domain holds is included only with that domain's read permission (`deals:read` for deals, `reputation:read` for testimonials, referrals and surveys, `clickwrap:read`, `documents:read`, `signatures:read` for envelopes, `tasks:read` for tasks; all three of those for the mails, whose subjects name them) and otherwise named in `omitted`.",
  request: { params: IdParam },
  responses: {
    200: crmSuccess("Everything held about the person", PersonalData),
    404: crmError("No contact with this id in your organization (not_found_error)"),
  },
});

const listTagsRoute = defineRoute(CRM, {
  operationId: "listContactTags",
  method: "get",
  path: "/v1/contacts/tags",
  tags,
  security,
  summary: "The organization's tags with colors and contact counts",
  description: "Tags carried by at least one contact, most used first (then by name), keyset-paginated.",
  request: { query: listQuery({}) },
  responses: { 200: { description: "A page of tags, most used first", content: { "application/json": { schema: Page(ContactTag) } } } },
});

const duplicates = defineRoute(CRM, {
  operationId: "listContactDuplicates",
  method: "get",
  path: "/v1/contacts/duplicates",
  tags,
  security,
  summary: "Likely duplicate contacts, in groups",
  description: `Groups of live contacts that share a phone number (in either phone field, however written: compared in E.164,
numbers without a country code read in the organization's \`defaultPhoneRegion\`), then groups that share first and
last name (any case) and zip code. E-mails are unique per organization, so no group shares one. Keyset-paginated: a page
reads a bounded stretch of the keys' indexes, so it may hold fewer than \`limit\` groups while \`hasMore\` is true;
follow \`nextCursor\`. Merge a group with \`POST /v1/contacts/{id}/merge\`.`,
  request: { query: DuplicatesQuery },
  responses: { 200: { description: "A page of duplicate groups", content: { "application/json": { schema: Page(DuplicateGroup) } } } },
});

const bulk = defineRoute(CRM, {
  operationId: "bulkUpdateContacts",
  method: "patch",
  path: "/v1/contacts/bulk",
  tags,
  security,
  summary: "Update up to 100 contacts at once",
  description: "Ids that do not exist in your organization count as failed; the successful updates are written atomically.",
  request: jsonBody(BulkUpdate),
  responses: { 200: crmSuccess("Per-id outcome", BulkResult), ...CONTENDED },
});

const read = defineRoute(CRM, {
  operationId: "getContact",
  method: "get",
  path: "/v1/contacts/{id}",
  tags,
  security,
  summary: "Read a contact",
  request: { params: IdParam, query: ContactReadQuery },
  responses: { 200: crmSuccess("The contact", Contact, ETAG_HEADER), ...NOT_FOUND },
});

const create = defineRoute(CRM, {
  operationId: "createContact",
  method: "post",
  path: "/v1/contacts",
  tags,
  security,
  summary: "Create a contact",
  description: FIELD_RULES,
  request: jsonBody(ContactCreate),
  responses: { 201: crmSuccess("The created contact", Contact, ETAG_HEADER), ...DUPLICATE },
});

const update = defineRoute(CRM, {
  operationId: "updateContact",
  method: "put",
  path: "/v1/contacts/{id}",
  tags,
  security,
  summary: "Update a contact",
  description: `Every field optional; only the fields sent change, so concurrent updates of different fields all land. ${FIELD_RULES}\n\n${CONDITIONAL}`,
  request: { params: IdParam, ...jsonBody(ContactUpdate) },
  responses: {
    200: crmSuccess("The updated contact", Contact, ETAG_HEADER),
    ...NOT_FOUND,
    409: crmError("Another contact has this e-mail (duplicate_email), or too many concurrent changes (concurrent_modification; retry)"),
    ...CRM_PRECONDITION_ERROR,
  },
});

const remove = defineRoute(CRM, {
  operationId: "deleteContact",
  method: "delete",
  path: "/v1/contacts/{id}",
  tags,
  security,
  summary: "Delete a contact (to the trash), or erase the person",
  description: `Moves the contact with its activities and communications to the trash: reads answer 404 and lists leave it out, and
\`POST /v1/contacts/{id}/restore\` brings it back as it was for ${RESTORE_DAYS} days, after which it is purged. References to it
(deals, testimonials, referrals, surveys) stay and show it as \`{id, deleted: true}\`.

With \`erase=true\` (permission \`contacts:erase\`, which an OAuth client gets only by asking for it by name) the
person is erased now, without the trash: the contact (also one in the trash), its activities and communications; every envelope naming
them that never completed (voided first if open; its links, files and audit trail go with it) and every unsigned
document naming them; and their name, e-mail and phone wherever else they were copied (testimonial author display,
referrals, survey invitations, the mail log, event and delivery payloads, notes, activities, deals and tasks, listings'
marketing texts, other records kept in the trash). Ratings and counts are kept, and so are completed envelopes and
clickwrap acceptances: \`retained\` names them and \`retainedRecords\` says how many and why. The answer lists what was
erased by kind and count. An erasure that fails half-way answers 500 and is finished by the same request sent again or,
a few minutes later, by the cron; the contact is gone from the first failure on. While an import of the organization runs, an
erasure answers 409 \`import_running\` (its file may name the person and would bring them back). ${CONDITIONAL}`,
  request: { params: IdParam, query: ContactDeleteQuery },
  responses: {
    200: {
      description: "Deleted (to the trash), or erased",
      content: {
        "application/json": {
          schema: z.object({
            success: z.literal(true),
            message: z.string(),
            data: z.union([z.object({ id: z.string(), deleted: z.literal(true) }), Erasure]),
          }),
        },
      },
    },
    ...NOT_FOUND,
    409: crmError(
      "Changed by too many requests at once (concurrent_modification); retry. Or, with erase=true: an import of the organization is running, whose file may name the person (import_running): erase once it has ended",
    ),
    ...CRM_PRECONDITION_ERROR,
  },
});

const restore = defineRoute(CRM, {
  operationId: "restoreContact",
  method: "post",
  path: "/v1/contacts/{id}/restore",
  tags,
  security,
  summary: "Restore a contact from the trash",
  description: `Within ${RESTORE_DAYS} days of its delete: the contact returns as it was, with its activities, communications and tags (emits contact.restored).`,
  request: { params: IdParam, query: NoQuery },
  responses: {
    200: crmSuccess("The restored contact", Contact, ETAG_HEADER),
    404: crmError("No contact with this id in your organization's trash (not_found_error)"),
    ...DUPLICATE,
  },
});

const activities = defineRoute(CRM, {
  operationId: "listContactActivities",
  method: "get",
  path: "/v1/contacts/{id}/activities",
  tags,
  security,
  summary: "A contact's activities, newest first",
  description: "Keyset-paginated: pass `pagination.nextCursor` back as `cursor`.",
  request: { params: IdParam, query: listQuery({}) },
  responses: { 200: { description: "A page of activities", content: { "application/json": { schema: Page(Activity) } } }, ...NOT_FOUND },
});

const logActivity = defineRoute(CRM, {
  operationId: "createContactActivity",
  method: "post",
  path: "/v1/contacts/{id}/activities",
  tags,
  security,
  summary: "Log an activity",
  description: `E-mails, calls, SMS, meetings and showings that have happened move the contact's lastContactedAt. An activity changes the contact's version (its ETag). ${CONDITIONAL}`,
  request: { params: IdParam, ...jsonBody(ActivityCreate) },
  responses: { 201: crmSuccess("The activity", Activity), ...NOT_FOUND, ...CONTENDED, ...CRM_PRECONDITION_ERROR },
});

const tag = defineRoute(CRM, {
  operationId: "addContactTags",
  method: "post",
  path: "/v1/contacts/{id}/tags",
  tags,
  security,
  summary: "Add tags to a contact",
  description: `Adds the tags the contact does not have yet and keeps the others; concurrent additions all land. ${CONDITIONAL}`,
  request: { params: IdParam, ...jsonBody(TagsAdd) },
  responses: { 200: crmSuccess("The contact with its tags", Contact, ETAG_HEADER), ...NOT_FOUND, ...CONTENDED, ...CRM_PRECONDITION_ERROR },
});

const merge = defineRoute(CRM, {
  operationId: "mergeContacts",
  method: "post",
  path: "/v1/contacts/{id}/merge",
  tags,
  security,
  summary: "Merge duplicates into this contact",
  description: `Moves every activity, communication, deal, testimonial, survey, referral and tag of the \`sourceIds\` contacts onto this
one, fills its empty fields from them (the first source first; phones it lacks go to its free phone slots), and sends
the sources to the trash with \`mergedInto\`: restoring one answers 409 \`merged_contact\`, erasing this contact erases them
too. One atomic write; emits \`contact.updated\` (with \`mergedFrom\`) and \`contact.deleted\` per source (with
\`mergedInto\`). ${CONDITIONAL}`,
  request: { params: IdParam, ...jsonBody(ContactMerge) },
  responses: {
    200: crmSuccess("The contact with everything merged into it", Contact, ETAG_HEADER),
    ...NOT_FOUND,
    409: crmError(
      "A source was already merged into another contact (merged_contact; errors[0].message is that contact's id), or too many concurrent changes (concurrent_modification; retry)",
    ),
    422: crmError(
      "A source id names no contact of your organization (invalid_reference), is listed twice (duplicate_id) or is this contact (same_as_target), or the merged tags would exceed 50 (too_many_tags)",
    ),
    ...CRM_PRECONDITION_ERROR,
  },
});

// Static paths (/tags, /duplicates, /bulk) are registered before /{id} so they are not read as ids.
export const contactRoutes = new OpenAPIHono<AppBindings>({ defaultHook: contactValidationHook })
  .openapi(duplicates, async (c) =>
    c.json({ success: true as const, ...(await listDuplicates(serviceContext(c), c.req.valid("query"))) }, 200),
  )
  .openapi(listTagsRoute, async (c) =>
    c.json({ success: true as const, ...(await listTags(serviceContext(c), c.req.valid("query"))) }, 200),
  )
  .openapi(bulk, async (c) =>
    c.json({ success: true as const, data: await bulkUpdateContacts(serviceContext(c), c.req.valid("json")) }, 200),
  )
  .openapi(list, async (c) => c.json({ success: true as const, ...(await listContacts(serviceContext(c), c.req.valid("query"))) }, 200))
  .openapi(create, async (c) => {
    const { ctx, answer } = keptAnswer<Contact>(c, 201);
    return c.json(answer(withEtag(c, await createContact(ctx, c.req.valid("json")))), 201);
  })
  .openapi(access, async (c) => {
    // exports:read by its path (platform/permissions.ts), and what it reads: the contact and its records.
    requirePermission(c, "contacts:read");
    return c.json(
      {
        success: true as const,
        data: await personalData(serviceContext(c), c.req.valid("param").id, grantedPermissions(c)),
      },
      200,
    );
  })
  .openapi(read, async (c) =>
    c.json(
      {
        success: true as const,
        data: withEtag(c, await getContact(serviceContext(c), c.req.valid("param").id, c.req.valid("query").include)),
      },
      200,
    ),
  )
  .openapi(update, async (c) => {
    const { ctx, answer } = keptAnswer<Contact>(c, 200);
    return c.json(answer(withEtag(c, await updateContact(ctx, c.req.valid("param").id, c.req.valid("json")))), 200);
  })
  .openapi(remove, async (c) => {
    const { id } = c.req.valid("param");
    if (c.req.valid("query").erase === "true") {
      requirePermission(c, "contacts:erase");
      const { ctx, answer } = keptAnswer<Erasure>(c, 200, "Contact erased");
      return c.json(answer(await eraseContact(ctx, id)), 200);
    }
    await deleteContact(serviceContext(c), id);
    return c.json({ success: true as const, message: "Contact deleted", data: { id, deleted: true as const } }, 200);
  })
  .openapi(restore, async (c) =>
    c.json({ success: true as const, data: withEtag(c, await restoreContact(serviceContext(c), c.req.valid("param").id)) }, 200),
  )
  .openapi(activities, async (c) =>
    c.json({ success: true as const, ...(await listActivities(serviceContext(c), c.req.valid("param").id, c.req.valid("query"))) }, 200),
  )
  .openapi(logActivity, async (c) =>
    c.json({ success: true as const, data: await createActivity(serviceContext(c), c.req.valid("param").id, c.req.valid("json")) }, 201),
  )
  .openapi(merge, async (c) => {
    const { ctx, answer } = keptAnswer<Contact>(c, 200);
    return c.json(answer(withEtag(c, await mergeContacts(ctx, c.req.valid("param").id, c.req.valid("json").sourceIds))), 200);
  })
  .openapi(tag, async (c) =>
    c.json(
      { success: true as const, data: withEtag(c, await addTags(serviceContext(c), c.req.valid("param").id, c.req.valid("json").tags)) },
      200,
    ),
  );
