import { OpenAPIHono } from "@hono/zod-openapi";
import { CRM, crmError, crmSuccess } from "../crm/body";
import { listQuery } from "../crm/list-query";
import { grantedPermissions, serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute, jsonBody } from "../platform/route";
import { ApiKeyIdParam, ApiKeyList, ApiKeyWithSecret, CreateApiKey, MAX_KEY_LIFETIME_DAYS } from "./schemas";
import { createApiKey, deleteApiKey, listApiKeys, MAX_KEYS_PER_ORGANIZATION } from "./service";

const tags = ["API keys"];
const security = [{ bearerAuth: [] }];

const create = defineRoute(CRM, {
  operationId: "createApiKey",
  method: "post",
  path: "/v1/api-keys",
  tags,
  security,
  summary: "Create an API key",
  description: `A bearer for a machine (\`Authorization: Bearer bk_…\`), accepted on /v1, /api, /plants and the MCP endpoint. It acts as you,
with \`permissions\` ∩ what your role allows at each request, until \`expiresAt\` (at most ${MAX_KEY_LIFETIME_DAYS} days ahead; absent: until deleted).
Created with an API key or an OAuth access token, it expires no later than that credential: \`expiresAt\` is capped at its end (the answer says when).
It may carry only permissions you hold yourself (403 \`insufficient_role\` or \`insufficient_permission\` otherwise). The key is in this answer
only: only its SHA-256 is kept. Emits \`integration.connected\`. At most ${MAX_KEYS_PER_ORGANIZATION} keys per organization.`,
  request: jsonBody(CreateApiKey),
  responses: {
    201: crmSuccess("The key, with `key` shown this once", ApiKeyWithSecret),
    409: crmError(`The organization already holds ${MAX_KEYS_PER_ORGANIZATION} keys (too_many_api_keys)`),
  },
});

const list = defineRoute(CRM, {
  operationId: "listApiKeys",
  method: "get",
  path: "/v1/api-keys",
  tags,
  security,
  summary: "List API keys",
  description:
    "Newest first, keyset-paginated: each key's name, prefix, permissions, creator, creation, last use (to the minute) and expiry. Never a key.",
  request: { query: listQuery({}) },
  responses: { 200: { description: "A page of keys", content: { "application/json": { schema: ApiKeyList } } } },
});

const remove = defineRoute(CRM, {
  operationId: "deleteApiKey",
  method: "delete",
  path: "/v1/api-keys/{id}",
  tags,
  security,
  summary: "Delete an API key",
  description: "The key answers 401 from the next request on. Emits `integration.disconnected`.",
  request: { params: ApiKeyIdParam },
  responses: {
    204: { description: "Deleted" },
    404: crmError("No key with this id in your organization"),
    422: crmError("id is not a UUID"),
  },
});

export const apiKeyRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook })
  .openapi(create, async (c) => {
    c.set("replayOmits", [["data", "key"]]);
    const creator = { role: c.get("user").role, granted: grantedPermissions(c), expiresAt: c.get("credentialExpiresAt") };
    return c.json({ success: true as const, data: await createApiKey(serviceContext(c), c.req.valid("json"), creator) }, 201);
  })
  .openapi(list, async (c) => c.json({ success: true as const, ...(await listApiKeys(serviceContext(c), c.req.valid("query"))) }, 200))
  .openapi(remove, async (c) => {
    await deleteApiKey(serviceContext(c), c.req.valid("param").id);
    return c.body(null, 204);
  });
