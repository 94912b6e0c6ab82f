import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { contactTools } from "./contact-tools";
import { dealTools } from "./deal-tools";
import { documentTools } from "./document-tools";
import type { McpTool, ToolScope } from "./tool";

export const MCP_TOOLS: McpTool[] = [...contactTools, ...dealTools, ...documentTools];
const TOOLS_BY_NAME = new Map(MCP_TOOLS.map((t) => [t.name, t]));

/** The tool of that name, if there is one. */
export const toolNamed = (name: string): McpTool | undefined => TOOLS_BY_NAME.get(name);
const TOOL_LIST = { tools: MCP_TOOLS.map((t) => t.definition) };

const INSTRUCTIONS = `Tools over one real-estate brokerage's CRM: its contacts, deals and pipeline, its documents and their obligations,
and signature envelopes. Every tool acts for the signed-in user, inside that user's organization, and only with the permissions
the access token was granted; a tool outside them answers an error naming the permission it needs.`;

/**
 * The SDK's default validator is Ajv, which compiles schemas to code: workerd forbids that (no eval), and building one
 * per request costs. This one interprets schemas, holds no bindings and is shared by the isolate's requests.
 */
const jsonSchemaValidator = new CfWorkerJsonSchemaValidator();

/**
 * A server for one request's caller: the tools close over the caller's context, so nothing outlives the request.
 * The SDK's low-level Server rather than McpServer, whose tools/call answers an unknown tool and bad arguments as
 * tool results (MCP says: a JSON-RPC error) and which advertises `tools.listChanged`, a notification this stateless
 * server has no stream to send on. The capabilities are only what it honours: a fixed list of tools.
 */
export function createMcpServer(scope: ToolScope): Server {
  const server = new Server(
    { name: "brokerage-edge-api", title: "Brokerage CRM", version: "0.1.0" },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS, jsonSchemaValidator },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => TOOL_LIST);
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = TOOLS_BY_NAME.get(request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    return tool.call(request.params.arguments ?? {}, scope);
  });
  return server;
}
