import { OpenAPIHono } from "@hono/zod-openapi";
import { Contact, ContactPageQuery } from "../contacts/schemas";
import { CRM, CRM_PRECONDITION_ERROR, crmDeleted, crmError, crmSuccess, Page } from "../crm/body";
import { requirePermission, serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { ETAG_HEADER, withEtag } from "../platform/etag";
import { defineRoute, jsonBody } from "../platform/route";
import {
  MAX_SMART_LISTS,
  SmartList,
  SmartListCreate,
  SmartListIdParam,
  SmartListListQuery,
  SmartListPage,
  SmartListUpdate,
} from "./schemas";
import { createSmartList, deleteSmartList, getSmartList, listSmartListContacts, listSmartLists, updateSmartList } from "./service";

const tags = ["Smart lists"];
const security = [{ bearerAuth: [] }];
const COUNT = "`count` is how many contacts match now, exactly as `pagination.total` of its contacts list.";

const create = defineRoute(CRM, {
  operationId: "createSmartList",
  method: "post",
  path: "/v1/smart-lists",
  tags,
  security,
  summary: "Save a contact query as a smart list",
  description: `\`query\` holds GET /v1/contacts's parameters by name (e.g. \`{"lastContactedAt[lte]": "-P30D"}\`: not contacted in 30 days), checked as
that list checks them: a 422 lists every problem under \`query.<name>\`. A relative date bound is read at the time of each request. ${COUNT}
From then on \`smart_list.entered\` and \`smart_list.exited\` fire when a contact starts or stops matching through a write, and through time for
relative bounds (a daily pass). At most ${MAX_SMART_LISTS} per organization (409 too_many_smart_lists). Needs \`smart-lists:write\`.`,
  request: jsonBody(SmartListCreate),
  responses: {
    201: crmSuccess("The smart list with its count", SmartList, ETAG_HEADER),
    409: crmError(`The organization has ${MAX_SMART_LISTS} smart lists (too_many_smart_lists)`),
  },
});

const list = defineRoute(CRM, {
  operationId: "listSmartLists",
  method: "get",
  path: "/v1/smart-lists",
  tags,
  security,
  summary: "List smart lists with their counts",
  description: `Newest first, keyset-paginated. ${COUNT} Needs \`smart-lists:read\`.`,
  request: { query: SmartListListQuery },
  responses: { 200: { description: "A page of smart lists", content: { "application/json": { schema: SmartListPage } } } },
});

const read = defineRoute(CRM, {
  operationId: "getSmartList",
  method: "get",
  path: "/v1/smart-lists/{id}",
  tags,
  security,
  summary: "Get a smart list with its count",
  description: `${COUNT} Needs \`smart-lists:read\`.`,
  request: { params: SmartListIdParam },
  responses: {
    200: crmSuccess("The smart list", SmartList, ETAG_HEADER),
    404: crmError("No smart list with this id in your organization"),
  },
});

const update = defineRoute(CRM, {
  operationId: "updateSmartList",
  method: "patch",
  path: "/v1/smart-lists/{id}",
  tags,
  security,
  summary: "Rename a smart list or change its query",
  description:
    "The fields sent replace the list's; a new `query` replaces the old one whole and is checked as on create, and the contacts matching it are its members from then on (no events for the change itself). Needs `smart-lists:write`.",
  request: { params: SmartListIdParam, ...jsonBody(SmartListUpdate) },
  responses: {
    200: crmSuccess("The smart list", SmartList, ETAG_HEADER),
    404: crmError("No smart list with this id in your organization"),
    ...CRM_PRECONDITION_ERROR,
  },
});

const remove = defineRoute(CRM, {
  operationId: "deleteSmartList",
  method: "delete",
  path: "/v1/smart-lists/{id}",
  tags,
  security,
  summary: "Delete a smart list",
  description: "The list goes; its contacts stay as they are. Needs `smart-lists:write`.",
  request: { params: SmartListIdParam },
  responses: { 200: crmDeleted, 404: crmError("No smart list with this id in your organization"), ...CRM_PRECONDITION_ERROR },
});

const contacts = defineRoute(CRM, {
  operationId: "listSmartListContacts",
  method: "get",
  path: "/v1/smart-lists/{id}/contacts",
  tags,
  security,
  summary: "List the contacts of a smart list",
  description:
    "GET /v1/contacts with the list's saved query (its sort too), read now: the same page, cursor and total. `limit`, `cursor`, `fields` and `include` are this request's. Needs `smart-lists:read` and `contacts:read`.",
  request: { params: SmartListIdParam, query: ContactPageQuery },
  responses: {
    200: { description: "A page of contacts", content: { "application/json": { schema: Page(Contact.partial()) } } },
    403: crmError("The credential lacks contacts:read (insufficient_permission)"),
    404: crmError("No smart list with this id in your organization"),
    422: crmError("The saved query names a custom field deleted since (invalid_query): change the query"),
  },
});

export const smartListRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(create, async (c) =>
    c.json({ success: true as const, data: withEtag(c, await createSmartList(serviceContext(c), c.req.valid("json"))) }, 201),
  )
  .openapi(list, async (c) => c.json({ success: true as const, ...(await listSmartLists(serviceContext(c), c.req.valid("query"))) }, 200))
  .openapi(read, async (c) =>
    c.json({ success: true as const, data: withEtag(c, await getSmartList(serviceContext(c), c.req.valid("param").id)) }, 200),
  )
  .openapi(update, async (c) =>
    c.json(
      { success: true as const, data: withEtag(c, await updateSmartList(serviceContext(c), c.req.valid("param").id, c.req.valid("json"))) },
      200,
    ),
  )
  .openapi(remove, async (c) => {
    const { id } = c.req.valid("param");
    await deleteSmartList(serviceContext(c), id);
    return c.json({ success: true as const, message: "Smart list deleted", data: { id, deleted: true as const } }, 200);
  })
  .openapi(contacts, async (c) => {
    // The contacts themselves: what GET /v1/contacts needs too.
    requirePermission(c, "contacts:read");
    const page = await listSmartListContacts(serviceContext(c), c.req.valid("param").id, c.req.valid("query"));
    return c.json({ success: true as const, ...page }, 200);
  });
