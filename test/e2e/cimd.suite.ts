// A client that identifies itself by a Client ID Metadata Document, against `npm run dev`: the document is served by a
// Node server on 127.0.0.1 (development accepts such a client_id; production only https to public addresses), and the
// whole flow runs over HTTP as a browser and an MCP client would: sign-in by mailed code, the consent page, the code
// with PKCE, the token, then the MCP endpoint. Then the two refusals a user would meet: a document naming another
// client_id, and a redirect URI the document does not list.
import { createHash, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken, readMail } from "./helpers/local-state";
import { dev } from "./helpers/served";
import { clientAddress } from "./helpers/signing";

const CALLBACK = "http://127.0.0.1:49555/callback";
let server: Server;
let origin = "";
/** The documents the client's server publishes, by path; `{self}` stands for the document's own URL. */
const documents = new Map<string, Record<string, unknown>>();

beforeAll(async () => {
  server = createServer((req, res) => {
    const doc = documents.get(req.url ?? "");
    if (!doc) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": "application/json", "cache-control": "max-age=300" });
    res.end(JSON.stringify(doc).replaceAll("{self}", `${origin}${req.url}`));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const body = {
    client_id: "{self}",
    client_name: "E2E Document Agent",
    redirect_uris: ["http://127.0.0.1/callback"],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  };
  documents.set("/agent/client.json", body);
  documents.set("/impostor/client.json", { ...body, client_id: "https://agent.example/client.json" });
});

afterAll(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
});

const b64url = (bytes: Buffer) => bytes.toString("base64url");

function authorizeUrl(clientId: string, challenge: string, redirectUri = CALLBACK): string {
  const query = new URLSearchParams({
    client_id: clientId,
    redirect_uri: redirectUri,
    response_type: "code",
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "cimd-state",
    scope: "contacts:read deals:read",
  });
  return `${dev.base}/oauth/authorize?${query}`;
}

/** A browser without a browser: keeps the sign-in cookie, reads each page's CSRF token, posts the pages' forms. */
class FormClient {
  private cookie = "";
  private csrf = "";
  private readonly ip = clientAddress();
  constructor(private readonly url: string) {}
  private async absorb(res: Response) {
    const set = res.headers.get("set-cookie");
    if (set) this.cookie = set.split(";")[0]!;
    const html = res.status === 302 ? "" : await res.text();
    this.csrf = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1] ?? this.csrf;
    return { status: res.status, html, location: res.headers.get("location") };
  }
  async open() {
    return this.absorb(await fetch(this.url, { headers: { cookie: this.cookie }, redirect: "manual" }));
  }
  async post(fields: Record<string, string>) {
    return this.absorb(
      await fetch(this.url, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: this.cookie, "cf-connecting-ip": this.ip },
        body: new URLSearchParams({ csrf_token: this.csrf, ...fields }),
      }),
    );
  }
}

/** The code of the newest sign-in mail to `email`, read from the mail log as `npm run mail` reads it. */
async function signInCode(email: string): Promise<string> {
  for (let i = 0; i < 60; i++) {
    const [newest] = await readMail(email, 1);
    const code = newest?.subject === "Your sign-in code" ? /\b(\d{6})\b/.exec(newest.text)?.[1] : undefined;
    if (code) return code;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`no sign-in code was mailed to ${email}`);
}

/** A JSON-RPC request to the MCP endpoint with the access token; the answer's status and body. */
async function mcp(accessToken: string, id: number, method: string, params: Record<string, unknown> = {}) {
  const res = await fetch(`${dev.base}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${accessToken}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
  });
  return { status: res.status, body: (await res.json()) as { result?: Record<string, unknown> } };
}

describe("a client identified by its metadata document (CIMD)", () => {
  it("signs a user in with no registration: consent, code with PKCE, token, and the MCP endpoint answers with its tools", async () => {
    const clientId = `${origin}/agent/client.json`;
    const metadata = (await (await fetch(`${dev.base}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(metadata.client_id_metadata_document_supported).toBe(true);

    const email = `agent-${Date.now()}@cimd.test`;
    const principal = await mintToken(`CIMD Realty ${Date.now()}`, email);
    const verifier = b64url(randomBytes(32));
    const challenge = b64url(createHash("sha256").update(verifier).digest());
    const browser = new FormClient(authorizeUrl(clientId, challenge));

    const signIn = await browser.open();
    expect(signIn.status).toBe(200);
    expect(signIn.html).toContain("<strong>E2E Document Agent</strong> asks to work with your brokerage account");
    expect((await browser.post({ step: "email", email })).html).toContain("Enter your code");
    const consent = await browser.post({ step: "code", code: await signInCode(email) });
    expect(consent.status).toBe(200);
    expect(consent.html).toContain("<h1>Allow E2E Document Agent?</h1>");
    expect(consent.html).toContain(`identified by the document at <code>${clientId}</code>`);
    expect(consent.html).toContain("You will be returned to <code>http://127.0.0.1:49555</code>");

    const approved = await browser.post({ step: "consent", decision: "approve" });
    expect(approved.status).toBe(302);
    const back = new URL(approved.location!);
    expect(`${back.origin}${back.pathname}`).toBe(CALLBACK);
    expect(back.searchParams.get("state")).toBe("cimd-state");
    expect(back.searchParams.get("iss")).toBe(dev.base);

    const tokenRes = await fetch(`${dev.base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code: back.searchParams.get("code")!,
        redirect_uri: CALLBACK,
        client_id: clientId,
        code_verifier: verifier,
      }),
    });
    expect(tokenRes.status).toBe(200);
    const token = (await tokenRes.json()) as { access_token: string; user_id: string; permissions: string[] };
    expect(token).toMatchObject({ user_id: principal.userId, permissions: ["contacts:read", "deals:read"] });

    const init = await mcp(token.access_token, 1, "initialize", {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "cimd-e2e", version: "1" },
    });
    expect(init.status).toBe(200);
    expect(init.body.result).toMatchObject({ capabilities: { tools: {} } });
    const tools = await mcp(token.access_token, 2, "tools/list");
    expect(tools.status).toBe(200);
    const names = ((tools.body.result?.tools ?? []) as { name: string }[]).map((t) => t.name);
    expect(names).toContain("find_contacts");
  });

  it("refuses a document whose client_id is not its own address, on an error page that names the problem", async () => {
    const clientId = `${origin}/impostor/client.json`;
    const res = await fetch(authorizeUrl(clientId, "x".repeat(43)), { redirect: "manual" });
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    const html = (await res.text()).replaceAll("&quot;", '"');
    expect(html).toContain("This sign-in request cannot continue");
    expect(html).toContain(`its client_id is "https://agent.example/client.json", not the address it was fetched from`);
  });

  it("refuses a redirect URI the document does not list, and sends nothing there", async () => {
    const clientId = `${origin}/agent/client.json`;
    const res = await fetch(authorizeUrl(clientId, "x".repeat(43), "https://elsewhere.example/callback"), { redirect: "manual" });
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expect(await res.text()).toContain(`not among the redirect_uris of its metadata document (${clientId})`);
  });
});
