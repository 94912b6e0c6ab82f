import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/lib/crypto";
import { createApiKey, grantTokens } from "../helpers/api-keys";
import { call, json } from "../helpers/client";
import { createPrincipal } from "../helpers/factories";
import { whereFound } from "../helpers/erasure";
import { authorizeUrl, call as callOAuth, pkce, validParams } from "../helpers/oauth";
import { testApp } from "../helpers/test-app";

// Issue 32, "Keys for machines": API keys are bearers on every authenticated family, within their permissions and
// their creator's role, stored only as SHA-256.

const keyRow = (id: string) => env.DB.prepare("SELECT * FROM api_keys WHERE id = ?").bind(id).first<Record<string, string | null>>();

describe("API keys", () => {
  it("shows the key once, keeps only its SHA-256, and lists it by prefix", async () => {
    const owner = await createPrincipal();
    const res = await call("POST", "/v1/api-keys", {
      token: owner.token,
      body: { name: "IDX sync", permissions: ["contacts:read", "properties:read"] },
      headers: { "idempotency-key": crypto.randomUUID() },
    });
    expect(res.status).toBe(201);
    const created = (await json(res)).data;
    expect(created.key).toMatch(/^bk_[A-Za-z0-9_-]{43}$/);
    expect(created).toMatchObject({
      name: "IDX sync",
      prefix: created.key.slice(0, 11),
      permissions: ["contacts:read", "properties:read"],
      createdBy: owner.userId,
      lastUsedAt: null,
      expiresAt: null,
    });

    // Nowhere in the directory or the shards but as its hash.
    expect(await whereFound([created.key])).toEqual([]);
    expect((await keyRow(created.id))!.key_hash).toBe(await sha256Hex(created.key));

    const list = await json(await call("GET", "/v1/api-keys", { token: owner.token }));
    expect(list.data).toEqual([
      {
        id: created.id,
        name: "IDX sync",
        prefix: created.prefix,
        permissions: ["contacts:read", "properties:read"],
        createdAt: created.createdAt,
        createdBy: owner.userId,
        lastUsedAt: null,
        expiresAt: null,
      },
    ]);
    expect(list.pagination).toMatchObject({ total: 1, hasMore: false });
  });

  it("leaves the key out of an idempotent replay of its creation", async () => {
    const owner = await createPrincipal();
    const headers = { "idempotency-key": crypto.randomUUID() };
    const body = { name: "Replayed", permissions: ["contacts:read"] };
    const first = await json(await call("POST", "/v1/api-keys", { token: owner.token, body, headers }));
    const replay = await call("POST", "/v1/api-keys", { token: owner.token, body, headers });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    const replayed = (await json(replay)).data;
    expect(replayed.id).toBe(first.data.id);
    expect(replayed.key).toBeUndefined();
  });

  it("is a bearer on every family (/v1, /api, /plants) and on the MCP endpoint, within its permissions", async () => {
    const owner = await createPrincipal();
    const { key } = await createApiKey(owner.token, ["contacts:read", "documents:read", "plants:write"]);
    expect((await call("GET", "/v1/contacts", { token: key })).status).toBe(200);
    expect((await call("GET", "/api/documents/usage", { token: key })).status).toBe(200);
    expect((await call("POST", "/plants", { token: key, body: { id: Math.floor(Math.random() * 1e9), name: "Keyed fern" } })).status).toBe(
      200,
    );
    const mcp = await exports.default.fetch(
      new Request("http://api.test/mcp", {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "find_contacts", arguments: {} } }),
      }),
    );
    expect(mcp.status).toBe(200);
    expect(((await mcp.json()) as { result: { isError?: boolean } }).result.isError ?? false).toBe(false);
    // But it is no session: the OAuth authorization endpoint's shortcut would let it approve a client for more than it may do.
    const { challenge } = await pkce();
    const authorize = await callOAuth("GET", authorizeUrl(validParams(challenge)), { token: key });
    expect(authorize.status).toBe(401);
    expect(authorize.headers.get("location")).toBeNull();
  });

  it("is refused past its permissions with 403 insufficient_permission, in each family's shape", async () => {
    const owner = await createPrincipal();
    const { key } = await createApiKey(owner.token, ["contacts:read"]);
    const crm = await call("POST", "/v1/contacts", {
      token: key,
      body: { firstName: "No", lastName: "Write", email: `no-${crypto.randomUUID()}@example.test` },
    });
    expect(crm.status).toBe(403);
    expect(await json(crm)).toMatchObject({
      success: false,
      error: { type: "permission_error", code: "insufficient_permission", detail: expect.stringContaining("contacts:write") },
    });
    expect((await call("GET", "/v1/contacts?include=deals", { token: key })).status).toBe(403);
    const api = await call("GET", "/api/documents/usage", { token: key });
    expect(api.status).toBe(403);
    expect(await json(api)).toEqual({ error: "insufficient_permission", message: expect.stringContaining("documents:read") });
    const plants = await call("POST", "/plants", { token: key, body: { id: 7, name: "Refused" } });
    expect(plants.status).toBe(403);
    expect(await json(plants)).toEqual({ error: 403, message: expect.stringContaining("plants:write") });
  });

  it("answers 401 once expired, and once deleted (at once, on every family)", async () => {
    const owner = await createPrincipal();
    const expiring = await createApiKey(owner.token, ["contacts:read"], { expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
    expect((await call("GET", "/v1/contacts", { token: expiring.key })).status).toBe(200);
    // Its hour has passed.
    await env.DB.prepare("UPDATE api_keys SET expires_at = ? WHERE id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), expiring.id)
      .run();
    expect((await call("GET", "/v1/contacts", { token: expiring.key })).status).toBe(401);

    const { id, key } = await createApiKey(owner.token, ["contacts:read", "documents:read", "plants:write"]);
    expect((await call("GET", "/v1/contacts", { token: key })).status).toBe(200);
    expect((await call("DELETE", `/v1/api-keys/${id}`, { token: owner.token })).status).toBe(204);
    expect((await call("GET", "/v1/contacts", { token: key })).status).toBe(401);
    expect((await call("GET", "/api/documents/usage", { token: key })).status).toBe(401);
    expect((await call("DELETE", "/plants/1", { token: key })).status).toBe(401);
    expect(await keyRow(id)).toBeNull();
    // Deleted is deleted: again, or from another organization, it is unknown.
    expect((await call("DELETE", `/v1/api-keys/${id}`, { token: owner.token })).status).toBe(404);
  });

  it("refuses an expiry in the past or more than a year ahead, and permissions that do not exist, listing each problem", async () => {
    const owner = await createPrincipal();
    const res = await call("POST", "/v1/api-keys", {
      token: owner.token,
      body: { name: "", permissions: ["contacts:read", "everything:all"], expiresAt: new Date(Date.now() - 60_000).toISOString() },
    });
    expect(res.status).toBe(422);
    const fields = (await json(res)).error.errors.map((e: { field: string }) => e.field);
    expect([...new Set(fields)].sort()).toEqual(["expiresAt", "name", "permissions.1"]);
    const far = await call("POST", "/v1/api-keys", {
      token: owner.token,
      body: { name: "Far", permissions: ["contacts:read"], expiresAt: new Date(Date.now() + 400 * 86_400_000).toISOString() },
    });
    expect(far.status).toBe(422);
    expect((await json(far)).error.errors).toEqual([expect.objectContaining({ field: "expiresAt", code: "invalid_expiry" })]);
  });

  it("acts as its creator within their current role: a demoted creator's key loses what the role no longer allows", async () => {
    const admin = await createPrincipal({ role: "admin" });
    const { id, key } = await createApiKey(admin.token, ["contacts:read", "webhooks:manage", "api-keys:manage"]);
    expect((await call("GET", "/v1/webhooks", { token: key })).status).toBe(200);
    // The admin becomes an agent: the key keeps what an agent may do, and loses the rest at once.
    await env.DB.prepare("UPDATE users SET role = 'agent' WHERE id = ?").bind(admin.userId).run();
    const refused = await call("GET", "/v1/webhooks", { token: key });
    expect(refused.status).toBe(403);
    expect((await json(refused)).error.code).toBe("insufficient_role");
    expect((await call("GET", "/v1/api-keys", { token: key })).status).toBe(403);
    expect((await call("GET", "/v1/contacts", { token: key })).status).toBe(200);
    // An agent cannot make keys at all.
    const agent = await createPrincipal({ role: "agent", organizationId: admin.organizationId });
    const made = await call("POST", "/v1/api-keys", { token: agent.token, body: { name: "Agent key", permissions: ["contacts:read"] } });
    expect(made.status).toBe(403);
    expect((await json(made)).error.code).toBe("insufficient_role");
    expect(await keyRow(id)).not.toBeNull();
  });

  it("carries no more than the credential that creates it: a key or an access token cannot mint a wider key", async () => {
    const owner = await createPrincipal();
    const narrow = await createApiKey(owner.token, ["api-keys:manage", "contacts:read"]);
    const wider = await call("POST", "/v1/api-keys", {
      token: narrow.key,
      body: { name: "Wider", permissions: ["contacts:read", "deals:write"] },
    });
    expect(wider.status).toBe(403);
    expect(await json(wider)).toMatchObject({ error: { code: "insufficient_permission", detail: expect.stringContaining("deals:write") } });
    expect((await call("POST", "/v1/api-keys", { token: narrow.key, body: { name: "Same", permissions: ["contacts:read"] } })).status).toBe(
      201,
    );
    const { access_token } = await grantTokens(owner, { scope: "api-keys:manage contacts:read" });
    expect(
      (await call("POST", "/v1/api-keys", { token: access_token, body: { name: "From a token", permissions: ["deals:read"] } })).status,
    ).toBe(403);
  });

  // Issue 40: a key expiring in an hour, holding api-keys:manage, minted a key that never expires.
  it("expires no later than the credential that creates it: a key's or an access token's end caps the new key's", async () => {
    const owner = await createPrincipal();
    const hourEnd = new Date(Date.now() + 3_600_000).toISOString();
    const hour = await createApiKey(owner.token, ["api-keys:manage", "contacts:read"], { expiresAt: hourEnd });
    const forever = await call("POST", "/v1/api-keys", { token: hour.key, body: { name: "Forever", permissions: ["contacts:read"] } });
    expect(forever.status).toBe(201);
    const minted = (await json(forever)).data as { id: string; key: string; expiresAt: string };
    expect(minted.expiresAt).toBe(hourEnd);
    const later = await call("POST", "/v1/api-keys", {
      token: hour.key,
      body: { name: "Next month", permissions: ["contacts:read"], expiresAt: new Date(Date.now() + 30 * 86_400_000).toISOString() },
    });
    expect((await json(later)).data.expiresAt).toBe(hourEnd);
    const sooner = new Date(Date.now() + 600_000).toISOString();
    const shorter = await call("POST", "/v1/api-keys", {
      token: hour.key,
      body: { name: "Ten minutes", permissions: ["contacts:read"], expiresAt: sooner },
    });
    expect((await json(shorter)).data.expiresAt).toBe(sooner);
    // The minted key dies with its creator's hour: the row says so, and authentication refuses it after.
    await env.DB.prepare("UPDATE api_keys SET expires_at = ? WHERE id IN (?, ?)")
      .bind(new Date(Date.now() - 1000).toISOString(), hour.id, minted.id)
      .run();
    expect((await call("GET", "/v1/contacts", { token: minted.key })).status).toBe(401);

    // An OAuth client's token lives an hour: what it mints ends with its grant.
    const { access_token } = await grantTokens(owner, { scope: "api-keys:manage contacts:read" });
    const fromToken = await call("POST", "/v1/api-keys", {
      token: access_token,
      body: { name: "From a token", permissions: ["contacts:read"] },
    });
    expect(fromToken.status).toBe(201);
    const tokenKeyEnd = Date.parse((await json(fromToken)).data.expiresAt);
    expect(tokenKeyEnd).toBeGreaterThan(Date.now());
    expect(tokenKeyEnd).toBeLessThanOrEqual(Date.now() + 3_600_000 + 5_000);
    // A key that never expires, and the user's own session, make keys that live as asked.
    const lasting = await createApiKey(owner.token, ["api-keys:manage", "contacts:read"]);
    expect(
      (await json(await call("POST", "/v1/api-keys", { token: lasting.key, body: { name: "Lasting", permissions: ["contacts:read"] } })))
        .data.expiresAt,
    ).toBeNull();
  });

  it("stamps lastUsedAt after the answer, at most once a minute", async () => {
    const owner = await createPrincipal();
    const { id, key } = await createApiKey(owner.token);
    // An app whose requests finish their deferred work before they answer.
    const app = testApp();
    const lastUsed = async () => (await keyRow(id))!.last_used_at;
    expect((await app.fetch("GET", "/v1/contacts", { token: key })).status).toBe(200);
    const first = await lastUsed();
    expect(first).not.toBeNull();
    for (let i = 0; i < 3; i++) expect((await app.fetch("GET", "/v1/contacts", { token: key })).status).toBe(200);
    expect(await lastUsed()).toBe(first);
    // A minute later, the next request stamps it again.
    const minuteAgo = new Date(Date.now() - 61_000).toISOString();
    await env.DB.prepare("UPDATE api_keys SET last_used_at = ? WHERE id = ?").bind(minuteAgo, id).run();
    expect((await app.fetch("GET", "/v1/contacts", { token: key })).status).toBe(200);
    expect(Date.parse((await lastUsed())!)).toBeGreaterThan(Date.parse(minuteAgo) + 60_000);
    const listed = (await json(await call("GET", "/v1/api-keys", { token: owner.token }))).data[0];
    expect(listed.lastUsedAt).toBe(await lastUsed());
  });

  it("pages the list newest first with a cursor", async () => {
    const owner = await createPrincipal();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await createApiKey(owner.token)).id);
    const first = await json(await call("GET", "/v1/api-keys?limit=2", { token: owner.token }));
    expect(first.pagination).toMatchObject({ total: 3, hasMore: true, limit: 2 });
    const second = await json(
      await call("GET", `/v1/api-keys?limit=2&cursor=${encodeURIComponent(first.pagination.nextCursor)}`, { token: owner.token }),
    );
    expect(second.pagination).toMatchObject({ hasMore: false, nextCursor: null });
    expect([...first.data, ...second.data].map((k: { id: string }) => k.id)).toEqual(ids.reverse());
  });
});

describe("OAuth access tokens on /api and /plants (issue 32)", () => {
  it("reach the document desk, the reputation suite and the plant store within their permissions", async () => {
    const owner = await createPrincipal();
    const { access_token } = await grantTokens(owner, { scope: "documents:read plants:write" });
    expect((await call("GET", "/api/documents/usage", { token: access_token })).status).toBe(200);
    expect(
      (await call("POST", "/plants", { token: access_token, body: { id: Math.floor(Math.random() * 1e9), name: "Granted fern" } })).status,
    ).toBe(200);
    const refused = await call("GET", "/api/reputation/testimonials", { token: access_token });
    expect(refused.status).toBe(403);
    expect(await json(refused)).toEqual({ error: "insufficient_permission", message: expect.stringContaining("reputation:read") });
  });
});
