// Real clients nobody here wrote, against `npm run dev` on a port that is not 8787 (issue 23, item 8): oauth4webapi (a
// strict RFC client) through discovery, registration, PKCE, refresh with rotation and reuse detection, and revocation;
// the MCP SDK's 1.x client (the 2025-11-25 era) through its auth() flow and the first tools. The user's step (sign-in and consent) is the
// bearer-session shortcut of GET /oauth/authorize, as `npm run token` gives it; the browser test covers the pages.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { auth, type OAuthClientProvider, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import * as oauth from "oauth4webapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "./helpers/local-state";
import { dev } from "./helpers/served";

let session: Awaited<ReturnType<typeof mintToken>>;

beforeAll(async () => {
  session = await mintToken(`Real Clients Realty ${Date.now()}`, `agent-${Date.now()}@real-clients.test`);
});

/** The user's step: the signed-in user (a session token) approves at once, 302 to the redirect URI. */
async function approve(authorizationUrl: URL): Promise<URL> {
  const res = await fetch(authorizationUrl, { headers: { authorization: `Bearer ${session.token}` }, redirect: "manual" });
  expect(res.status).toBe(302);
  return new URL(res.headers.get("location")!);
}

/** What /v1 answers an access token. */
async function statusWith(accessToken: string) {
  return (await fetch(`${dev.base}/v1/contacts?limit=1`, { headers: { authorization: `Bearer ${accessToken}` } })).status;
}

describe("oauth4webapi", () => {
  // http on 127.0.0.1 is what development serves; the library refuses it unless told.
  const insecure = { [oauth.allowInsecureRequests]: true } as const;
  const redirectUri = "http://127.0.0.1/callback";
  const callback = "http://127.0.0.1:49321/callback";
  let as: oauth.AuthorizationServer;
  let client: oauth.Client;
  const clientAuth = oauth.None();

  /** One authorization code grant with PKCE, from the authorization URL to the token response. */
  async function authorize(scope = "contacts:read contacts:write deals:read"): Promise<oauth.TokenEndpointResponse> {
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      client_id: client.client_id,
      redirect_uri: callback,
      response_type: "code",
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state,
      scope,
    }).toString();
    // validateAuthResponse checks state and, since the metadata says it is sent, iss (RFC 9207).
    const params = oauth.validateAuthResponse(as, client, await approve(url), state);
    const res = await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, callback, verifier, insecure);
    return oauth.processAuthorizationCodeResponse(as, client, res);
  }

  const refresh = async (refreshToken: string, scope?: string) =>
    oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, clientAuth, refreshToken, {
        ...insecure,
        ...(scope ? { additionalParameters: { scope } } : {}),
      }),
    );
  const revoke = async (token: string, hint?: string) =>
    oauth.processRevocationResponse(
      await oauth.revocationRequest(as, client, clientAuth, token, {
        ...insecure,
        ...(hint ? { additionalParameters: { token_type_hint: hint } } : {}),
      }),
    );

  it("discovers the server at the origin it runs on", async () => {
    expect(dev.port).not.toBe("8787");
    const issuer = new URL(dev.base);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }));
    expect(as).toMatchObject({
      issuer: dev.base,
      authorization_endpoint: `${dev.base}/oauth/authorize`,
      token_endpoint: `${dev.base}/oauth/token`,
      registration_endpoint: `${dev.base}/oauth/register`,
      revocation_endpoint: `${dev.base}/oauth/revoke`,
      grant_types_supported: ["authorization_code", "refresh_token"],
      code_challenge_methods_supported: ["S256"],
      authorization_response_iss_parameter_supported: true,
    });
  });

  it("registers a public client with a portless loopback redirect", async () => {
    const res = await oauth.dynamicClientRegistrationRequest(
      as,
      {
        client_name: "oauth4webapi e2e",
        redirect_uris: [redirectUri],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      },
      insecure,
    );
    client = await oauth.processDynamicClientRegistrationResponse(res);
    expect(client.client_id).toEqual(expect.any(String));
    expect(client.token_endpoint_auth_method).toBe("none");
  });

  it("runs the authorization code grant with PKCE on an ephemeral loopback port, and the token works", async () => {
    const tokens = await authorize();
    expect(tokens).toMatchObject({
      token_type: "bearer",
      expires_in: 3600,
      scope: "contacts:read contacts:write deals:read",
      refresh_token: expect.any(String),
    });
    expect(await statusWith(tokens.access_token)).toBe(200);
  });

  it("rotates refresh tokens, and a reused one revokes its whole family", async () => {
    const first = await authorize();
    const second = await refresh(first.refresh_token!);
    expect(second.refresh_token).toEqual(expect.any(String));
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.access_token).not.toBe(first.access_token);
    expect(await statusWith(second.access_token)).toBe(200);
    // A narrower scope on refresh is allowed; the next rotation still holds the full grant.
    const narrowed = await refresh(second.refresh_token!, "contacts:read");
    expect(narrowed.scope).toBe("contacts:read");
    const full = await refresh(narrowed.refresh_token!);
    expect(full.scope).toBe("contacts:read contacts:write deals:read");

    // The first refresh token again: refused, and every token of its family stops working.
    const reuse = await refresh(first.refresh_token!).catch((e: unknown) => e);
    expect(reuse).toBeInstanceOf(oauth.ResponseBodyError);
    expect(reuse).toMatchObject({ status: 400, error: "invalid_grant" });
    await expect(refresh(full.refresh_token!)).rejects.toMatchObject({ error: "invalid_grant" });
    expect(await statusWith(full.access_token)).toBe(401);
    expect(await statusWith(second.access_token)).toBe(401);
  });

  it("revokes an access token alone, and a refresh token with its family (RFC 7009)", async () => {
    const tokens = await authorize();
    await revoke(tokens.access_token, "access_token");
    expect(await statusWith(tokens.access_token)).toBe(401);
    // Its refresh token keeps working.
    const next = await refresh(tokens.refresh_token!);
    expect(await statusWith(next.access_token)).toBe(200);

    await revoke(next.refresh_token!);
    await expect(refresh(next.refresh_token!)).rejects.toMatchObject({ error: "invalid_grant" });
    expect(await statusWith(next.access_token)).toBe(401);
    // Unknown or already revoked: still 200 with an empty body, which tells nothing.
    await expect(revoke(next.refresh_token!, "refresh_token")).resolves.toBeUndefined();
    await expect(revoke("not-a-token")).resolves.toBeUndefined();
  });
});

