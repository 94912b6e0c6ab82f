import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { readConfig } from "../../src/env";
import { BASELINE_SCOPE, mcpServerUrlOf, protectedResourceMetadataUrl } from "../../src/oauth/metadata";
import { DEFAULT_PERMISSIONS, EXPLICIT_PERMISSIONS, PERMISSION_NAMES, type Permission } from "../../src/platform/permissions";
import { createApiKey } from "../helpers/api-keys";
import { call, json } from "../helpers/client";
import { createContact, uniqueEmail } from "../helpers/contacts";
import { createDeal, getDeal } from "../helpers/deals";
import { createDocument } from "../helpers/documents";
import { createPrincipal } from "../helpers/factories";
import { connect, initialize, oauthAccessToken, JSON_HEADERS, MCP_URL, post, rpc, tool, workerFetch } from "../helpers/mcp";
import { testApp } from "../helpers/test-app";

const config = readConfig(env);
const METADATA = protectedResourceMetadataUrl(config);

/** Permissions in the order scopes name them (PERMISSION_NAMES). */
const byPermissionOrder = (a: string, b: string) => PERMISSION_NAMES.indexOf(a as Permission) - PERMISSION_NAMES.indexOf(b as Permission);

describe("MCP endpoint: authentication", () => {
  it("answers 401 with a WWW-Authenticate header naming the protected-resource metadata and the baseline scope, without a token or with a bad one", async () => {
    const none = await post(initialize());
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${METADATA}", scope="${BASELINE_SCOPE}"`);
    // The baseline works the CRM and the document desk; what a user grants only by name is never in it.
    expect(BASELINE_SCOPE.split(" ")).toEqual([...DEFAULT_PERMISSIONS]);
    for (const explicit of EXPLICIT_PERMISSIONS) expect(BASELINE_SCOPE.split(" ")).not.toContain(explicit);
    // An unknown session token, and a JWT that no key of ours signed.
    for (const token of ["not-a-real-token", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"]) {
      const bad = await post(initialize(), { authorization: `Bearer ${token}` });
      expect(bad.status, token).toBe(401);
      expect(bad.headers.get("www-authenticate"), token).toBe(
        `Bearer resource_metadata="${METADATA}", scope="${BASELINE_SCOPE}", error="invalid_token"`,
      );
    }
    // Where the header points: the metadata names this server and the authorization server that issues its tokens.
    const metadata = await workerFetch(METADATA);
    expect(metadata.status).toBe(200);
    expect(await metadata.json()).toMatchObject({
      resource: mcpServerUrlOf(config),
      authorization_servers: [expect.any(String)],
      scopes_supported: [...DEFAULT_PERMISSIONS],
    });
  });

  it("lets pages of an allowed origin call it: a preflight needs no token, and the challenge header is readable", async () => {
    const { fetch } = testApp({}, { MCP_ALLOWED_ORIGINS: "https://inspector.example" });
    const preflight = await fetch("OPTIONS", "/mcp", {
      headers: {
        origin: "https://inspector.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type, mcp-protocol-version",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("https://inspector.example");
    expect(preflight.headers.get("access-control-allow-headers")).toMatch(/authorization/i);
    const refused = await fetch("POST", "/mcp", {
      headers: { origin: "https://inspector.example", ...JSON_HEADERS },
      body: JSON.stringify(initialize()),
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("access-control-expose-headers")).toMatch(/WWW-Authenticate/i);
    // A foreign page's preflight names no origin: the browser never sends its call.
    const foreign = await fetch("OPTIONS", "/mcp", {
      headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
    });
    expect(foreign.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("refuses a request from a foreign Origin with 403 before anything runs; no Origin and the configured one pass", async () => {
    const { token } = await createPrincipal();
    const email = uniqueEmail("rebound");
    const createCall = {
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { name: "create_contact", arguments: { firstName: "Re", lastName: "Bound", email } },
    };
    for (const origin of ["https://evil.example", "http://127.0.0.1:9999", "null"]) {
      const res = await post(createCall, { authorization: `Bearer ${token}`, origin, "mcp-protocol-version": "2025-11-25" });
      expect(res.status, origin).toBe(403);
      expect(await json(res), origin).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 } });
      // Also without a token: the Origin is checked first, so a rebinding page learns nothing of the auth either.
      expect((await post(initialize(), { origin })).status, origin).toBe(403);
    }
    expect((await json(await call("GET", `/v1/contacts?email=${encodeURIComponent(email)}`, { token }))).data).toEqual([]);

    const own = await post(createCall, {
      authorization: `Bearer ${token}`,
      origin: new URL(config.APP_URL).origin,
      "mcp-protocol-version": "2025-11-25",
    });
    expect(own.status).toBe(200);
    expect((await json(own)).result).toMatchObject({ structuredContent: { contact: { email } } });
    const none = await post(initialize(), { authorization: `Bearer ${token}` });
    expect(none.status).toBe(200);
  });

  it("lets a developer's own pages (any loopback origin) call it in development only; a rebinding page's name never passes", async () => {
    const { token } = await createPrincipal();
    const headers = (origin: string) => ({ authorization: `Bearer ${token}`, origin, ...JSON_HEADERS });
    for (const [environment, loopback] of [
      ["development", 200],
      ["production", 403],
    ] as const) {
      const { fetch } = testApp({}, { ENVIRONMENT: environment, EMAIL_PROVIDER: "resend", EMAIL_API_KEY: "re_test" });
      for (const origin of ["http://localhost:6274", "http://127.0.0.1:9999", "http://[::1]:3000"]) {
        const res = await fetch("POST", "/mcp", { headers: headers(origin), body: JSON.stringify(initialize()) });
        expect(res.status, `${environment} ${origin}`).toBe(loopback);
      }
      for (const origin of ["http://localhost.evil.example:6274", "https://127.0.0.1:9999", "http://127.0.0.2:80", "null"]) {
        const res = await fetch("POST", "/mcp", { headers: headers(origin), body: JSON.stringify(initialize()) });
        expect(res.status, `${environment} ${origin}`).toBe(403);
      }
    }
  });

  it("refuses the official client without a token", async () => {
    await expect(connect()).rejects.toThrow(/401|Unauthorized/i);
  });

  it("answers 405 to GET and DELETE: stateless, no stream to open and no session to end", async () => {
    const { token } = await createPrincipal();
    for (const method of ["GET", "DELETE"]) {
      const res = await workerFetch(MCP_URL, { method, headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" } });
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
    }
  });
});

describe("MCP tools over Streamable HTTP", () => {
  it("creates a contact, finds it, logs an activity on it; the contact is the one the HTTP API serves", async () => {
    const { token } = await createPrincipal();
    const client = await connect(token);
    const email = uniqueEmail("mcp");
    const created = await tool(client, "create_contact", { firstName: "Ada", lastName: "Agent", email, tags: ["mcp-lead"], type: "LEAD" });
    expect(created.isError, created.text).toBe(false);
    expect(created.data.contact).toMatchObject({ firstName: "Ada", lastName: "Agent", email, tags: ["mcp-lead"] });
    expect(JSON.parse(created.text)).toEqual(created.data);

    const http = await json(await call("GET", `/v1/contacts/${created.data.contact.id}`, { token }));
    expect(http.data).toMatchObject({ id: created.data.contact.id, email });

    await createContact(token, { tags: ["someone-else"] });
    const found = await tool(client, "find_contacts", { tags: ["mcp-lead"], type: "LEAD", limit: 10 });
    expect(found.isError, found.text).toBe(false);
    expect(found.data.contacts.map((c: { id: string }) => c.id)).toEqual([created.data.contact.id]);
    expect(found.data.pagination).toMatchObject({ hasMore: false, total: 1, limit: 10 });
    const byEmail = await tool(client, "find_contacts", { email: email.toUpperCase() });
    expect(byEmail.data.contacts.map((c: { id: string }) => c.id)).toEqual([created.data.contact.id]);
    // By a word of the name (issue 33), with the route's own bounds on it.
    const byWord = await tool(client, "find_contacts", { query: "ada AGE" });
    expect(byWord.data.contacts.map((c: { id: string }) => c.id)).toEqual([created.data.contact.id]);
    expect(
      (await tool(client, "find_contacts", { query: "***" })).data.issues.map(
        (i: { field: string; code: string }) => `${i.field} ${i.code}`,
      ),
    ).toEqual(["q no_words"]);

    // The smart-list filters (issue 46): never contacted, nobody's, an open task, a relative last-contact bound.
    const ids = async (args: Record<string, unknown>) => {
      const r = await tool(client, "find_contacts", args);
      expect(r.isError, r.text).toBe(false);
      return r.data.contacts.map((c: { id: string }) => c.id).sort();
    };
    const stale = await createContact(token, { assignedTo: null });
    expect(
      (
        await call("POST", `/v1/contacts/${stale.id}/communications`, {
          token,
          body: { type: "call", direction: "outbound", occurredAt: new Date(Date.now() - 40 * 86_400_000).toISOString() },
        })
      ).status,
    ).toBe(201);
    expect((await call("POST", "/v1/tasks", { token, body: { title: "Call back", contactId: stale.id } })).status).toBe(201);
    expect(await ids({ lastContactedBefore: "-P30D" })).toEqual([stale.id]);
    expect(await ids({ hasOpenTask: true })).toEqual([stale.id]);
    expect(await ids({ neverContacted: true, tags: ["mcp-lead"] })).toEqual([created.data.contact.id]);
    expect(await ids({ lastContactedAfter: "-P30D" })).toEqual([]);
    expect(await ids({ assignedTo: "none", hasOpenTask: true })).toEqual([stale.id]);
    const bad = await tool(client, "find_contacts", { lastContactedBefore: "last month" });
    expect(bad.isError).toBe(true);

    const logged = await tool(client, "log_activity", {
      contactId: created.data.contact.id,
      type: "PHONE_CALL",
      description: "Called about the listing",
    });
    expect(logged.isError, logged.text).toBe(false);
    expect(logged.data.activity).toMatchObject({ type: "PHONE_CALL", description: "Called about the listing" });
    const activities = await json(await call("GET", `/v1/contacts/${created.data.contact.id}/activities`, { token }));
    expect(activities.data.map((a: { id: string }) => a.id)).toContain(logged.data.activity.id);

    const called = await tool(client, "log_communication", {
      contactId: created.data.contact.id,
      type: "call",
      direction: "outbound",
      durationSeconds: 95,
    });
    expect(called.isError, called.text).toBe(false);
    expect(called.data.communication).toMatchObject({
      contactId: created.data.contact.id,
      type: "call",
      direction: "outbound",
      durationSeconds: 95,
    });
    const communications = await json(await call("GET", `/v1/contacts/${created.data.contact.id}/communications`, { token }));
    expect(communications.data.map((m: { id: string }) => m.id)).toEqual([called.data.communication.id]);
    // The route's rules hold for the tool: every problem at once.
    const refused = await tool(client, "log_communication", {
      contactId: created.data.contact.id,
      type: "voicemail",
      direction: "outbound",
      subject: "Hi",
    });
    expect(refused.isError).toBe(true);
    expect(refused.data.issues.map((i: { field: string; code: string }) => `${i.field} ${i.code}`).sort()).toEqual([
      "direction not_allowed",
      "subject not_allowed",
    ]);

    // Merge (issue 33): the duplicate's activity moves to the contact kept, the duplicate is gone.
    const twin = await createContact(token, { firstName: "Ada", lastName: "Agent", tags: ["twin"] });
    await call("POST", `/v1/contacts/${twin.id}/activities`, { token, body: { type: "NOTE", description: "on the twin" } });
    const merged = await tool(client, "merge_contacts", { contactId: created.data.contact.id, sourceIds: [twin.id] });
    expect(merged.isError, merged.text).toBe(false);
    expect(merged.data.contact.tags).toEqual(["mcp-lead", "twin"]);
    expect((await call("GET", `/v1/contacts/${twin.id}`, { token })).status).toBe(404);
    expect((await json(await call("GET", `/v1/contacts/${created.data.contact.id}/activities`, { token }))).pagination.total).toBe(2);
    await client.close();
  });

  it("moves a deal created over HTTP, lists it by stage and reads the pipeline", async () => {
    const { token } = await createPrincipal();
    const deal = await createDeal(token, { amount: 400_000 });
    const client = await connect(token);

    const moved = await tool(client, "move_deal", { dealId: deal.id, stage: "NEGOTIATION", reason: "Offer received", probability: 60 });
    expect(moved.isError, moved.text).toBe(false);
    expect(moved.data.deal).toMatchObject({ id: deal.id, stage: "NEGOTIATION", probability: 60 });
    expect(await getDeal(token, deal.id)).toMatchObject({ stage: "NEGOTIATION", probability: 60 });

    const listed = await tool(client, "list_deals", { stage: "NEGOTIATION", minAmount: 100_000 });
    expect(listed.data.deals.map((d: { id: string }) => d.id)).toEqual([deal.id]);
    expect((await tool(client, "list_deals", { query: "main purch" })).data.deals.map((d: { id: string }) => d.id)).toEqual([deal.id]);
    expect((await tool(client, "list_deals", { stage: "LEAD" })).data.deals).toEqual([]);

    const { data } = await tool(client, "get_pipeline");
    expect(data.pipeline).toMatchObject({ totalDeals: 1, totalValue: 400_000 });
    expect(data.pipeline.stages.find((s: { stage: string }) => s.stage === "NEGOTIATION")).toMatchObject({
      count: 1,
      value: 400_000,
      averageProbability: 60,
    });
    await client.close();
  });

  it("searches documents, lists their obligations and sends one for signature", async () => {
    const { token } = await createPrincipal();
    const doc = await createDocument(token);
    const client = await connect(token);

    // No AI gateway in the test env: the route's answer, no hits.
    expect((await tool(client, "search_documents", { query: "lease on Queen St W" })).data).toEqual({ hits: [] });
    const obligations = await tool(client, "list_obligations", { withinDays: 365 });
    expect(obligations.isError, obligations.text).toBe(false);
    expect(obligations.data.obligations.length).toBeGreaterThan(0);
    expect(obligations.data.obligations.every((o: { documentId: string }) => o.documentId === doc.id)).toBe(true);

    const sent = await tool(client, "send_for_signature", {
      documentId: doc.id,
      signers: [{ name: "Sam Signer", email: "sam@signer.test", role: "tenant" }],
    });
    expect(sent.isError, sent.text).toBe(false);
    expect(sent.data.envelope.signers).toEqual([expect.objectContaining({ email: "sam@signer.test", role: "tenant", mailed: true })]);
    // The signer's capability goes to the signer only, never into the agent's context.
    expect(sent.text).not.toContain("/sign/");
    const read = await json(await call("GET", `/api/documents/${doc.id}`, { token }));
    expect(read.status).toBe("OUT_FOR_SIGNATURE");

    const again = await tool(client, "send_for_signature", { documentId: doc.id });
    expect(again).toMatchObject({ isError: true, data: { error: "cannot_send_for_signature" } });
    await client.close();
  });

  it("answers service errors and bad input as tool errors, and keeps each organization to its own data", async () => {
    const owner = await createPrincipal();
    const stranger = await createPrincipal();
    const deal = await createDeal(owner.token);
    const contact = await createContact(owner.token);
    const client = await connect(stranger.token);

    expect(await tool(client, "move_deal", { dealId: deal.id, stage: "CLOSED" })).toMatchObject({
      isError: true,
      data: { error: "not_found" },
    });
    expect((await getDeal(owner.token, deal.id)).stage).toBe(deal.stage);
    expect(await tool(client, "log_activity", { contactId: contact.id, type: "NOTE" })).toMatchObject({
      isError: true,
      data: { error: "not_found" },
    });
    expect((await tool(client, "find_contacts")).data.contacts).toEqual([]);

    const own = await connect(owner.token);
    expect(await tool(own, "move_deal", { dealId: deal.id, stage: deal.stage })).toMatchObject({
      isError: true,
      data: { error: "already_in_stage" },
    });
    expect(await tool(own, "create_contact", { firstName: "Dup", lastName: "Licate", email: contact.email })).toMatchObject({
      isError: true,
      data: { error: "duplicate_email" },
    });
    // Refused by the tool's schema (the route's bounds) before any service runs.
    const bad = await tool(own, "create_contact", { firstName: "", lastName: "x".repeat(101), email: "not-an-email" });
    expect(bad.isError).toBe(true);
    expect(bad.text).toMatch(/email/);
    expect((await tool(own, "find_contacts", { limit: 101 })).isError).toBe(true);
    expect((await tool(own, "find_contacts", { minLeadScore: 80, maxLeadScore: 20 })).data).toMatchObject({ error: "validation_error" });
    expect((await tool(own, "search_documents", { query: "x".repeat(501) })).isError).toBe(true);
    expect(await tool(own, "create_contact", { firstName: "Lone \ud800", lastName: "Surrogate", email: uniqueEmail() })).toMatchObject({
      isError: true,
      data: { error: "validation_error" },
    });
    await client.close();
    await own.close();
  });
});

describe("MCP by the letter", () => {
  it("advertises only what a stateless server honours: tools and resources, without listChanged or subscribe", async () => {
    const { token } = await createPrincipal();
    const res = await post(initialize(), { authorization: `Bearer ${token}` });
    const { result } = await json(res);
    expect(result.capabilities).toEqual({ tools: {}, resources: {} });
    const client = await connect(token);
    expect(client.getServerCapabilities()).toEqual({ tools: {}, resources: {} });
    await client.close();
  });

  it("answers an unknown tool with the JSON-RPC error -32602, at every protocol version", async () => {
    const { token } = await createPrincipal();
    for (const version of ["2025-11-25", "2025-06-18"]) {
      const body = await rpc(token, "tools/call", { name: "delete_everything", arguments: {} }, version);
      expect(body.result, version).toBeUndefined();
      expect(body.error, version).toMatchObject({ code: -32602, message: expect.stringContaining("delete_everything") });
    }
    const client = await connect(token);
    await expect(client.callTool({ name: "delete_everything", arguments: {} })).rejects.toMatchObject({ code: -32602 });
    await client.close();
  });

  it("answers invalid arguments with -32602 before 2025-11-25, and as a tool error with every issue from it (SEP-1303)", async () => {
    const { token } = await createPrincipal();
    const args = { firstName: "", lastName: "Bad", email: "not-an-email" };
    for (const version of ["2025-06-18", "2025-03-26"]) {
      const body = await rpc(token, "tools/call", { name: "create_contact", arguments: args }, version);
      expect(body.result, version).toBeUndefined();
      expect(body.error, version).toMatchObject({
        code: -32602,
        data: { issues: expect.arrayContaining([expect.objectContaining({ field: "email" })]) },
      });
      // A route schema's rule (min above max) is an invalid argument too.
      const range = await rpc(token, "tools/call", { name: "find_contacts", arguments: { minLeadScore: 80, maxLeadScore: 20 } }, version);
      expect(range.error, version).toMatchObject({ code: -32602 });
    }
    const current = await rpc(token, "tools/call", { name: "create_contact", arguments: args });
    expect(current.error).toBeUndefined();
    expect(current.result).toMatchObject({ isError: true });
    expect(current.result?.structuredContent).toBeUndefined();
    expect(JSON.parse(current.result?.content[0].text)).toMatchObject({
      error: "validation_error",
      issues: expect.arrayContaining([expect.objectContaining({ field: "email" }), expect.objectContaining({ field: "firstName" })]),
    });
    // Without the header a client is taken to speak 2025-03-26 (transport spec): the JSON-RPC error.
    const bare = await post(
      { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "create_contact", arguments: args } },
      { authorization: `Bearer ${token}` },
    );
    expect((await json(bare)).error).toMatchObject({ code: -32602 });
    // Nothing was made by any of them.
    expect((await json(await call("GET", "/v1/contacts", { token }))).data).toEqual([]);
  });

  it("sends a sequential envelope and lists every signer in order, marking who is up now", async () => {
    const { token } = await createPrincipal();
    const doc = await createDocument(token);
    const client = await connect(token);
    const signers = [
      { name: "First Signer", email: "first@signer.test", role: "landlord" },
      { name: "Second Signer", email: "second@signer.test", role: "tenant" },
      { name: "Third Signer", email: "third@signer.test", role: "tenant" },
    ];
    const sent = await tool(client, "send_for_signature", { documentId: doc.id, signers, mode: "sequential" });
    expect(sent.isError, sent.text).toBe(false);
    expect(sent.data.envelope).toMatchObject({ mode: "sequential" });
    expect(sent.data.envelope.signers).toEqual([
      expect.objectContaining({ position: 0, email: "first@signer.test", status: "sent", mailed: true, upNow: true }),
      expect.objectContaining({ position: 1, email: "second@signer.test", status: "pending", mailed: false, upNow: false }),
      expect.objectContaining({ position: 2, email: "third@signer.test", status: "pending", mailed: false, upNow: false }),
    ]);
    expect(sent.text).not.toContain("/sign/");
    await client.close();
  });
});

describe("MCP tools with an OAuth access token", () => {
  it("creates a contact and moves a deal with an access token", async () => {
    const principal = await createPrincipal();
    const deal = await createDeal(principal.token);
    const client = await connect(await oauthAccessToken(principal));
    const created = await tool(client, "create_contact", { firstName: "Otto", lastName: "Auth", email: uniqueEmail("oauth") });
    expect(created.isError, created.text).toBe(false);
    expect(created.data.contact.organizationId).toBe(principal.organizationId);
    const moved = await tool(client, "move_deal", { dealId: deal.id, stage: "CONTRACT" });
    expect(moved.isError, moved.text).toBe(false);
    expect(await getDeal(principal.token, deal.id)).toMatchObject({ stage: "CONTRACT" });
    await client.close();
  });

  it("answers a tool outside the token's grant with a 403 step-up naming the scope to ask for; authorized again, the call runs", async () => {
    const principal = await createPrincipal();
    const deal = await createDeal(principal.token);
    const narrow = await oauthAccessToken(principal, "contacts:read");
    const callTool = (token: string, name: string, args: Record<string, unknown>) =>
      post(
        { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name, arguments: args } },
        { authorization: `Bearer ${token}`, "mcp-protocol-version": "2025-11-25" },
      );
    const args = { firstName: "Step", lastName: "Up", email: uniqueEmail("step-up") };
    const refused = await callTool(narrow, "create_contact", args);
    expect(refused.status).toBe(403);
    expect(refused.headers.get("www-authenticate")).toBe(
      `Bearer error="insufficient_scope", scope="contacts:read contacts:write", resource_metadata="${METADATA}", error_description="create_contact needs contacts:write"`,
    );
    expect(await refused.json()).toMatchObject({ jsonrpc: "2.0", id: 7, error: { message: expect.stringContaining("contacts:write") } });
    // Each refusal names what this token holds plus what that tool needs; nothing was written.
    for (const [name, needed] of [
      ["move_deal", "deals:write"],
      ["get_pipeline", "deals:read"],
      ["send_for_signature", "envelopes:send"],
    ] as const) {
      const res = await callTool(narrow, name, name === "move_deal" ? { dealId: deal.id, stage: "CLOSED" } : {});
      expect(res.status, name).toBe(403);
      expect(res.headers.get("www-authenticate"), name).toContain(`scope="${["contacts:read", needed].sort(byPermissionOrder).join(" ")}"`);
    }
    expect(await getDeal(principal.token, deal.id)).toMatchObject({ stage: deal.stage });

    // Authorized again with the scope the challenge named, the same call runs.
    const scope = /scope="([^"]+)"/.exec(refused.headers.get("www-authenticate")!)![1]!;
    const wider = await oauthAccessToken(principal, scope);
    const created = await callTool(wider, "create_contact", args);
    expect(created.status).toBe(200);
    const body = (await created.json()) as { result: { isError?: boolean; structuredContent: unknown } };
    expect(body.result.isError ?? false).toBe(false);
    expect((body.result.structuredContent as { contact: { email: string } }).contact.email).toBe(args.email.toLowerCase());

    // The granted tools run; nor may one embed what the token could not read by itself (a tool error: no tool is refused).
    const client = await connect(narrow);
    const found = await tool(client, "find_contacts");
    expect(found.isError, found.text).toBe(false);
    expect(found.data.contacts.map((c: { id: string }) => c.id)).toContain(deal.contactId);
    const embedded = await tool(client, "find_contacts", { include: ["deals"] });
    expect(embedded).toMatchObject({ isError: true, data: { error: "insufficient_permission" } });
    expect(embedded.text).toContain("deals:read");
    expect(embedded.text).not.toContain(deal.id);
    await client.close();
  });

  it("answers an API key outside its permissions with a tool error naming the one it needs: no OAuth flow re-issues a key", async () => {
    const principal = await createPrincipal();
    const key = await createApiKey(principal.token, ["contacts:read"]);
    const client = await connect(key.key);
    const refused = await tool(client, "create_contact", { firstName: "No", lastName: "Write", email: uniqueEmail() });
    expect(refused).toMatchObject({ isError: true, data: { error: "insufficient_permission", permission: "contacts:write" } });
    expect(refused.text).toContain("contacts:write");
    await client.close();
  });

  it("refuses JSON-RPC batches: one message, one call", async () => {
    const principal = await createPrincipal();
    const res = await post([initialize(1), initialize(2)], { authorization: `Bearer ${principal.token}` });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } });
  });
});
