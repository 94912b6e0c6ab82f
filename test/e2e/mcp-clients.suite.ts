// MCP clients and checkers nobody here wrote, against `npm run dev` (served.test.ts): the official 2.x client in the
// 2026-07-28 era through its own OAuth flow, the MCP Inspector's CLI (its strict tool-schema portability check), and
// the official conformance package's server scenarios that apply to a server without demo tools.
import { execFile } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";
import {
  Client,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "./helpers/local-state";
import { dev } from "./helpers/served";

const run = promisify(execFile);
let session: Awaited<ReturnType<typeof mintToken>>;

beforeAll(async () => {
  session = await mintToken(`MCP Clients Realty ${Date.now()}`, `agent-${Date.now()}@mcp-clients.test`);
});

/** The 2.x client's credential store and user agent, in memory: registers itself, and approves as the signed-in user. */
class ModernProvider implements OAuthClientProvider {
  client?: StoredOAuthClientInformation;
  saved?: StoredOAuthTokens;
  verifier = "";
  callback?: URLSearchParams;
  readonly redirectUrl = "http://127.0.0.1:49323/callback";
  readonly clientMetadata: OAuthClientMetadata = {
    client_name: "MCP 2.x e2e",
    redirect_uris: [this.redirectUrl],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  };
  clientInformation = () => this.client;
  saveClientInformation = (info: StoredOAuthClientInformation) => void (this.client = info);
  tokens = () => this.saved;
  saveTokens = (tokens: StoredOAuthTokens) => void (this.saved = tokens);
  saveCodeVerifier = (verifier: string) => void (this.verifier = verifier);
  codeVerifier = () => this.verifier;
  async redirectToAuthorization(url: URL) {
    // The user's step: the signed-in user (a session token) approves at once, 302 to the redirect URI.
    const res = await fetch(url, { headers: { authorization: `Bearer ${session.token}` }, redirect: "manual" });
    expect(res.status).toBe(302);
    this.callback = new URL(res.headers.get("location")!).searchParams;
  }
}

describe("the official 2.x MCP client, 2026-07-28 era", () => {
  const provider = new ModernProvider();
  const mcpUrl = () => new URL(`${dev.base}/mcp`);
  let mcp: Client;
  const methods: string[] = [];
  const seeing = (url: string | URL | Request, init?: RequestInit) => {
    if (init?.method === "POST" && typeof init.body === "string") methods.push(JSON.parse(init.body).method);
    return fetch(url, init);
  };
  const modernClient = () => new Client({ name: "e2e-modern", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });

  afterAll(async () => mcp?.close());

  it("signs in through its OAuth flow, negotiates 2026-07-28 by server/discover, and never initializes", async () => {
    await expect(modernClient().connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }))).rejects.toBeInstanceOf(
      UnauthorizedError,
    );
    expect(provider.callback?.get("code")).toEqual(expect.any(String));
    const transport = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider, fetch: seeing });
    // The whole callback: the client checks its iss (RFC 9207) before it redeems the code.
    await transport.finishAuth(provider.callback!);
    // The scope it asked for is the 401's: the baseline, never an explicit-only permission.
    expect(provider.saved?.scope?.split(" ")).not.toContain("users:manage");
    mcp = modernClient();
    await mcp.connect(transport);
    expect(mcp.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    expect(methods).toContain("server/discover");
    expect(methods).not.toContain("initialize");
  });

  it("lists the tools and calls them", async () => {
    const { tools } = await mcp.listTools();
    expect(tools.length).toBeGreaterThan(20);
    expect(tools.length).toBeLessThan(128);
    const email = `modern-${Date.now()}@mcp-clients.test`;
    const created = await mcp.callTool({ name: "create_contact", arguments: { firstName: "Ana", lastName: "Modern", email } });
    expect(created.isError ?? false).toBe(false);
    const found = await mcp.callTool({ name: "find_contacts", arguments: { email } });
    expect((found.structuredContent as { contacts: { email: string }[] }).contacts.map((c) => c.email)).toEqual([email]);
    const refused = await mcp.callTool({ name: "find_contacts", arguments: { limit: 10_000 } });
    expect(refused.isError).toBe(true);
    expect(methods.filter((m) => m === "tools/call")).toHaveLength(3);
    expect(methods).not.toContain("initialize");
  });
});

/** A local HTTP proxy to the dev server's /mcp that adds a bearer token: the conformance package sends none. */
function tokenProxy(token: string): Promise<{ url: string; server: Server }> {
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers))
      if (typeof value === "string" && !["host", "content-length", "connection"].includes(name)) headers.set(name, value);
    headers.set("authorization", `Bearer ${token}`);
    const upstream = await fetch(`${dev.base}${req.url}`, {
      method: req.method,
      headers,
      body: chunks.length ? Buffer.concat(chunks) : undefined,
    });
    const body = Buffer.from(await upstream.arrayBuffer());
    const answer: Record<string, string> = {};
    upstream.headers.forEach((value, name) => {
      if (!["content-encoding", "content-length", "transfer-encoding", "connection"].includes(name)) answer[name] = value;
    });
    res.writeHead(upstream.status, answer).end(body);
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server })),
  );
}

/** A command of the project's own devDependencies, its exit code and output whatever the code. */
async function npx(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run("npx", args, { cwd: process.cwd(), maxBuffer: 32 * 1024 * 1024, timeout: 120_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : 1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

describe("the MCP Inspector's CLI", () => {
  it("lists the tools, and its strict check finds no portability problem in any tool's schemas", async () => {
    const listed = await npx([
      "mcp-inspector",
      "--cli",
      `${dev.base}/mcp`,
      "--header",
      `Authorization: Bearer ${session.token}`,
      "--method",
      "tools/list",
      "--strict",
    ]);
    // --strict exits 6 on any error-severity problem.
    expect(listed.code, listed.stderr).toBe(0);
    const { tools } = JSON.parse(listed.stdout) as { tools: { name: string }[] };
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["find_contacts", "daily_brief", "get_envelope"]));
    // It prints every warning on stderr. The only kind left is a schema with no keyword, which is what a free-form
    // value is: an event's payload, a tolerated read-only field. Nothing else (a `type` array, a `$ref`) appears.
    const issues = [...listed.stderr.matchAll(/Issue: ([^\n]*)/g)].map((m) => m[1]!);
    for (const issue of issues) expect(issue).toMatch(/^Schema carries no validation keyword at all/);
    expect(listed.stderr).not.toMatch(/Error:/);
  });
});

describe("the official MCP conformance package", () => {
  let proxy: { url: string; server: Server };
  beforeAll(async () => {
    proxy = await tokenProxy(session.token);
  });
  afterAll(() => proxy?.server.close());

  // The server scenarios that apply to a server without the package's demo tools, prompts and resources, run side by
  // side (each is a process of its own, most of it Node starting).
  const SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"];
  it(`passes ${SCENARIOS.join(", ")}`, async () => {
    const results = await Promise.all(
      SCENARIOS.map((scenario) => npx(["conformance", "server", "--url", proxy.url, "--scenario", scenario])),
    );
    results.forEach((result, i) => {
      const output = result.stdout + result.stderr;
      expect(output, SCENARIOS[i]).toMatch(/Passed: (\d+)\/\1, 0 failed/);
      expect(result.code, output).toBe(0);
    });
  });
});
