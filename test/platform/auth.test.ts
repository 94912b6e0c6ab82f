import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createPrincipal, revokeSession } from "../helpers/factories";

const crm401 = {
  success: false,
  error: { type: "authentication_error", code: "unauthorized", title: "Unauthorized", status: 401, detail: expect.any(String), errors: [] },
};

describe("bearer authentication", () => {
  it("admits a live session", async () => {
    const { token } = await createPrincipal();
    expect((await call("POST", "/plants", { token, body: { id: 1, name: "Fern" } })).status).toBe(200);
  });

  it.each([
    ["no Authorization header", undefined],
    ["an unknown token", "sess_doesnotexist"],
    ["a non-Bearer scheme", "Basic dXNlcjpwYXNz"],
    ["an empty bearer", "Bearer "],
  ])("answers 401 on every family for %s", async (_, header) => {
    const headers: Record<string, string> = header ? { authorization: header } : {};
    const plants = await call("DELETE", "/plants/1", { headers });
    expect(plants.status).toBe(401);
    expect(await json(plants)).toEqual({ error: 401, message: expect.any(String) });
    const api = await call("GET", "/api/documents/usage", { headers });
    expect(api.status).toBe(401);
    expect(await json(api)).toEqual({ error: "Unauthorized" });
    const crm = await call("GET", "/v1/contacts", { headers });
    expect(crm.status).toBe(401);
    expect(await json(crm)).toEqual(crm401);
  });

  it("answers 401 for a revoked session, while another session of the same user still works", async () => {
    const a = await createPrincipal();
    const b = await createPrincipal({ organizationId: a.organizationId });
    await revokeSession(a.sessionId);
    expect((await call("DELETE", "/plants/1", { token: a.token })).status).toBe(401);
    expect((await call("DELETE", "/plants/1", { token: b.token })).status).toBe(404);
  });

  it("reads only the session's organization: another organization's contact answers as an unknown id, on its shard or the other", async () => {
    const owner = await createPrincipal({ shard: 0 });
    const contact = await json(
      await call("POST", "/v1/contacts", {
        token: owner.token,
        body: { firstName: "Only", lastName: "Mine", email: `mine-${crypto.randomUUID()}@example.test` },
      }),
    );
    // A stranger on the owner's shard is kept out by the organization in every query; one on the other shard opens a
    // database that has no such row at all (issue 24). Both must answer exactly what an unknown id answers.
    for (const shard of [0, 1]) {
      const stranger = await createPrincipal({ shard });
      const foreign = await call("GET", `/v1/contacts/${contact.data.id}`, { token: stranger.token });
      const unknown = await call("GET", "/v1/contacts/00000000-0000-4000-8000-000000000000", { token: stranger.token });
      expect(foreign.status, `stranger on shard ${shard}`).toBe(404);
      expect(await foreign.text(), `stranger on shard ${shard}`).toBe(await unknown.text());
    }
    expect((await call("GET", `/v1/contacts/${contact.data.id}`, { token: owner.token })).status).toBe(200);
  });

  it("answers 401 for an expired session", async () => {
    const { token } = await createPrincipal({ expiresInSeconds: -1 });
    const res = await call("GET", "/v1/contacts", { token });
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual(crm401);
  });

  it("stores only the SHA-256 of the token", async () => {
    const { token, sessionId } = await createPrincipal();
    const row = await env.DB.prepare("SELECT token_hash FROM sessions WHERE id = ?").bind(sessionId).first<{ token_hash: string }>();
    expect(row!.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row!.token_hash).not.toContain(token);
    const hits = await env.DB.prepare("SELECT COUNT(*) AS n FROM sessions WHERE token_hash = ? OR id = ?")
      .bind(token, token)
      .first<{ n: number }>();
    expect(hits!.n).toBe(0);
  });

  it("leaves public routes and the docs open", async () => {
    expect((await call("GET", "/openapi.json")).status).toBe(200);
    expect((await call("GET", "/docs")).status).toBe(200);
    // No public route exists yet in this family: an unknown one is a 404, not a 401.
    expect((await call("GET", "/api/public/sign/whatever")).status).toBe(404);
  });
});
