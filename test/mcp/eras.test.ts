// Both protocol eras at one endpoint: 2026-07-28 requests (no initialize, the `_meta` envelope, server/discover,
// Mcp-Method / Mcp-Name) and 2025 clients through initialize, from one tool registry.
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from "@modelcontextprotocol/client";
import { describe, expect, it } from "vitest";
import { MCP_TOOLS } from "../../src/mcp/server";
import { createPrincipal } from "../helpers/factories";
import { connect, initialize, MCP_URL, post, tool, workerFetch } from "../helpers/mcp";

const MODERN = "2026-07-28";
const envelope = {
  "io.modelcontextprotocol/protocolVersion": MODERN,
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
};

/** One 2026-07-28 request as the spec spells it: the envelope in `_meta`, the method (and name) in headers too. */
async function modern(token: string, method: string, params: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const name: Record<string, string> = typeof params.name === "string" ? { "mcp-name": params.name } : {};
  const res = await post(
    { jsonrpc: "2.0", id: 7, method, params: { ...params, _meta: envelope } },
    { authorization: `Bearer ${token}`, "mcp-protocol-version": MODERN, "mcp-method": method, ...name, ...headers },
  );
  return { status: res.status, body: (await res.json()) as { result?: Record<string, any>; error?: { code: number; message: string } } };
}

/** The official 2.x client pinned to the 2026-07-28 era: it never sends initialize. */
async function connectModern(token: string, seen: string[] = []) {
  const client = new ModernClient({ name: "modern-test", version: "1.0.0" }, { versionNegotiation: { mode: { pin: MODERN } } });
  const fetch = (url: string | URL, init?: RequestInit) => {
    seen.push(JSON.parse(String(init?.body ?? "{}")).method);
    return workerFetch(url, init);
  };
  await client.connect(new ModernTransport(new URL(MCP_URL), { fetch, requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

describe("MCP 2026-07-28: stateless, no initialize", () => {
  it("answers server/discover with the revisions, capabilities and instructions, cacheable", async () => {
    const { token } = await createPrincipal();
    const { status, body } = await modern(token, "server/discover");
    expect(status).toBe(200);
    expect(body.result).toMatchObject({
      supportedVersions: [MODERN],
      capabilities: { tools: {}, resources: {} },
      _meta: { "io.modelcontextprotocol/serverInfo": { name: "brokerage-edge-api" } },
      instructions: expect.stringContaining("daily_brief"),
      ttlMs: 900_000,
      cacheScope: "public",
    });
  });

  it("lists the tools with ttlMs and cacheScope, in the same order every time, and calls one without a session", async () => {
    const { token } = await createPrincipal();
    const first = await modern(token, "tools/list");
    expect(first.body.result).toMatchObject({ ttlMs: 900_000, cacheScope: "public" });
    const names = first.body.result!.tools.map((t: { name: string }) => t.name);
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(MCP_TOOLS.map((t) => t.name));
    expect((await modern(token, "tools/list")).body.result!.tools.map((t: { name: string }) => t.name)).toEqual(names);

    const called = await modern(token, "tools/call", { name: "get_pipeline", arguments: {} });
    expect(called.status).toBe(200);
    expect(called.body.result).toMatchObject({ structuredContent: { pipeline: { totalDeals: 0 } } });
  });

  it("refuses a request whose Mcp-Method or Mcp-Name header disagrees with its body, or lacks it", async () => {
    const { token } = await createPrincipal();
    const wrongMethod = await modern(token, "tools/call", { name: "get_pipeline", arguments: {} }, { "mcp-method": "tools/list" });
    expect(wrongMethod.status).toBe(400);
    expect(wrongMethod.body.error).toMatchObject({ code: -32020, message: expect.stringContaining("Mcp-Method") });
    const wrongName = await modern(token, "tools/call", { name: "get_pipeline", arguments: {} }, { "mcp-name": "merge_contacts" });
    expect(wrongName.status).toBe(400);
    expect(wrongName.body.error).toMatchObject({ code: -32020 });
    // Without the header at all.
    const res = await post(
      { jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: envelope } },
      { authorization: `Bearer ${token}`, "mcp-protocol-version": MODERN },
    );
    expect(res.status).toBe(400);
    // A refused call ran nothing: the same tool through a well-formed request still sees no deals.
    expect((await modern(token, "tools/call", { name: "get_pipeline", arguments: {} })).body.result).toBeDefined();
  });

  it("answers a revision it does not serve with the unsupported-version error naming the ones it does", async () => {
    const { token } = await createPrincipal();
    const res = await post(
      {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/list",
        params: { _meta: { ...envelope, "io.modelcontextprotocol/protocolVersion": "2099-01-01" } },
      },
      { authorization: `Bearer ${token}`, "mcp-protocol-version": "2099-01-01", "mcp-method": "tools/list" },
    );
    const body = (await res.json()) as { error?: { code: number; data?: { supported?: string[] } } };
    expect(body.error?.code).toBe(-32022);
    expect(JSON.stringify(body.error)).toContain(MODERN);
  });

  it("has no change stream to listen to: subscriptions/listen answers method not found, without opening a stream", async () => {
    const { token } = await createPrincipal();
    const res = await post(
      { jsonrpc: "2.0", id: 3, method: "subscriptions/listen", params: { notifications: { toolsListChanged: true }, _meta: envelope } },
      { authorization: `Bearer ${token}`, "mcp-protocol-version": MODERN, "mcp-method": "subscriptions/listen" },
    );
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/application\/json/);
    expect(await res.json()).toMatchObject({ id: 3, error: { code: -32601 } });
  });

  it("keeps the 401 and the origin check in front of the new era", async () => {
    const unauthenticated = await post(
      { jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: envelope } },
      {
        "mcp-protocol-version": MODERN,
        "mcp-method": "server/discover",
      },
    );
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get("www-authenticate")).toMatch(/resource_metadata=/);
    const { token } = await createPrincipal();
    const foreign = await post(
      { jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: envelope } },
      {
        authorization: `Bearer ${token}`,
        origin: "https://evil.example",
        "mcp-protocol-version": MODERN,
        "mcp-method": "server/discover",
      },
    );
    expect(foreign.status).toBe(403);
  });

  it("serves the official 2.x client pinned to 2026-07-28: it lists and calls tools and never initializes", async () => {
    const { token } = await createPrincipal();
    const seen: string[] = [];
    const client = await connectModern(token, seen);
    expect(client.getNegotiatedProtocolVersion()).toBe(MODERN);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(MCP_TOOLS.map((t) => t.name));
    const created = await client.callTool({
      name: "create_contact",
      arguments: { firstName: "Nova", lastName: "Era", email: "nova@era.test" },
    });
    expect(created.isError ?? false).toBe(false);
    expect(created.structuredContent).toMatchObject({ contact: { email: "nova@era.test" } });
    const found = await client.callTool({ name: "find_contacts", arguments: { email: "nova@era.test" } });
    expect((found.structuredContent as { contacts: unknown[] }).contacts).toHaveLength(1);
    expect(seen).not.toContain("initialize");
    expect(seen).toContain("tools/call");
    await client.close();
  });
});

