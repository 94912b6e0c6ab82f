import { OpenAPIHono } from "@hono/zod-openapi";
import { CRM, crmError, crmSuccess } from "../crm/body";
import { MAX_DEFINITIONS_PER_OBJECT } from "../crm/custom-fields";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute, jsonBody } from "../platform/route";
import { CustomField, CustomFieldCreate, CustomFieldIdParam, CustomFieldList, CustomFieldListQuery } from "./schemas";
import { createCustomField, deleteCustomField, listCustomFields } from "./service";

const tags = ["Custom fields"];
const security = [{ bearerAuth: [] }];

const create = defineRoute(CRM, {
  operationId: "createCustomField",
  method: "post",
  path: "/v1/custom-fields",
  tags,
  security,
  summary: "Define a custom field",
  description: `A field of your own on contacts, deals or properties: its values are set in \`customFields\` on those records (checked
against its type), filter their lists (\`customFields.<key>=…\`, \`customFields.<key>[gte]=…\`) and sort them (\`sort=customFields.<key>\`).
At most ${MAX_DEFINITIONS_PER_OBJECT} per object. Needs \`custom-fields:manage\` (owners and admins).`,
  request: jsonBody(CustomFieldCreate),
  responses: {
    201: crmSuccess("The field", CustomField),
    409: crmError(
      `The object already has a field with this key (duplicate_key), or ${MAX_DEFINITIONS_PER_OBJECT} fields (too_many_custom_fields)`,
    ),
  },
});

const list = defineRoute(CRM, {
  operationId: "listCustomFields",
  method: "get",
  path: "/v1/custom-fields",
  tags,
  security,
  summary: "List custom fields",
  description: "Newest first, keyset-paginated; `object` keeps one kind of record's. Needs `custom-fields:read`.",
  request: { query: CustomFieldListQuery },
  responses: { 200: { description: "A page of custom fields", content: { "application/json": { schema: CustomFieldList } } } },
});

const remove = defineRoute(CRM, {
  operationId: "deleteCustomField",
  method: "delete",
  path: "/v1/custom-fields/{id}",
  tags,
  security,
  summary: "Delete a custom field",
  description: `Its values are taken off every record before the answer (their ETags change; no event, no updatedAt), so they are no longer
shown, filtered or exported, and a field created again with the key starts empty. Writes that still send the key get 422.
A delete of a field whose earlier delete was cut short finishes it and answers 404.`,
  request: { params: CustomFieldIdParam },
  responses: { 204: { description: "Deleted" }, 404: crmError("No custom field with this id in your organization") },
});

export const customFieldRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(create, async (c) =>
    c.json({ success: true as const, data: await createCustomField(serviceContext(c), c.req.valid("json")) }, 201),
  )
  .openapi(list, async (c) => c.json({ success: true as const, ...(await listCustomFields(serviceContext(c), c.req.valid("query"))) }, 200))
  .openapi(remove, async (c) => {
    await deleteCustomField(serviceContext(c), c.req.valid("param").id);
    return c.body(null, 204);
  });
