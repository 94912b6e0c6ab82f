import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import { call, json } from "./client";
import type { TestPrincipal } from "./factories";

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

/** An access token through the OAuth server's own flow: a session holder authorizes at once, the code is exchanged. */
export async function oauthAccessToken(principal: TestPrincipal, scope?: string): Promise<string> {
  const verifier = crypto.randomUUID() + crypto.randomUUID();
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  const challenge = btoa(String.fromCharCode(...digest))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
  const redirect = "http://127.0.0.1:4321/callback"; // a redirect pattern of the mcp-dev client (wrangler.toml OAUTH_CLIENTS)
  const query = new URLSearchParams({
    client_id: "mcp-dev",
    redirect_uri: redirect,
    response_type: "code",
    code_challenge: challenge,
    code_challenge_method: "S256",
    ...(scope ? { scope } : {}),
  });
  // Manual: the Worker's fetch would follow the redirect, and the client's loopback address is no route of ours.
  const authorized = await exports.default.fetch(
    new Request(`http://api.test/oauth/authorize?${query}`, {
      headers: { authorization: `Bearer ${principal.token}` },
      redirect: "manual",
    }),
  );
  expect(authorized.status).toBe(302);
  const code = new URL(authorized.headers.get("location")!).searchParams.get("code")!;
  const form = new URLSearchParams({
    grant_type: "authorization_code",
    code,
    redirect_uri: redirect,
    client_id: "mcp-dev",
    code_verifier: verifier,
  });
  const ip = `10.77.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250) + 1}`;
  const res = await call("POST", "/oauth/token", {
    rawBody: form.toString(),
    headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": ip },
  });
  const body = await json(res);
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.access_token as string;
}