describe("MCP 2025 era beside it", () => {
  it("serves a 2025-11-25 initialize and the calls after it, with or without a session id", async () => {
    const { token } = await createPrincipal();
    const res = await post(initialize(), { authorization: `Bearer ${token}` });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/application\/json/);
    const { result } = (await res.json()) as { result: { protocolVersion: string; capabilities: unknown } };
    expect(result.protocolVersion).toBe("2025-11-25");
    // Stateless: no session is handed out, and a client that sends one anyway is served.
    expect(res.headers.get("mcp-session-id")).toBeNull();
    for (const session of [{}, { "mcp-session-id": "any-session" }] as Record<string, string>[]) {
      const listed = await post(
        { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} },
        { authorization: `Bearer ${token}`, "mcp-protocol-version": "2025-11-25", ...session },
      );
      expect(listed.status).toBe(200);
      const body = (await listed.json()) as { result: { tools: unknown[]; ttlMs?: number } };
      expect(body.result.tools).toHaveLength(MCP_TOOLS.length);
      // Cache hints are of the new era only.
      expect(body.result.ttlMs).toBeUndefined();
    }
  });

  it("serves the 1.x client at 2025-11-25 and a 2025-06-18 initialize from the same registry", async () => {
    const { token } = await createPrincipal();
    const client = await connect(token);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(MCP_TOOLS.map((t) => t.name));
    expect((await tool(client, "get_pipeline")).data.pipeline).toMatchObject({ totalDeals: 0 });
    await client.close();
    const older = await post(
      { ...initialize(), params: { ...initialize().params, protocolVersion: "2025-06-18" } },
      { authorization: `Bearer ${token}` },
    );
    expect(((await older.json()) as { result: { protocolVersion: string } }).result.protocolVersion).toBe("2025-06-18");
  });
});
