import { OpenAPIHono } from "@hono/zod-openapi";
import { CRM } from "../crm/body";
import { listQuery } from "../crm/list-query";
import { serviceContext } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { validationHook } from "../platform/openapi";
import { defineRoute } from "../platform/route";
import { IntegrationList } from "./schemas";
import { listIntegrations } from "./service";

const list = defineRoute(CRM, {
  operationId: "listIntegrations",
  method: "get",
  path: "/v1/integrations",
  tags: ["Integrations"],
  security: [{ bearerAuth: [] }],
  summary: "List the organization's integrations",
  description: `The OAuth clients users of the organization granted access (\`type: "oauth_client"\`: the client, its name, who granted it,
what those grants allow, when it connected) and the API keys (\`type: "api_key"\`), newest first, keyset-paginated. A client
is listed while one of its grants is live (neither revoked nor 30 days unused). \`integration.connected\` and
\`integration.disconnected\` carry an item as listed here.`,
  request: { query: listQuery({}) },
  responses: { 200: { description: "A page of integrations", content: { "application/json": { schema: IntegrationList } } } },
});

export const integrationRoutes = new OpenAPIHono<AppBindings>({ defaultHook: validationHook }).openapi(list, async (c) =>
  c.json({ success: true as const, ...(await listIntegrations(serviceContext(c), c.req.valid("query"))) }, 200),
);
