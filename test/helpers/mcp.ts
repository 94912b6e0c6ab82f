import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { exports } from "cloudflare:workers";
import { expect } from "vitest";

export const MCP_URL = "http://api.test/mcp";

/** The Worker's own fetch handler, in-process: the MCP client's HTTP goes through the whole app, auth included. */
export const workerFetch = (url: string | URL, init?: RequestInit) => exports.default.fetch(new Request(url, init));

const newClient = () => new Client({ name: "mcp-test", version: "1.0.0" }, { jsonSchemaValidator: new CfWorkerJsonSchemaValidator() });

/**
 * The official MCP client (1.x, protocol 2025-11-25) over Streamable HTTP, with the bearer token on every request.
 * It lists the tools first, as clients do: from then on it checks every answer against the tool's outputSchema and
 * throws on a mismatch, so every tool call of a test checks the schema too.
 */
export async function connect(token?: string, { list = true } = {}): Promise<Client> {
  const client = newClient();
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(MCP_URL), { fetch: workerFetch, requestInit: { headers } }));
  if (token && list) await client.listTools();
  return client;
}

/** Calls a tool; an error's body is read from its text (errors carry no structured content). */
export async function tool(client: Client, name: string, args: Record<string, unknown> = {}) {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content[0]?.type === "text" ? result.content[0].text : "";
  const data = result.structuredContent ?? (result.isError ? JSON.parse(text) : undefined);
  return { isError: result.isError ?? false, text, data: data as Record<string, any>, content: result.content };
}

export const initialize = (id = 1) => ({
  jsonrpc: "2.0",
  id,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
});

export const JSON_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
export const post = (body: unknown, headers: Record<string, string> = {}) =>
  workerFetch(MCP_URL, { method: "POST", headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) });

/** One raw JSON-RPC request at a protocol version, as a client past initialize sends it; answers the JSON-RPC body. */
export async function rpc(token: string, method: string, params: unknown, protocolVersion = "2025-11-25") {
  const res = await post(
    { jsonrpc: "2.0", id: 9, method, params },
    { authorization: `Bearer ${token}`, "mcp-protocol-version": protocolVersion },
  );
  expect(res.status).toBe(200);
  return (await res.json()) as { result?: Record<string, any>; error?: { code: number; message: string; data?: any } };
}
