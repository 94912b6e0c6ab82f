import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { runCron } from "../../src/cron";
import { createApiKey, grantTokens, integrationEvents, pendingDirectoryEvents, registerClient, tokenRequest } from "../helpers/api-keys";
import { call, json } from "../helpers/client";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";

// Issue 32, "Integrations": the OAuth clients an organization's users granted and its API keys, listed, with
// integration.connected / integration.disconnected on the transitions, each exactly once.

const integrations = async (p: TestPrincipal) => json(await call("GET", "/v1/integrations", { token: p.token }));
const eventsOf = async (p: TestPrincipal) => integrationEvents(await tenantDb(p.organizationId), p.organizationId);
const kinds = async (p: TestPrincipal) => (await eventsOf(p)).map((e) => e.type);

const revoke = (refreshToken: string, clientId: string) => tokenRequest({ token: refreshToken, client_id: clientId }, "/oauth/revoke");
const refresh = (refreshToken: string, clientId: string) =>
  tokenRequest({ grant_type: "refresh_token", refresh_token: refreshToken, client_id: clientId });

/** Until the directory holds no event of the organization still on its way (the relay's cleanup runs after the answer). */
async function settled(p: TestPrincipal) {
  for (let i = 0; i < 50 && (await pendingDirectoryEvents(p.organizationId)) > 0; i++) await new Promise((r) => setTimeout(r, 20));
  expect(await pendingDirectoryEvents(p.organizationId)).toBe(0);
}

