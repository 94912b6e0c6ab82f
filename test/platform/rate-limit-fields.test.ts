import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newToken, sha256Hex } from "../../src/lib/crypto";
import type { RateLimiter } from "../../src/platform/rate-limiter";
import { createApiKey, grantTokens } from "../helpers/api-keys";
import { call, json } from "../helpers/client";
import { createPrincipal } from "../helpers/factories";
import { createProperty } from "../helpers/properties";
import { testApp } from "../helpers/test-app";

// Issue 32: every answer to an authenticated caller carries the IETF RateLimit fields of its credential's quota
// (draft-ietf-httpapi-ratelimit-headers); past the quota, 429 with Retry-After. A small quota through the config.

const quota = (spec: string) => ({ CREDENTIAL_RATE_LIMIT: spec });
const fields = (res: Response) => ({ policy: res.headers.get("ratelimit-policy"), limit: res.headers.get("ratelimit") });
/** `r` and `t` of a RateLimit field. */
function parsed(field: string | null) {
  const m = /^"default";r=(\d+);t=(\d+)$/.exec(field ?? "");
  expect(m, `RateLimit: ${field}`).not.toBeNull();
  return { r: Number(m![1]), t: Number(m![2]) };
}

describe("RateLimit fields and the per-credential quota", () => {
  it("counts down on every family, errors included, then answers 429 with Retry-After in each family's shape", async () => {
    const { token } = await createPrincipal();
    const vars = quota("4/60");
    const answers = [
      await call("GET", "/v1/contacts", { token, vars }),
      await call("GET", "/api/documents/usage", { token, vars }),
      await call("DELETE", "/plants/1", { token, vars }),
      await call("GET", "/v1/contacts", { token, vars }),
    ];
    expect(answers.map((r) => r.status)).toEqual([200, 200, 404, 200]);
    for (const res of answers) expect(fields(res).policy).toBe('"default";q=4;w=60');
    const counts = answers.map((res) => parsed(fields(res).limit));
    expect(counts.map((c) => c.r)).toEqual([3, 2, 1, 0]);
    for (const c of counts) expect(c.t).toBeGreaterThanOrEqual(1), expect(c.t).toBeLessThanOrEqual(60);

    const crm = await call("GET", "/v1/contacts", { token, vars });
    expect(crm.status).toBe(429);
    expect(await json(crm)).toMatchObject({ success: false, error: { type: "rate_limit_error", code: "rate_limited", status: 429 } });
    const retryAfter = Number(crm.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(parsed(fields(crm).limit)).toEqual({ r: 0, t: retryAfter });
    const api = await call("GET", "/api/documents/usage", { token, vars });
    expect(api.status).toBe(429);
    expect(await json(api)).toEqual({ error: "rate_limited" });
    expect(api.headers.get("retry-after")).not.toBeNull();
    const plants = await call("POST", "/plants", { token, vars, body: { id: 3, name: "Over quota" } });
    expect(plants.status).toBe(429);
    expect(await json(plants)).toEqual({ error: 429, message: expect.any(String) });
  });

  it("gives a session, an API key and an access token of one user a window each", async () => {
    const owner = await createPrincipal();
    const { key } = await createApiKey(owner.token, ["contacts:read"]);
    const { access_token } = await grantTokens(owner, { scope: "contacts:read" });
    // A second session of the same user, which nothing has used yet.
    const session = newToken("sess");
    await env.DB.prepare(
      "INSERT INTO sessions (id, token_hash, user_id, organization_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
    )
      .bind(
        crypto.randomUUID(),
        await sha256Hex(session),
        owner.userId,
        owner.organizationId,
        new Date().toISOString(),
        new Date(Date.now() + 3_600_000).toISOString(),
      )
      .run();
    const vars = quota("2/60");
    for (let i = 0; i < 2; i++) expect((await call("GET", "/v1/contacts", { token: session, vars })).status).toBe(200);
    expect((await call("GET", "/v1/contacts", { token: session, vars })).status).toBe(429);
    for (const token of [key, access_token]) {
      const res = await call("GET", "/v1/contacts", { token, vars });
      expect(res.status).toBe(200);
      expect(parsed(fields(res).limit).r).toBe(1);
    }
  });

  it("leaves the fields off a 401, whose token spends no one's quota", async () => {
    const { token } = await createPrincipal();
    const vars = quota("1/60");
    for (let i = 0; i < 3; i++) {
      const unknown = await call("GET", "/v1/contacts", { token: "sess_unknown", vars });
      expect(unknown.status).toBe(401);
      expect(fields(unknown)).toEqual({ policy: null, limit: null });
    }
    const mine = await call("GET", "/v1/contacts", { token, vars });
    expect(mine.status).toBe(200);
    expect(parsed(fields(mine).limit).r).toBe(0);
    expect((await call("GET", "/v1/contacts", { token, vars })).status).toBe(429);
  });

  it("carries the fields on the MCP endpoint too", async () => {
    const { token } = await createPrincipal();
    const res = await exports.default.fetch(
      new Request("http://api.test/mcp", {
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
      }),
    );
    expect(res.status).toBe(200);
    expect(fields(res).policy).toMatch(/^"default";q=\d+;w=60$/);
    expect(parsed(fields(res).limit).r).toBeGreaterThan(0);
  });

  it("lets requests through uncounted when the limiter fails, as a Durable Object outage would", async () => {
    const { token } = await createPrincipal();
    const counted = await testApp().fetch("GET", "/v1/contacts", { token });
    expect(parsed(fields(counted).limit).r).toBeGreaterThan(0);
    const failing = { consume: () => Promise.reject(new Error("limiter down")) } as unknown as RateLimiter;
    const res = await testApp({ credentialLimiter: failing }).fetch("GET", "/v1/contacts", { token });
    expect(res.status).toBe(200);
    expect(fields(res)).toEqual({ policy: null, limit: null });
  });
});

describe("RateLimit fields of a route's own bucket (issue 33 follow-up of 32)", () => {
  it("answers a public page with its per-address bucket as the policy, 429 included", async () => {
    const headers = { "cf-connecting-ip": `198.51.100.${Math.floor(Math.random() * 250) + 1}` };
    const first = await call("GET", `/invite/inv_${"A".repeat(43)}`, { headers });
    expect(first.status).toBe(404);
    expect(first.headers.get("ratelimit-remaining")).toBeNull();
    expect(fields(first)).toEqual({
      policy: '"public-invite:get";q=60;w=60',
      limit: expect.stringMatching(/^"public-invite:get";r=59;t=\d+$/),
    });
    let last = first;
    for (let i = 0; i < 60 && last.status !== 429; i++) last = await call("GET", `/invite/inv_${"A".repeat(43)}`, { headers });
    expect(last.status).toBe(429);
    expect(fields(last).limit).toMatch(/^"public-invite:get";r=0;t=\d+$/);
  });

  it("lists the credential's quota and the route's bucket side by side on an authenticated route that has both", async () => {
    const { token } = await createPrincipal();
    const property = await createProperty(token);
    const res = await call("POST", `/v1/properties/${property.id}/signals`, { token, body: { type: "VIEW", visitorId: "v1" } });
    expect(res.status).toBe(201);
    expect(fields(res).policy).toMatch(/^"default";q=\d+;w=60, "property-signals:post";q=600;w=60$/);
    expect(fields(res).limit).toMatch(/^"default";r=\d+;t=\d+, "property-signals:post";r=599;t=\d+$/);
  });
});