/** An MCP client's credential store and user agent, in memory: registers itself, and approves as the signed-in user. */
class TestProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = "";
  code?: string;
  readonly redirectUrl = "http://127.0.0.1:49322/callback";
  readonly clientMetadata: OAuthClientMetadata = {
    client_name: "MCP SDK e2e",
    redirect_uris: [this.redirectUrl],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  };
  clientInformation = () => this.client;
  saveClientInformation = (info: OAuthClientInformationMixed) => void (this.client = info);
  tokens = () => this.saved;
  saveTokens = (tokens: OAuthTokens) => void (this.saved = tokens);
  saveCodeVerifier = (verifier: string) => void (this.verifier = verifier);
  codeVerifier = () => this.verifier;
  async redirectToAuthorization(url: URL) {
    const back = await approve(url);
    expect(back.searchParams.get("iss")).toBe(dev.base);
    this.code = back.searchParams.get("code") ?? undefined;
  }
}

describe("the MCP SDK client", () => {
  const provider = new TestProvider();
  const mcpUrl = () => new URL(`${dev.base}/mcp`);
  let mcp: Client;

  /** Every tool answers a result, not an error, with its JSON as structured content. */
  async function call(name: string, args: Record<string, unknown>) {
    const result = await mcp.callTool({ name, arguments: args });
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    return result.structuredContent as Record<string, any>;
  }

  afterAll(async () => mcp?.close());

  it("signs in through auth() (discovery from the 401, registration, PKCE with the resource) and connects", async () => {
    // First contact: the 401 names the resource metadata, auth() registers and sends the user to authorize.
    const first = new Client({ name: "e2e", version: "1.0.0" });
    await expect(first.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }))).rejects.toBeInstanceOf(
      UnauthorizedError,
    );
    expect(provider.client?.client_id).toEqual(expect.any(String));
    expect(provider.code).toEqual(expect.any(String));
    const transport = new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider });
    await transport.finishAuth(provider.code!);
    expect(provider.saved).toMatchObject({ token_type: expect.stringMatching(/^bearer$/i), refresh_token: expect.any(String) });

    mcp = new Client({ name: "e2e", version: "1.0.0" });
    await mcp.connect(transport);
    expect(mcp.getServerVersion()?.name).toEqual(expect.any(String));
    expect(mcp.getServerCapabilities()?.tools?.listChanged).toBeFalsy();
  });

  it("refreshes through auth() with the rotated token, and the new access token serves", async () => {
    const before = provider.saved!;
    expect(await auth(provider, { serverUrl: mcpUrl() })).toBe("AUTHORIZED");
    expect(provider.saved!.refresh_token).not.toBe(before.refresh_token);
    expect(provider.saved!.access_token).not.toBe(before.access_token);
    await mcp.close();
    mcp = new Client({ name: "e2e", version: "1.0.0" });
    await mcp.connect(new StreamableHTTPClientTransport(mcpUrl(), { authProvider: provider }));
  });

  it("lists the tools, each with input and output schemas", async () => {
    const { tools } = await mcp.listTools();
    expect(tools.length).toBeGreaterThan(20);
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe("object");
      expect(tool.outputSchema?.type).toBe("object");
    }
  });

  it("calls every tool", async () => {
    const email = `mcp-${Date.now()}@real-clients.test`;
    const { contact } = await call("create_contact", { firstName: "Mia", lastName: "Client", email, tags: ["mcp-e2e"] });
    expect(contact).toMatchObject({ email, firstName: "Mia" });

    const { activity } = await call("log_activity", {
      contactId: contact.id,
      type: "PHONE_CALL",
      description: "Called from the MCP client",
    });
    expect(activity).toMatchObject({ type: "PHONE_CALL" });

    const { communication } = await call("log_communication", {
      contactId: contact.id,
      type: "call",
      direction: "outbound",
      durationSeconds: 120,
    });
    expect(communication).toMatchObject({ type: "call", durationSeconds: 120, contactId: contact.id });

    const found = await call("find_contacts", { email, include: ["activities"] });
    expect(found.contacts.map((c: { id: string }) => c.id)).toEqual([contact.id]);

    const { contact: twin } = await call("create_contact", {
      firstName: "Mia",
      lastName: "Client",
      email: `twin-${email}`,
      notes: "the same person",
    });
    const { contact: kept } = await call("merge_contacts", { contactId: contact.id, sourceIds: [twin.id] });
    expect(kept).toMatchObject({ id: contact.id, notes: "the same person" });

    // A deal and a document through the API, with the session token, for the deal and document tools.
    const headers = { authorization: `Bearer ${session.token}`, "content-type": "application/json" };
    const dealRes = await fetch(`${dev.base}/v1/deals`, {
      method: "POST",
      headers,
      body: JSON.stringify({ title: "MCP e2e deal", type: "PURCHASE", amount: 650_000, contactId: contact.id }),
    });
    expect(dealRes.status).toBe(201);
    const deal = ((await dealRes.json()) as { data: { id: string } }).data;

    const listed = await call("list_deals", { stage: "LEAD", limit: 50 });
    expect(listed.deals.map((d: { id: string }) => d.id)).toContain(deal.id);
    const { deal: moved } = await call("move_deal", { dealId: deal.id, stage: "QUALIFIED", reason: "Pre-approved" });
    expect(moved).toMatchObject({ id: deal.id, stage: "QUALIFIED" });
    const { pipeline } = await call("get_pipeline", {});
    expect(pipeline).toEqual(expect.any(Object));

    const lease = {
      tenants: [
        { name: "Tess Tenant", email: `tess-${Date.now()}@real-clients.test` },
        { name: "Tom Tenant", email: `tom-${Date.now()}@real-clients.test` },
      ],
      landlords: [{ name: "Lars Landlord", email: `lars-${Date.now()}@real-clients.test` }],
      property: { address: { street: "8 Client St", city: "Toronto", province: "ON" } },
      term: { commencement: { year: 2027, month: 5, day: 1 } },
      monthlyRent: { cents: 210_000 },
    };
    const { forms } = await call("list_forms", {});
    expect(forms.find((f: { formKey: string }) => f.formKey === "on/standard-lease")).toMatchObject({
      signable: true,
      roles: ["landlord", "tenant"],
    });
    const canonical = { schemaVersion: 1, formKey: "on/standard-lease", lease, provenance: { aiDrafted: false } };
    const docRes = await fetch(`${dev.base}/api/documents`, {
      method: "POST",
      headers,
      body: JSON.stringify({ formKey: "on/standard-lease", canonical }),
    });
    expect(docRes.status).toBe(201);
    const documentId = ((await docRes.json()) as { id: string }).id;

    const { hits } = await call("search_documents", { query: "lease on Client St" });
    expect(hits).toEqual(expect.any(Array));
    const { obligations } = await call("list_obligations", { withinDays: 365 });
    expect(obligations).toEqual(expect.any(Array));

    // Sequential: every signer is listed, the first one up now.
    const { envelope } = await call("send_for_signature", { documentId, mode: "sequential", expiresInDays: 14 });
    expect(envelope.mode).toBe("sequential");
    expect(envelope.signers).toHaveLength(3);
    expect(envelope.signers.map((s: { upNow: boolean }) => s.upNow)).toEqual([true, false, false]);
    expect(JSON.stringify(envelope)).not.toMatch(/\/sign\//);
  });

  it("answers an unknown tool with the JSON-RPC error -32602", async () => {
    await expect(mcp.callTool({ name: "no_such_tool", arguments: {} })).rejects.toMatchObject({ code: -32602 });
  });
});
