import {
  createMcpHandler,
  isLegacyRequest,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/server/validators/cf-worker";
import { appointmentTools } from "./appointment-tools";
import { briefTools } from "./brief-tools";
import { contactTools } from "./contact-tools";
import { dealTools } from "./deal-tools";
import { documentTools } from "./document-tools";
import { orgTools } from "./org-tools";
import { pondTools } from "./pond-tools";
import { planTools } from "./plan-tools";
import { propertyTools } from "./property-tools";
import { taskTools } from "./task-tools";
import { reputationTools } from "./reputation-tools";
import { smartListTools } from "./smart-list-tools";
import { templateTools } from "./template-tools";
import { RESOURCE_TEMPLATES, readResource } from "./resources";
import type { McpTool, ToolScope } from "./tool";

/** Every tool, in name order: tools/list answers the same list in the same order to every caller and era. */
export const MCP_TOOLS: McpTool[] = [
  ...contactTools,
  ...dealTools,
  ...documentTools,
  ...templateTools,
  ...propertyTools,
  ...reputationTools,
  ...taskTools,
  ...orgTools,
  ...briefTools,
  ...pondTools,
  ...smartListTools,
  ...appointmentTools,
  ...planTools,
].sort((a, b) => (a.name < b.name ? -1 : 1));
const TOOLS_BY_NAME = new Map(MCP_TOOLS.map((t) => [t.name, t]));

/** The tool of that name, if there is one. */
export const toolNamed = (name: string): McpTool | undefined => TOOLS_BY_NAME.get(name);
const TOOL_LIST = { tools: MCP_TOOLS.map((t) => t.definition) };

/** The revision a 2026-07-28 client names in its `_meta`; a 2025 client negotiates its own through `initialize`. */
export const MODERN_PROTOCOL_VERSION = "2026-07-28";

/**
 * How long a 2026-07-28 client may keep `tools/list` and `server/discover` (their `ttlMs` / `cacheScope`): the list
 * is the same for every caller (a tool outside the token's grant is listed and answers a step-up), so any cache may
 * share it; it changes only with a deploy, which a quarter of an hour of staleness survives.
 */
const LIST_CACHE = { ttlMs: 15 * 60_000, cacheScope: "public" } as const;

const INSTRUCTIONS = `Tools over one real-estate brokerage's CRM: its contacts and leads, deals with their tasks and the pipeline, listings,
documents and their obligations, signature envelopes, its reputation (testimonials, surveys, referrals), its team and custom
fields, and the log of recent changes. Start the day with daily_brief; list_my_tasks lists the tasks due today or overdue (my_tasks, the deal tasks alone). Every tool
acts for the signed-in user, inside that user's organization, and only with the permissions the access token was granted; a tool
outside them asks the user to authorize it (HTTP 403 with the scope to request) or answers an error naming the permission it needs.
PDFs (a document, a sealed copy, a certificate) come as resource links: read them with resources/read.`;

/**
 * The SDK picks Ajv on Node and @cfworker/json-schema on workerd by export condition; naming the interpreter keeps the
 * choice the same under the test pool too. Ajv compiles schemas to code, which workerd forbids (no eval).
 */
const jsonSchemaValidator = new CfWorkerJsonSchemaValidator();

/**
 * A server for one request's caller: the tools close over the caller's context, so nothing outlives the request.
 * The SDK's low-level Server rather than McpServer, whose tools/call answers an unknown tool and bad arguments as
 * tool results (MCP says: a JSON-RPC error) and which advertises `tools.listChanged`, a notification this stateless
 * server has no stream to send on. The capabilities are only what it honours: a fixed list of tools, and the files
 * their answers link to as resources (mcp/resources.ts).
 */
export function createMcpServer(scope: ToolScope): Server {
  const server = new Server(
    { name: "brokerage-edge-api", title: "Brokerage CRM", version: "0.1.0" },
    {
      capabilities: { tools: {}, resources: {} },
      instructions: INSTRUCTIONS,
      jsonSchemaValidator,
      cacheHints: {
        "tools/list": LIST_CACHE,
        "server/discover": LIST_CACHE,
        "resources/list": LIST_CACHE,
        "resources/templates/list": LIST_CACHE,
      },
    },
  );
  server.setRequestHandler("tools/list", () => TOOL_LIST);
  // The files are reached through the tools' resource links, with the caller's permissions; none is listed.
  server.setRequestHandler("resources/list", () => ({ resources: [] }));
  server.setRequestHandler("resources/templates/list", () => RESOURCE_TEMPLATES);
  server.setRequestHandler("resources/read", (request) => readResource(request.params.uri, scope));
  server.setRequestHandler("tools/call", async (request) => {
    const tool = TOOLS_BY_NAME.get(request.params.name);
    if (!tool) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    return tool.call(request.params.arguments ?? {}, scope);
  });
  return server;
}

/**
 * Answers one POST in either protocol era, from one factory. A request carrying the 2026-07-28 `_meta` envelope is
 * served statelessly by the SDK's handler (`server/discover`, no `initialize`; it checks `Mcp-Method` / `Mcp-Name`
 * against the body). A 2025 request (`initialize`, then calls with or without a session id) is served by a fresh
 * server over the 2025 transport in stateless JSON mode, as the SDK's own fallback does but without its SSE framing
 * (no tool sends progress, so a JSON answer loses nothing and every client reads it). Nothing outlives the request,
 * so any isolate serves any call.
 */
export async function serveMcp(
  request: Request,
  parsedBody: unknown,
  scopeFor: (era: "legacy" | "modern") => ToolScope,
): Promise<Response> {
  const options = parsedBody === undefined ? undefined : { parsedBody };
  if (await isLegacyRequest(request, parsedBody)) {
    const server = createMcpServer(scopeFor("legacy"));
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    try {
      return await transport.handleRequest(request, options);
    } finally {
      await server.close();
    }
  }
  // "auto" answers JSON unless a handler sends something before its result, which none does (no progress).
  const handler = createMcpHandler(() => createMcpServer(scopeFor("modern")), { legacy: "reject" });
  try {
    return await handler.fetch(request, options);
  } finally {
    await handler.close();
  }
}
