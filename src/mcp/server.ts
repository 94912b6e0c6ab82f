import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { contactTools } from "./contact-tools";
import { dealTools } from "./deal-tools";
import { documentTools } from "./document-tools";
import type { McpTool, ToolScope } from "./tool";

export const MCP_TOOLS: McpTool[] = [...contactTools, ...dealTools, ...documentTools];

/** Array elements and object members one tools/call may carry: a contact with every list full is well under it. */
const MAX_TOOL_INPUT_ELEMENTS = 2_000;

const INSTRUCTIONS = `Tools over one real-estate brokerage's CRM: its contacts, deals and pipeline, its documents and their obligations,
and signature envelopes. Every tool acts for the signed-in user, inside that user's organization, and only with the permissions
the access token was granted; a tool outside them answers an error naming the permission it needs.`;

/**
 * The SDK's default validator is Ajv, which compiles schemas to code: workerd forbids that (no eval), and building one
 * per request costs. This one interprets schemas, holds no bindings and is shared by the isolate's requests.
 */
const jsonSchemaValidator = new CfWorkerJsonSchemaValidator();

/** A server for one request's caller: the tools close over the caller's context, so nothing outlives the request. */
export function createMcpServer(scope: ToolScope): McpServer {
  const server = new McpServer(
    { name: "brokerage-edge-api", title: "Brokerage CRM", version: "0.1.0" },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS, maxToolInputElements: MAX_TOOL_INPUT_ELEMENTS, jsonSchemaValidator },
  );
  for (const tool of MCP_TOOLS) tool.register(server, scope);
  return server;
}