describe("integrations: API keys", () => {
  it("lists a key as an integration; its creation and deletion each emit one event carrying it as listed", async () => {
    const owner = await createPrincipal();
    const key = await createApiKey(owner.token, ["contacts:read", "deals:read"]);
    const listed = await integrations(owner);
    expect(listed.data).toEqual([
      {
        type: "api_key",
        id: key.id,
        name: "Test key",
        prefix: key.prefix,
        permissions: ["contacts:read", "deals:read"],
        createdAt: expect.any(String),
        createdBy: owner.userId,
        lastUsedAt: null,
        expiresAt: null,
      },
    ]);
    expect(listed.pagination).toMatchObject({ total: 1, hasMore: false });
    const [connected] = await eventsOf(owner);
    expect(connected).toMatchObject({
      type: "integration.connected",
      actor: { type: "user", userId: owner.userId },
      object: listed.data[0],
    });
    expect(JSON.stringify(connected!.object)).not.toContain(key.key);

    expect((await call("DELETE", `/v1/api-keys/${key.id}`, { token: owner.token })).status).toBe(204);
    expect((await integrations(owner)).data).toEqual([]);
    const events = await eventsOf(owner);
    expect(events.map((e) => e.type)).toEqual(["integration.connected", "integration.disconnected"]);
    expect(events[1]!.object).toEqual(listed.data[0]);
    await settled(owner);
  });

  it("writes the event once when the shard write fails after the directory committed: the cron finishes it", async () => {
    const owner = await createPrincipal();
    // The shards refuse every write: the key is created in the directory, its event stays there.
    const refusing = {
      withSession: () => ({
        prepare: () => ({ bind: () => ({}) }),
        batch: () => Promise.reject(new Error("shard unavailable")),
        getBookmark: () => null,
      }),
    };
    const app = createApp();
    const ctx = createExecutionContext();
    const res = await app.fetch(
      new Request("http://api.test/v1/api-keys", {
        method: "POST",
        headers: { authorization: `Bearer ${owner.token}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "Stranded", permissions: ["contacts:read"] }),
      }),
      { ...env, DB_SHARD_0: refusing, DB_SHARD_1: refusing },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(201);
    expect(await kinds(owner)).toEqual([]);
    expect(await pendingDirectoryEvents(owner.organizationId)).toBe(1);
    // Not before it is due (the request's own relay may still be under way), then once, however often the cron runs.
    await runCron(env, new Date());
    expect(await kinds(owner)).toEqual([]);
    await env.DB.prepare("UPDATE directory_outbox SET due_at = ? WHERE organization_id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), owner.organizationId)
      .run();
    await runCron(env, new Date());
    await runCron(env, new Date());
    expect(await kinds(owner)).toEqual(["integration.connected"]);
    expect(await pendingDirectoryEvents(owner.organizationId)).toBe(0);
  });
});

describe("integrations: OAuth clients", () => {
  it("connects a client at its first grant in the organization and disconnects it when the last grant is revoked", async () => {
    const owner = await createPrincipal();
    const colleague = await createPrincipal({ organizationId: owner.organizationId });
    const clientId = await registerClient("Listing Robot");
    const mine = await grantTokens(owner, { clientId, scope: "contacts:read" });
    const listed = (await integrations(owner)).data;
    expect(listed).toEqual([
      {
        type: "oauth_client",
        id: clientId,
        name: "Listing Robot",
        grantedBy: [owner.userId],
        permissions: ["contacts:read"],
        connectedAt: expect.any(String),
      },
    ]);
    expect(await eventsOf(owner)).toEqual([
      expect.objectContaining({ type: "integration.connected", actor: { type: "user", userId: owner.userId }, object: listed[0] }),
    ]);

    // A second grant (another user), a refresh: still one integration, no new event.
    const theirs = await grantTokens(colleague, { clientId, scope: "deals:read" });
    const rotated = await json(await refresh(mine.refresh_token, clientId));
    expect(rotated.refresh_token).toEqual(expect.any(String));
    const both = (await integrations(owner)).data;
    expect(both).toEqual([
      { ...listed[0], grantedBy: [owner.userId, colleague.userId].sort(), permissions: ["contacts:read", "deals:read"] },
    ]);
    expect(await kinds(owner)).toEqual(["integration.connected"]);

    // Revoking one grant leaves it connected; revoking the last disconnects it, once.
    expect((await revoke(rotated.refresh_token, clientId)).status).toBe(200);
    expect((await integrations(owner)).data).toEqual([{ ...listed[0], grantedBy: [colleague.userId], permissions: ["deals:read"] }]);
    expect(await kinds(owner)).toEqual(["integration.connected"]);
    expect((await revoke(theirs.refresh_token, clientId)).status).toBe(200);
    expect((await revoke(theirs.refresh_token, clientId)).status).toBe(200);
    expect((await integrations(owner)).data).toEqual([]);
    const events = await eventsOf(owner);
    expect(events.map((e) => e.type)).toEqual(["integration.connected", "integration.disconnected"]);
    expect(events[1]).toMatchObject({
      actor: { type: "user", userId: colleague.userId },
      object: { type: "oauth_client", id: clientId, name: "Listing Robot", grantedBy: [colleague.userId], permissions: ["deals:read"] },
    });
    // Another organization granting the same client is an integration of its own.
    const other = await createPrincipal();
    await grantTokens(other, { clientId });
    expect(await kinds(other)).toEqual(["integration.connected"]);
    expect(await kinds(owner)).toEqual(["integration.connected", "integration.disconnected"]);
  });

  it("disconnects once when reuse detection revokes the last family", async () => {
    const owner = await createPrincipal();
    const clientId = await registerClient("Reused");
    const tokens = await grantTokens(owner, { clientId });
    const second = await refresh(tokens.refresh_token, clientId);
    expect(second.status).toBe(200);
    // Its replacement used, the first refresh token again is a reuse (not a retry), which revokes the whole family.
    expect((await refresh(((await second.json()) as { refresh_token: string }).refresh_token, clientId)).status).toBe(200);
    const reused = await refresh(tokens.refresh_token, clientId);
    expect(reused.status).toBe(400);
    expect((await refresh(tokens.refresh_token, clientId)).status).toBe(400);
    const events = await eventsOf(owner);
    expect(events.map((e) => e.type)).toEqual(["integration.connected", "integration.disconnected"]);
    expect(events[1]!.actor).toEqual({ type: "system", userId: null });
    expect((await integrations(owner)).data).toEqual([]);
  });

  it("of concurrent first grants connects once, and of concurrent revocations of the last grants disconnects once", async () => {
    const owner = await createPrincipal();
    const users = [
      owner,
      ...(await Promise.all(Array.from({ length: 4 }, () => createPrincipal({ organizationId: owner.organizationId })))),
    ];
    const clientId = await registerClient("Raced");
    const grants = await Promise.all(users.map((u) => grantTokens(u, { clientId })));
    expect(await kinds(owner)).toEqual(["integration.connected"]);
    expect((await integrations(owner)).data[0].grantedBy).toHaveLength(5);
    await Promise.all(grants.map((g) => revoke(g.refresh_token, clientId)));
    expect(await kinds(owner)).toEqual(["integration.connected", "integration.disconnected"]);
  });

  it("disconnects a client whose grants ran out (30 days unused), from the cron, once", async () => {
    const owner = await createPrincipal();
    const clientId = await registerClient("Idle");
    await grantTokens(owner, { clientId });
    await env.DB.prepare("UPDATE oauth_refresh_tokens SET expires_at = ? WHERE organization_id = ? AND client_id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), owner.organizationId, clientId)
      .run();
    // Listed no more at once; the event comes with the next cron pass, and only once.
    expect((await integrations(owner)).data).toEqual([]);
    await runCron(env, new Date());
    await runCron(env, new Date());
    const events = await eventsOf(owner);
    expect(events.map((e) => e.type)).toEqual(["integration.connected", "integration.disconnected"]);
    expect(events[1]).toMatchObject({
      actor: { type: "system", userId: null },
      object: { id: clientId, name: "Idle", grantedBy: [owner.userId] },
    });
  });

  it("pages clients and keys together, newest first", async () => {
    const owner = await createPrincipal();
    const first = await createApiKey(owner.token);
    const clientId = await registerClient("Paged");
    await grantTokens(owner, { clientId, scope: "contacts:read" });
    const last = await createApiKey(owner.token);
    const page1 = await json(await call("GET", "/v1/integrations?limit=2", { token: owner.token }));
    expect(page1.data.map((i: { id: string }) => i.id)).toEqual([last.id, clientId]);
    expect(page1.pagination).toMatchObject({ total: 3, hasMore: true });
    const page2 = await json(
      await call("GET", `/v1/integrations?limit=2&cursor=${encodeURIComponent(page1.pagination.nextCursor)}`, { token: owner.token }),
    );
    expect(page2.data.map((i: { id: string }) => i.id)).toEqual([first.id]);
    expect(page2.pagination.hasMore).toBe(false);
  });
});
