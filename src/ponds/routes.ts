import { OpenAPIHono } from "@hono/zod-openapi";
import { Contact, IdParam } from "../contacts/schemas";
import { CRM, CRM_PRECONDITION_ERROR, crmDeleted, crmError, crmSuccess, Page } from "../crm/body";
import { listQuery, NoQuery } from "../crm/list-query";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { ETAG_HEADER, withEtag } from "../platform/etag";
import { defineRoute, jsonBody } from "../platform/route";
import { Pond, PondCreate, PondListQuery, PondUpdate } from "./schemas";
import { createPond, deletePond, getPond, listPonds, listPondContacts, updatePond } from "./service";

const tags = ["Ponds"];
const security = [{ bearerAuth: [] }];
const NOT_FOUND = { 404: crmError("No pond with this id in your organization (not_found_error)") };
const BAD_MEMBER = {
  422: crmError("A member that is no user of your organization (invalid_reference, one per member), or another invalid field"),
};
const MANAGE = "Owners and admins only (`ponds:manage`).";

const create = defineRoute(CRM, {
  operationId: "createPond",
  method: "post",
  path: "/v1/ponds",
  tags,
  security,
  summary: "Create a pond",
  description: `A pond is a shared pool of leads: a lead \`settings.leadRouting\` sends to a pond (\`{pondId}\`) is created
unassigned and waits in it; any member claims it with \`POST /v1/contacts/{id}/claim\`. ${MANAGE}`,
  request: jsonBody(PondCreate),
  responses: { 201: crmSuccess("The pond", Pond, ETAG_HEADER), ...BAD_MEMBER },
});

const list = defineRoute(CRM, {
  operationId: "listPonds",
  method: "get",
  path: "/v1/ponds",
  tags,
  security,
  summary: "List ponds, newest first",
  description:
    "Each with its members and how many leads wait in it. Keyset-paginated: pass `pagination.nextCursor` back as `cursor`. Needs `contacts:read`.",
  request: { query: PondListQuery },
  responses: { 200: { description: "A page of ponds", content: { "application/json": { schema: Page(Pond) } } } },
});

const get = defineRoute(CRM, {
  operationId: "getPond",
  method: "get",
  path: "/v1/ponds/{id}",
  tags,
  security,
  summary: "Get a pond",
  description: "Needs `contacts:read`.",
  request: { params: IdParam, query: NoQuery },
  responses: { 200: crmSuccess("The pond", Pond, ETAG_HEADER), ...NOT_FOUND },
});

const update = defineRoute(CRM, {
  operationId: "updatePond",
  method: "patch",
  path: "/v1/ponds/{id}",
  tags,
  security,
  summary: "Rename a pond or replace its members",
  description: `Only what is sent changes; \`members\` is replaced whole. Leads waiting in the pond stay there. ${MANAGE}`,
  request: { params: IdParam, ...jsonBody(PondUpdate) },
  responses: { 200: crmSuccess("The pond", Pond, ETAG_HEADER), ...NOT_FOUND, ...BAD_MEMBER, ...CRM_PRECONDITION_ERROR },
});

const remove = defineRoute(CRM, {
  operationId: "deletePond",
  method: "delete",
  path: "/v1/ponds/{id}",
  tags,
  security,
  summary: "Delete a pond",
  description: `Refused (409 \`pond_in_use\`) while leads wait in it or \`settings.leadRouting\` sends leads to it. ${MANAGE}`,
  request: { params: IdParam, query: NoQuery },
  responses: {
    200: crmDeleted,
    ...NOT_FOUND,
    409: crmError("Leads wait in the pond, or the lead routing names it (pond_in_use)"),
    ...CRM_PRECONDITION_ERROR,
  },
});

const contacts = defineRoute(CRM, {
  operationId: "listPondContacts",
  method: "get",
  path: "/v1/ponds/{id}/contacts",
  tags,
  security,
  summary: "List the leads waiting in a pond, newest first",
  description:
    "The pond's unassigned leads, for its members to pick one and claim it (`POST /v1/contacts/{id}/claim`). Keyset-paginated with the total. Needs `contacts:read`.",
  request: { params: IdParam, query: listQuery({}) },
  responses: { 200: { description: "A page of contacts", content: { "application/json": { schema: Page(Contact) } } }, ...NOT_FOUND },
});

export const pondRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(create, async (c) =>
    c.json({ success: true as const, data: withEtag(c, await createPond(serviceContext(c), c.req.valid("json"))) }, 201),
  )
  .openapi(list, async (c) => c.json({ success: true as const, ...(await listPonds(serviceContext(c), c.req.valid("query"))) }, 200))
  .openapi(get, async (c) =>
    c.json({ success: true as const, data: withEtag(c, await getPond(serviceContext(c), c.req.valid("param").id)) }, 200),
  )
  .openapi(update, async (c) =>
    c.json(
      { success: true as const, data: withEtag(c, await updatePond(serviceContext(c), c.req.valid("param").id, c.req.valid("json"))) },
      200,
    ),
  )
  .openapi(remove, async (c) => {
    const { id } = c.req.valid("param");
    await deletePond(serviceContext(c), id);
    return c.json({ success: true as const, message: "Pond deleted", data: { id, deleted: true as const } }, 200);
  })
  .openapi(contacts, async (c) =>
    c.json({ success: true as const, ...(await listPondContacts(serviceContext(c), c.req.valid("param").id, c.req.valid("query"))) }, 200),
  );
