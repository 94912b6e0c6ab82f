import { env } from "cloudflare:workers";
import { sign } from "hono/jwt";
import { describe, expect, it, vi } from "vitest";
import { createDb } from "../../src/db/client";
import { pruneOAuth } from "../../src/oauth/prune";
import { json } from "../helpers/client";
import { mailTo } from "../helpers/documents";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import {
  authorizeUrl,
  Browser,
  call,
  CLIENT,
  emailOf,
  freshIp,
  locationOf,
  mailedCode,
  pkce,
  REDIRECT,
  validParams,
} from "../helpers/oauth";

// OAuth 2.1 with PKCE (issue 14, spec Authentication rule 3): the authorization server and the permissions its tokens carry.
const ISSUER = "http://127.0.0.1:8787";
const MCP = "http://127.0.0.1:8787/mcp";

/** The bearer-session shortcut: a code for the session's user at once. */
async function codeFor(principal: TestPrincipal, scope?: string) {
  const { verifier, challenge } = await pkce();
  const res = await call("GET", authorizeUrl(validParams(challenge, { scope })), { token: principal.token });
  expect(res.status).toBe(302);
  return { code: locationOf(res).searchParams.get("code")!, verifier };
}

function tokenRequest(form: Record<string, string | undefined>, ip = freshIp()) {
  const body = new URLSearchParams(Object.entries(form).filter((e): e is [string, string] => e[1] !== undefined)).toString();
  return call("POST", "/oauth/token", {
    rawBody: body,
    headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": ip },
  });
}
const exchange = (code: string, verifier: string, extra: Record<string, string> = {}) =>
  tokenRequest({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, client_id: CLIENT, code_verifier: verifier, ...extra });

async function accessToken(principal: TestPrincipal, scope?: string): Promise<string> {
  const { code, verifier } = await codeFor(principal, scope);
  const res = await exchange(code, verifier);
  expect(res.status).toBe(200);
  return (await json(res)).access_token;
}

const claimsOf = (jwt: string) => JSON.parse(atob(jwt.split(".")[1]!.replaceAll("-", "+").replaceAll("_", "/"))) as Record<string, unknown>;

describe("OAuth metadata", () => {
  it("publishes RFC 8414 authorization server metadata", async () => {
    const res = await call("GET", "/.well-known/oauth-authorization-server");
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({
      issuer: ISSUER,
      authorization_endpoint: `${ISSUER}/oauth/authorize`,
      token_endpoint: `${ISSUER}/oauth/token`,
      registration_endpoint: `${ISSUER}/oauth/register`,
      revocation_endpoint: `${ISSUER}/oauth/revoke`,
      revocation_endpoint_auth_methods_supported: ["none"],
      response_types_supported: ["code"],
      grant_types_supported: ["authorization_code", "refresh_token"],
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["none"],
      scopes_supported: expect.arrayContaining(["contacts:read", "deals:write", "envelopes:send"]),
    });
  });

  it.each(["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"])(
    "publishes RFC 9728 protected resource metadata at %s",
    async (path) => {
      const res = await call("GET", path, { headers: { origin: "https://inspector.example" } });
      expect(res.status).toBe(200);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      expect(await json(res)).toMatchObject({
        resource: MCP,
        authorization_servers: [ISSUER],
        bearer_methods_supported: ["header"],
        scopes_supported: expect.arrayContaining(["contacts:write"]),
      });
    },
  );
});

describe("authorization with a bearer session", () => {
  it("redirects at once with a code and state; the code buys a one-hour JWT with the spec's metadata", async () => {
    const principal = await createPrincipal();
    const { verifier, challenge } = await pkce();
    const res = await call("GET", authorizeUrl(validParams(challenge)), { token: principal.token });
    expect(res.status).toBe(302);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const location = locationOf(res);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(location.searchParams.get("state")).toBe("st-123");
    expect(location.searchParams.get("iss")).toBe(ISSUER);
    const code = location.searchParams.get("code")!;
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const tokenRes = await exchange(code, verifier);
    expect(tokenRes.status).toBe(200);
    expect(tokenRes.headers.get("cache-control")).toBe("no-store");
    const body = await json(tokenRes);
    const org = await env.DB.prepare("SELECT name FROM organizations WHERE id = ?")
      .bind(principal.organizationId)
      .first<{ name: string }>();
    expect(body).toEqual({
      access_token: expect.any(String),
      token_type: "Bearer",
      expires_in: 3600,
      scope: expect.stringContaining("contacts:read"),
      mcp_server_url: MCP,
      user_id: principal.userId,
      organization_id: principal.organizationId,
      organization_name: org!.name,
      permissions: expect.arrayContaining([
        "contacts:read",
        "contacts:write",
        "deals:read",
        "deals:write",
        "documents:read",
        "envelopes:send",
      ]),
      refresh_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    const claims = claimsOf(body.access_token);
    expect(claims).toMatchObject({
      iss: ISSUER,
      aud: MCP,
      sub: principal.userId,
      org: principal.organizationId,
      client_id: CLIENT,
      jti: expect.any(String),
    });
    expect((claims.exp as number) - (claims.iat as number)).toBe(3600);

    const contacts = await call("GET", "/v1/contacts", { token: body.access_token });
    expect(contacts.status).toBe(200);
  });

  it("answers 401 on an unknown session instead of redirecting", async () => {
    const { challenge } = await pkce();
    const res = await call("GET", authorizeUrl(validParams(challenge)), { token: "sess_unknown" });
    expect(res.status).toBe(401);
    expect(res.headers.get("location")).toBeNull();
  });
});

describe("authorization in a browser", () => {
  it("signs in with a mailed code, shows the consent page, and approves with a code the client can exchange", async () => {
    const principal = await createPrincipal();
    const email = await emailOf(principal);
    const { verifier, challenge } = await pkce();
    const browser = new Browser(authorizeUrl(validParams(challenge, { scope: "contacts:read deals:read" })));

    const first = await browser.open();
    expect(first.res.status).toBe(200);
    expect(first.res.headers.get("content-type")).toContain("text/html");
    const csp = first.res.headers.get("content-security-policy")!;
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toMatch(/style-src 'nonce-[^']+'/);
    expect(first.res.headers.get("cache-control")).toBe("no-store");
    expect(first.res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(first.res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(first.res.headers.get("set-cookie")).toMatch(/^oauth_sign_in=osi_[\w-]+; Path=\/oauth; Max-Age=\d+; HttpOnly; SameSite=Lax$/);
    expect(browser.csrf).not.toBe("");

    const sent = await browser.post({ step: "email", email });
    expect(sent.res.status).toBe(200);
    expect(sent.html).toContain("Enter your code");
    const code = await mailedCode(email);
    const row = await env.DB.prepare("SELECT code_hash FROM oauth_sign_ins WHERE email = ?").bind(email).first<{ code_hash: string }>();
    expect(row!.code_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row!.code_hash).not.toContain(code);

    const cookieBefore = browser.cookie;
    const consent = await browser.post({ step: "code", code });
    expect(consent.res.status).toBe(200);
    expect(consent.html).toContain("Read contacts and their activities");
    expect(consent.html).toContain("Read deals, the pipeline and analytics");
    expect(consent.html).not.toContain("contacts:write");
    expect(browser.cookie).not.toBe(cookieBefore); // a new cookie once signed in
    expect(consent.res.headers.get("content-security-policy")).toContain("form-action 'self' http://127.0.0.1:4321");

    // Reloading the authorization address shows the consent page again, without signing in.
    expect((await browser.open()).html).toContain("Allow");

    const approved = await browser.post({ step: "consent", decision: "approve" });
    expect(approved.res.status).toBe(302);
    const location = locationOf(approved.res);
    expect(location.searchParams.get("state")).toBe("st-123");
    const tokenRes = await exchange(location.searchParams.get("code")!, verifier);
    expect(tokenRes.status).toBe(200);
    const body = await json(tokenRes);
    expect(body).toMatchObject({
      user_id: principal.userId,
      organization_id: principal.organizationId,
      permissions: ["contacts:read", "deals:read"],
      scope: "contacts:read deals:read",
    });
  });

  it("redirects with access_denied when the user denies", async () => {
    const principal = await createPrincipal();
    const email = await emailOf(principal);
    const { challenge } = await pkce();
    const browser = new Browser(authorizeUrl(validParams(challenge)));
    await browser.open();
    await browser.post({ step: "email", email });
    await browser.post({ step: "code", code: await mailedCode(email) });
    const denied = await browser.post({ step: "consent", decision: "deny" });
    expect(denied.res.status).toBe(302);
    const location = locationOf(denied.res);
    expect(location.searchParams.get("error")).toBe("access_denied");
    expect(location.searchParams.get("state")).toBe("st-123");
    expect(location.searchParams.get("code")).toBeNull();
  });

  it("answers an unknown e-mail with the same page and sends nothing", async () => {
    const principal = await createPrincipal();
    const known = await emailOf(principal);
    const unknown = `nobody-${crypto.randomUUID()}@example.test`;
    const { challenge } = await pkce();
    const a = new Browser(authorizeUrl(validParams(challenge)));
    const b = new Browser(authorizeUrl(validParams(challenge)));
    await a.open();
    await b.open();
    const forKnown = await a.post({ step: "email", email: known });
    const forUnknown = await b.post({ step: "email", email: unknown });
    const strip = (html: string) =>
      html
        .replaceAll(known, "EMAIL")
        .replaceAll(unknown, "EMAIL")
        .replace(/value="[^"]+"/g, "")
        .replace(/nonce="[^"]+"/g, "");
    expect(forUnknown.res.status).toBe(forKnown.res.status);
    expect(strip(forUnknown.html)).toBe(strip(forKnown.html));
    await mailedCode(known);
    expect(await mailTo(unknown)).toEqual([]);
    // Whatever is typed, an unknown address never signs in.
    const tried = await b.post({ step: "code", code: "000000" });
    expect(tried.html).toContain("not right");
  });

  it("refuses forms without this browser's CSRF token", async () => {
    const principal = await createPrincipal();
    const { challenge } = await pkce();
    const browser = new Browser(authorizeUrl(validParams(challenge)));
    await browser.open();
    const other = new Browser(browser.url);
    await other.open();
    for (const csrf of ["", "forged", other.csrf]) {
      const res = await browser.post({ step: "email", email: await emailOf(principal) }, csrf);
      expect(res.res.status).toBe(403);
    }
    expect(await mailTo(await emailOf(principal))).toEqual([]);
  });

  it("locks a code after five wrong attempts", async () => {
    const principal = await createPrincipal();
    const email = await emailOf(principal);
    const { challenge } = await pkce();
    const browser = new Browser(authorizeUrl(validParams(challenge)));
    await browser.open();
    await browser.post({ step: "email", email });
    const code = await mailedCode(email);
    const wrong = code === "111111" ? "222222" : "111111";
    for (let i = 4; i >= 1; i--) expect((await browser.post({ step: "code", code: wrong })).html).toContain(`${i} attempt`);
    expect((await browser.post({ step: "code", code: wrong })).html).toContain("expired or was tried too many times");
    const late = await browser.post({ step: "code", code });
    expect(late.html).not.toContain("Allow");
    expect(late.html).toContain("tried too many times");
  });
});

describe("authorization refusals", () => {
  it.each([
    ["an unknown client", { client_id: "no-such-client" }],
    ["a missing client", { client_id: undefined }],
    ["an unregistered redirect URI", { redirect_uri: "https://evil.example/callback" }],
    ["a redirect URI beyond its pattern", { redirect_uri: "http://127.0.0.1:4321/callback/more" }],
    ["a pattern's wildcard stretched over a host", { redirect_uri: "http://127.0.0.1.evil.example:80/callback" }],
    ["a missing redirect URI", { redirect_uri: undefined }],
  ])("shows an error page and never redirects for %s", async (_, extra) => {
    const { challenge } = await pkce();
    for (const token of [undefined, (await createPrincipal()).token]) {
      const res = await call("GET", authorizeUrl(validParams(challenge, extra)), { token });
      expect(res.status).toBe(400);
      expect(res.headers.get("location")).toBeNull();
      expect(res.headers.get("content-type")).toContain("text/html");
      expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    }
  });

  it.each([
    ["a missing code_challenge", { code_challenge: undefined }, "invalid_request"],
    ["a missing code_challenge_method", { code_challenge_method: undefined }, "invalid_request"],
    ["the plain method", { code_challenge_method: "plain" }, "invalid_request"],
    ["a malformed challenge", { code_challenge: "short" }, "invalid_request"],
    ["another response_type", { response_type: "token" }, "unsupported_response_type"],
    ["an unknown permission", { scope: "contacts:read everything" }, "invalid_scope"],
    ["another resource (RFC 8707)", { resource: "https://elsewhere.example/mcp" }, "invalid_target"],
  ])("redirects back with an error for %s", async (_, extra, error) => {
    const principal = await createPrincipal();
    const { challenge } = await pkce();
    const res = await call("GET", authorizeUrl(validParams(challenge, extra)), { token: principal.token });
    expect(res.status).toBe(302);
    const location = locationOf(res);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(location.searchParams.get("error")).toBe(error);
    expect(location.searchParams.get("error_description")).toEqual(expect.any(String));
    expect(location.searchParams.get("state")).toBe("st-123");
    expect(location.searchParams.get("code")).toBeNull();
  });
});

describe("registered clients and the open redirect (issue 29; RFC 9700 section 4.11.2)", () => {
  const registered = async (uri: string, name = "Some agent") =>
    (
      await json(
        await call("POST", "/oauth/register", {
          body: { redirect_uris: [uri], client_name: name },
          headers: { "cf-connecting-ip": freshIp() },
        }),
      )
    ).client_id as string;

  it("never sends an error to a registered client's address before a user approved it: our error page instead", async () => {
    const uri = "https://attacker.example/cb";
    const client_id = await registered(uri);
    // The issue's sequence: anyone registers, then links to our origin with a made-up response_type; no user involved.
    const bare = await call("GET", authorizeUrl({ client_id, redirect_uri: uri, response_type: "x" }));
    expect(bare.status).toBe(400);
    expect(bare.headers.get("location")).toBeNull();
    expect(bare.headers.get("content-type")).toContain("text/html");
    expect(await bare.text()).toContain("unsupported_response_type");
    // Every other error alike, with or without a bearer session, on the form's POST too.
    const { challenge } = await pkce();
    const session = (await createPrincipal()).token;
    for (const extra of [
      { code_challenge: undefined },
      { code_challenge_method: "plain" },
      { scope: "everything" },
      { resource: "https://elsewhere.example/mcp" },
      { response_type: "token" },
    ]) {
      const url = authorizeUrl(validParams(challenge, { client_id, redirect_uri: uri, ...extra }));
      for (const token of [undefined, session]) {
        const res = await call("GET", url, { token });
        expect(res.status, JSON.stringify(extra)).toBe(400);
        expect(res.headers.get("location")).toBeNull();
      }
      const form = await call("POST", url, {
        rawBody: "step=email&email=a%40b.test",
        headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": freshIp() },
      });
      expect(form.status).toBe(400);
      expect(form.headers.get("location")).toBeNull();
    }
  });

  it("still redirects a registered client once the user decided; the consent page says access lasts until revoked, not one hour", async () => {
    const uri = "https://agent.example/cb";
    const client_id = await registered(uri, "Careful agent");
    const principal = await createPrincipal();
    const email = await emailOf(principal);
    const { challenge } = await pkce();
    const browser = new Browser(authorizeUrl(validParams(challenge, { client_id, redirect_uri: uri })));
    await browser.open();
    await browser.post({ step: "email", email });
    const consent = await browser.post({ step: "code", code: await mailedCode(email) });
    expect(consent.html).toContain("Allow Careful agent?");
    // Refresh tokens renew access while the client uses it (refresh.ts): it ends when revoked, unused 30 days, or the user leaves.
    expect(consent.html).not.toContain("one hour");
    expect(consent.html).toContain("This access lasts until it is revoked, not for a set time");
    expect(consent.html).toContain("after 30 days in which the application does not use it, or when you leave the organization");
    const denied = await browser.post({ step: "consent", decision: "deny" });
    expect(denied.res.status).toBe(302);
    expect(`${locationOf(denied.res).origin}${locationOf(denied.res).pathname}`).toBe(uri);
    expect(locationOf(denied.res).searchParams.get("error")).toBe("access_denied");
  });
});

describe("token endpoint refusals", () => {
  it("refuses a wrong verifier, another redirect URI and another client with invalid_grant / invalid_client", async () => {
    const principal = await createPrincipal();
    const { code, verifier } = await codeFor(principal);
    const wrong = await exchange(code, (await pkce()).verifier);
    expect(wrong.status).toBe(400);
    expect(wrong.headers.get("cache-control")).toBe("no-store");
    expect(await json(wrong)).toEqual({ error: "invalid_grant", error_description: expect.stringContaining("code_verifier") });
    expect(await json(await exchange(code, verifier, { redirect_uri: "http://127.0.0.1:9999/callback" }))).toMatchObject({
      error: "invalid_grant",
    });
    const unknownClient = await exchange(code, verifier, { client_id: "nobody" });
    expect(unknownClient.status).toBe(401);
    expect(await json(unknownClient)).toMatchObject({ error: "invalid_client" });
    // None of those spent the code.
    expect((await exchange(code, verifier)).status).toBe(200);
  });

  it("takes the MCP server as resource indicator (RFC 8707) and refuses another", async () => {
    const principal = await createPrincipal();
    const { verifier, challenge } = await pkce();
    const res = await call("GET", authorizeUrl(validParams(challenge, { resource: MCP })), { token: principal.token });
    const code = locationOf(res).searchParams.get("code")!;
    const elsewhere = await exchange(code, verifier, { resource: "https://elsewhere.example/mcp" });
    expect(elsewhere.status).toBe(400);
    expect(await json(elsewhere)).toMatchObject({ error: "invalid_target" });
    const ok = await exchange(code, verifier, { resource: MCP });
    expect(ok.status).toBe(200);
  });

  it("refuses a reused code and revokes the token it issued", async () => {
    const principal = await createPrincipal();
    const { code, verifier } = await codeFor(principal);
    const first = await exchange(code, verifier);
    expect(first.status).toBe(200);
    const { access_token } = await json(first);
    expect((await call("GET", "/v1/contacts", { token: access_token })).status).toBe(200);
    const again = await exchange(code, verifier);
    expect(again.status).toBe(400);
    expect(await json(again)).toMatchObject({ error: "invalid_grant" });
    expect((await call("GET", "/v1/contacts", { token: access_token })).status).toBe(401);
  });

  it("gives one token for a code exchanged twice at once", async () => {
    const principal = await createPrincipal();
    const { code, verifier } = await codeFor(principal);
    const answers = await Promise.all([exchange(code, verifier), exchange(code, verifier)]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 400]);
  });

  it("refuses an expired code", async () => {
    const principal = await createPrincipal();
    const { code, verifier } = await codeFor(principal);
    await env.DB.prepare("UPDATE oauth_codes SET expires_at = ? WHERE used_at IS NULL AND user_id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), principal.userId)
      .run();
    const res = await exchange(code, verifier);
    expect(res.status).toBe(400);
    expect(await json(res)).toEqual({ error: "invalid_grant", error_description: expect.stringContaining("expired") });
  });

  it.each([
    ["no grant_type", { grant_type: undefined }, "invalid_request"],
    ["another grant_type", { grant_type: "client_credentials" }, "unsupported_grant_type"],
    ["no code", { code: undefined }, "invalid_request"],
    ["no code_verifier", { code_verifier: undefined }, "invalid_request"],
    ["an unknown code", { code: "nope" }, "invalid_grant"],
  ])("answers %s with %s", async (_, extra, error) => {
    const { verifier } = await pkce();
    const res = await tokenRequest({
      grant_type: "authorization_code",
      code: "abc",
      redirect_uri: REDIRECT,
      client_id: CLIENT,
      code_verifier: verifier,
      ...extra,
    });
    expect(res.status).toBe(400);
    expect(await json(res)).toEqual({ error, error_description: expect.any(String) });
  });

  it("refuses a JSON body with an RFC 6749 error, never cached", async () => {
    const res = await call("POST", "/oauth/token", {
      body: { grant_type: "authorization_code" },
      headers: { "cf-connecting-ip": freshIp() },
    });
    expect(res.status).toBe(415);
    expect(await json(res)).toEqual({ error: "invalid_request", error_description: expect.stringContaining("x-www-form-urlencoded") });
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("answers 503 without JWT_SECRET, and access tokens stop working", async () => {
    const principal = await createPrincipal();
    const { code, verifier } = await codeFor(principal);
    const body = new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      client_id: CLIENT,
      code_verifier: verifier,
    }).toString();
    const res = await call("POST", "/oauth/token", {
      rawBody: body,
      headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": freshIp() },
      vars: { JWT_SECRET: "" },
    });
    expect(res.status).toBe(503);
    expect(await json(res)).toEqual({ error: "temporarily_unavailable", error_description: expect.stringContaining("JWT_SECRET") });
    const issued = await accessToken(principal);
    expect((await call("GET", "/v1/contacts", { token: issued, vars: { JWT_SECRET: "" } })).status).toBe(401);
    const page = await call("GET", authorizeUrl(validParams((await pkce()).challenge)), { vars: { JWT_SECRET: "" } });
    expect(page.status).toBe(503);
  });
});

describe("refresh tokens (OAuth 2.1 section 4.3)", () => {
  const refresh = (refresh_token: string, extra: Record<string, string> = {}) =>
    tokenRequest({ grant_type: "refresh_token", refresh_token, client_id: CLIENT, ...extra });
  async function tokens(principal: TestPrincipal, scope?: string) {
    const { code, verifier } = await codeFor(principal, scope);
    const res = await exchange(code, verifier);
    expect(res.status).toBe(200);
    return (await json(res)) as { access_token: string; refresh_token: string; scope: string };
  }
  const contactsWith = async (token: string) => (await call("GET", "/v1/contacts", { token })).status;

  it("rotates on every use: a new access and refresh token with the same permissions, stored only as SHA-256", async () => {
    const principal = await createPrincipal();
    const first = await tokens(principal, "contacts:read deals:read");
    const res = await refresh(first.refresh_token);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const second = await json(res);
    expect(second).toMatchObject({
      token_type: "Bearer",
      expires_in: 3600,
      scope: "contacts:read deals:read",
      permissions: ["contacts:read", "deals:read"],
      user_id: principal.userId,
      organization_id: principal.organizationId,
      mcp_server_url: MCP,
    });
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(claimsOf(second.access_token)).toMatchObject({ sub: principal.userId, client_id: CLIENT, scope: "contacts:read deals:read" });
    expect(await contactsWith(second.access_token)).toBe(200);
    expect(await contactsWith(first.access_token)).toBe(200);
    // Only hashes are stored.
    const stored = await env.DB.prepare("SELECT token_hash FROM oauth_refresh_tokens WHERE user_id = ?")
      .bind(principal.userId)
      .all<{ token_hash: string }>();
    expect(stored.results).toHaveLength(2);
    expect(stored.results.map((r) => r.token_hash)).not.toContain(second.refresh_token);
    expect(stored.results.every((r) => /^[0-9a-f]{64}$/.test(r.token_hash))).toBe(true);
    // The new one rotates in turn.
    expect((await refresh(second.refresh_token)).status).toBe(200);
  });

  it("narrows the access token with scope, never widens it, and the family keeps its full grant", async () => {
    const principal = await createPrincipal();
    const first = await tokens(principal, "contacts:read deals:read");
    const wider = await refresh(first.refresh_token, { scope: "contacts:read contacts:write" });
    expect(wider.status).toBe(400);
    expect(await json(wider)).toEqual({ error: "invalid_scope", error_description: expect.any(String) });
    const narrow = await json(await refresh(first.refresh_token, { scope: "deals:read" }));
    expect(narrow.permissions).toEqual(["deals:read"]);
    expect(await contactsWith(narrow.access_token)).toBe(403);
    const full = await json(await refresh(narrow.refresh_token));
    expect(full.permissions).toEqual(["contacts:read", "deals:read"]);
  });

  it("refuses another client's refresh token, an unknown one, an expired one and a missing one", async () => {
    const principal = await createPrincipal();
    const first = await tokens(principal);
    const { client_id } = await json(
      await call("POST", "/oauth/register", {
        body: { redirect_uris: ["http://127.0.0.1/cb"] },
        headers: { "cf-connecting-ip": freshIp() },
      }),
    );
    const other = await refresh(first.refresh_token, { client_id });
    expect(other.status).toBe(400);
    expect(await json(other)).toMatchObject({ error: "invalid_grant" });
    expect(await json(await refresh("not-a-token"))).toMatchObject({ error: "invalid_grant" });
    expect(await json(await tokenRequest({ grant_type: "refresh_token", client_id: CLIENT }))).toMatchObject({ error: "invalid_request" });
    expect(await json(await tokenRequest({ grant_type: "refresh_token", refresh_token: first.refresh_token }))).toMatchObject({
      error: "invalid_request",
    });
    const unknownClient = await refresh(first.refresh_token, { client_id: "nobody" });
    expect(unknownClient.status).toBe(401);
    // None of those spent it.
    expect((await refresh(first.refresh_token)).status).toBe(200);
    const later = await tokens(principal);
    await env.DB.prepare("UPDATE oauth_refresh_tokens SET expires_at = ? WHERE used_at IS NULL AND user_id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), principal.userId)
      .run();
    expect(await json(await refresh(later.refresh_token))).toEqual({
      error: "invalid_grant",
      error_description: expect.stringContaining("expired"),
    });
  });

  it("revokes the whole family when a used refresh token comes back: every access token from it answers 401", async () => {
    const principal = await createPrincipal();
    const first = await tokens(principal);
    const second = await json(await refresh(first.refresh_token));
    const third = await json(await refresh(second.refresh_token));
    const unrelated = await tokens(principal);
    for (const t of [first, second, third]) expect(await contactsWith(t.access_token)).toBe(200);

    const replay = await refresh(first.refresh_token);
    expect(replay.status).toBe(400);
    expect(await json(replay)).toEqual({ error: "invalid_grant", error_description: expect.stringContaining("revoked") });
    for (const t of [first, second, third]) expect(await contactsWith(t.access_token)).toBe(401);
    // The family's live refresh token is dead too; another family of the same user is untouched.
    expect(await json(await refresh(third.refresh_token))).toMatchObject({ error: "invalid_grant" });
    expect(await contactsWith(unrelated.access_token)).toBe(200);
    expect((await refresh(unrelated.refresh_token)).status).toBe(200);
  });

  it("revokes the family a reused authorization code started, refreshed tokens included", async () => {
    const principal = await createPrincipal();
    const { code, verifier } = await codeFor(principal);
    const first = await json(await exchange(code, verifier));
    const refreshed = await json(await refresh(first.refresh_token));
    expect((await exchange(code, verifier)).status).toBe(400);
    expect(await contactsWith(refreshed.access_token)).toBe(401);
    expect(await json(await refresh(refreshed.refresh_token))).toMatchObject({ error: "invalid_grant" });
  });

  it("answers a refresh retried after its answer was lost with a new pair; the lost token dies, and presenting it then revokes the family", async () => {
    const principal = await createPrincipal();
    const first = await tokens(principal);
    // The answer carrying `lost` never reached the client; it asks again with the same token.
    const lost = await json(await refresh(first.refresh_token));
    const retried = await refresh(first.refresh_token);
    expect(retried.status).toBe(200);
    const second = await json(retried);
    expect(second.refresh_token).not.toBe(lost.refresh_token);
    expect(await contactsWith(second.access_token)).toBe(200);
    // A retry of the retry is one too; the newest pair works and rotates on.
    const third = await json(await refresh(first.refresh_token));
    expect(await contactsWith(third.access_token)).toBe(200);
    const fourth = await json(await refresh(third.refresh_token));
    expect(await contactsWith(fourth.access_token)).toBe(200);
    // Now the replacement of `first` has been used: `first` is an old token, and so is every replaced one.
    const old = await refresh(first.refresh_token);
    expect(old.status).toBe(400);
    expect(await json(old)).toEqual({ error: "invalid_grant", error_description: expect.stringContaining("revoked") });
    for (const t of [second, third, fourth]) expect(await contactsWith(t.access_token)).toBe(401);
    expect(await json(await refresh(fourth.refresh_token))).toMatchObject({ error: "invalid_grant" });
  });

  it("a lost token presented after its retry (the holder that never got it: a thief) revokes the family", async () => {
    const principal = await createPrincipal();
    const first = await tokens(principal);
    const lost = await json(await refresh(first.refresh_token));
    const retried = await json(await refresh(first.refresh_token));
    const replay = await refresh(lost.refresh_token);
    expect(replay.status).toBe(400);
    expect(await contactsWith(retried.access_token)).toBe(401);
    expect(await json(await refresh(retried.refresh_token))).toMatchObject({ error: "invalid_grant" });
  });

  it("concurrent uses of one refresh token leave one live token, or none when one lost the race (a reuse revokes the family)", async () => {
    const principal = await createPrincipal();
    const first = await tokens(principal);
    const answers = await Promise.all([refresh(first.refresh_token), refresh(first.refresh_token), refresh(first.refresh_token)]);
    const statuses = answers.map((r) => r.status);
    // One that read the token unused wins its guard; one that read it after that commit is a retry; one whose guard
    // lost is a reuse.
    expect(statuses).toContain(200);
    expect(statuses.every((s) => s === 200 || s === 400)).toBe(true);
    const live = await env.DB.prepare(
      "SELECT COUNT(*) AS n FROM oauth_refresh_tokens WHERE user_id = ? AND used_at IS NULL AND revoked_at IS NULL",
    )
      .bind(principal.userId)
      .first<number>("n");
    const winners = await Promise.all(answers.filter((r) => r.status === 200).map((r) => json(r)));
    if (statuses.includes(400)) {
      expect(live).toBe(0);
      for (const w of winners) expect(await contactsWith(w.access_token)).toBe(401);
    } else {
      expect(live).toBe(1);
    }
  });

  it("stops refreshing once the user left the organization", async () => {
    const principal = await createPrincipal();
    const first = await tokens(principal);
    const elsewhere = await createPrincipal();
    await env.DB.prepare("UPDATE users SET organization_id = ? WHERE id = ?").bind(elsewhere.organizationId, principal.userId).run();
    expect(await json(await refresh(first.refresh_token))).toMatchObject({ error: "invalid_grant" });
  });
});

describe("token revocation (RFC 7009)", () => {
  const revoke = (form: Record<string, string | undefined>) => {
    const body = new URLSearchParams(Object.entries(form).filter((e): e is [string, string] => e[1] !== undefined)).toString();
    return call("POST", "/oauth/revoke", {
      rawBody: body,
      headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": freshIp() },
    });
  };
  const refresh = (refresh_token: string) => tokenRequest({ grant_type: "refresh_token", refresh_token, client_id: CLIENT });
  async function tokens(principal: TestPrincipal) {
    const { code, verifier } = await codeFor(principal);
    return (await json(await exchange(code, verifier))) as { access_token: string; refresh_token: string };
  }
  const contactsWith = async (token: string) => (await call("GET", "/v1/contacts", { token })).status;

  it("revokes a refresh token's family: its access tokens answer 401 and it refreshes no more", async () => {
    const principal = await createPrincipal();
    const first = await tokens(principal);
    const second = await json(await refresh(first.refresh_token));
    const other = await tokens(principal);
    const res = await revoke({ token: second.refresh_token, token_type_hint: "refresh_token", client_id: CLIENT });
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await contactsWith(first.access_token)).toBe(401);
    expect(await contactsWith(second.access_token)).toBe(401);
    expect(await json(await refresh(second.refresh_token))).toMatchObject({ error: "invalid_grant" });
    expect(await contactsWith(other.access_token)).toBe(200);
  });

  it("revokes an access token alone, whatever the hint says; its refresh token still works", async () => {
    const principal = await createPrincipal();
    const first = await tokens(principal);
    expect(await contactsWith(first.access_token)).toBe(200);
    expect((await revoke({ token: first.access_token, token_type_hint: "refresh_token", client_id: CLIENT })).status).toBe(200);
    expect(await contactsWith(first.access_token)).toBe(401);
    const next = await refresh(first.refresh_token);
    expect(next.status).toBe(200);
    expect(await contactsWith((await json(next)).access_token)).toBe(200);
  });

  it("answers 200 for unknown, malformed, already revoked and another client's tokens, revoking nothing of others", async () => {
    const principal = await createPrincipal();
    const mine = await tokens(principal);
    const { client_id } = await json(
      await call("POST", "/oauth/register", {
        body: { redirect_uris: ["http://127.0.0.1/cb"] },
        headers: { "cf-connecting-ip": freshIp() },
      }),
    );
    for (const token of ["unknown-token", "a.b.c", mine.access_token, mine.refresh_token]) {
      const res = await revoke({ token, client_id });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("");
    }
    expect(await contactsWith(mine.access_token)).toBe(200);
    expect((await refresh(mine.refresh_token)).status).toBe(200);
    expect((await revoke({ token: mine.access_token, client_id: CLIENT })).status).toBe(200);
    expect((await revoke({ token: mine.access_token, client_id: CLIENT })).status).toBe(200);
    const forged = await sign(
      { iss: ISSUER, aud: MCP, sub: principal.userId, jti: "x", exp: Math.floor(Date.now() / 1000) + 60 },
      "another-secret",
      "HS256",
    );
    expect((await revoke({ token: forged, client_id: CLIENT })).status).toBe(200);
  });

  it.each([
    ["no token", { client_id: CLIENT }, 400, "invalid_request"],
    ["no client_id", { token: "x" }, 400, "invalid_request"],
    ["an unknown client", { token: "x", client_id: "nobody" }, 401, "invalid_client"],
  ])("refuses %s", async (_, form, status, error) => {
    const res = await revoke(form);
    expect(res.status).toBe(status);
    expect(await json(res)).toEqual({ error, error_description: expect.any(String) });
  });
});

describe("access tokens on the API", () => {
  it("refuses an expired token, a token signed with another key and one for another audience", async () => {
    const principal = await createPrincipal();
    const good = claimsOf(await accessToken(principal));
    const now = Math.floor(Date.now() / 1000);
    const expired = await sign({ ...good, iat: now - 7200, exp: now - 3600 }, env.JWT_SECRET!, "HS256");
    const forged = await sign(good, "another-secret-of-enough-length", "HS256");
    const elsewhere = await sign({ ...good, aud: "https://other.example/mcp" }, env.JWT_SECRET!, "HS256");
    for (const token of [expired, forged, elsewhere]) {
      const res = await call("GET", "/v1/contacts", { token });
      expect(res.status).toBe(401);
    }
    expect((await call("GET", "/v1/contacts", { token: await sign(good, env.JWT_SECRET!, "HS256") })).status).toBe(200);
  });

  it("enforces the granted permissions: contacts:read reads contacts and nothing else", async () => {
    const principal = await createPrincipal();
    const token = await accessToken(principal, "contacts:read");
    expect((await call("GET", "/v1/contacts", { token })).status).toBe(200);
    // Checked against /openapi.json: every authenticated /v1 route declares the 403.
    const raw = (method: string, path: string, body?: unknown) => call(method, path, { token, body });
    const write = await raw("POST", "/v1/contacts", {
      firstName: "Ada",
      lastName: "Lovelace",
      email: `ada-${crypto.randomUUID()}@example.test`,
    });
    expect(write.status).toBe(403);
    expect(await json(write)).toMatchObject({
      success: false,
      error: { type: "permission_error", code: "insufficient_permission", status: 403 },
    });
    expect((await raw("GET", "/v1/deals")).status).toBe(403);
    expect((await raw("POST", "/v1/webhooks", {})).status).toBe(403);
    expect(
      await (await tenantDb(principal.organizationId))
        .prepare("SELECT COUNT(*) AS n FROM contacts WHERE organization_id = ?")
        .bind(principal.organizationId)
        .first("n"),
    ).toBe(0);
    // A session may do everything.
    expect((await call("GET", "/v1/deals", { token: principal.token })).status).toBe(200);
  });

  it("erasure needs contacts:erase, which only a client that asks for it by name is granted; the trash list needs each kind's read", async () => {
    const principal = await createPrincipal();
    const contact = (
      await json(
        await call("POST", "/v1/contacts", {
          token: principal.token,
          body: { firstName: "Era", lastName: "Sure", email: `era-${crypto.randomUUID()}@example.test` },
        }),
      )
    ).data;
    const everyDefault = await accessToken(principal);
    const refused = await call("DELETE", `/v1/contacts/${contact.id}?erase=true`, { token: everyDefault });
    expect(refused.status).toBe(403);
    expect(await json(refused)).toMatchObject({
      error: { code: "insufficient_permission", detail: expect.stringContaining("contacts:erase") },
    });
    expect((await call("GET", `/v1/contacts/${contact.id}`, { token: everyDefault })).status).toBe(200);
    const eraser = await accessToken(principal, "contacts:write contacts:erase");
    expect((await call("DELETE", `/v1/contacts/${contact.id}?erase=true`, { token: eraser })).status).toBe(200);
    expect((await call("GET", `/v1/contacts/${contact.id}`, { token: principal.token })).status).toBe(404);

    const dealsOnly = await accessToken(principal, "deals:read");
    expect((await call("GET", "/v1/trash?kind=deal", { token: dealsOnly })).status).toBe(200);
    expect((await call("GET", "/v1/trash", { token: dealsOnly })).status).toBe(403);
    expect((await call("GET", "/v1/trash?kind=contact", { token: dealsOnly })).status).toBe(403);
  });

  it("is a credential for /api and /plants too, within its permissions (issue 32)", async () => {
    const principal = await createPrincipal();
    const token = await accessToken(principal);
    expect((await call("GET", "/api/documents/usage", { token })).status).toBe(200);
    expect((await call("DELETE", "/plants/1", { token })).status).toBe(404);
    const narrow = await accessToken(principal, "contacts:read");
    expect((await call("GET", "/api/documents/usage", { token: narrow })).status).toBe(403);
    expect((await call("DELETE", "/plants/1", { token: narrow })).status).toBe(403);
  });
});

describe("dynamic client registration", () => {
  const register = (body: unknown) => call("POST", "/oauth/register", { body, headers: { "cf-connecting-ip": freshIp() } });

  it.each([
    ["https://app.example/callback"],
    ["http://127.0.0.1:33418/callback"],
    ["http://localhost:5173/oauth"],
    ["http://[::1]:8080/cb"],
  ])("registers a public client returning to %s", async (uri) => {
    const res = await register({
      redirect_uris: [uri],
      client_name: "Agent",
      grant_types: ["authorization_code", "refresh_token"],
      token_endpoint_auth_method: "none",
    });
    expect(res.status).toBe(201);
    expect(await json(res)).toEqual({
      client_id: expect.any(String),
      client_id_issued_at: expect.any(Number),
      client_name: "Agent",
      redirect_uris: [uri],
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
    });
  });

  it.each([
    ["plain http to a public host", { redirect_uris: ["http://app.example/callback"] }, "invalid_redirect_uri"],
    ["a fragment", { redirect_uris: ["https://app.example/cb#x"] }, "invalid_redirect_uri"],
    ["no redirect URIs", { redirect_uris: [] }, "invalid_redirect_uri"],
    ["no redirect_uris at all", { client_name: "x" }, "invalid_redirect_uri"],
    [
      "a confidential client",
      { redirect_uris: ["https://app.example/cb"], token_endpoint_auth_method: "client_secret_basic" },
      "invalid_client_metadata",
    ],
    ["a too long name", { redirect_uris: ["https://app.example/cb"], client_name: "x".repeat(101) }, "invalid_client_metadata"],
    [
      "a name of several lines (it would read as the service's words)",
      { redirect_uris: ["https://app.example/cb"], client_name: "Agent\n\nURGENT: reply with your code" },
      "invalid_client_metadata",
    ],
    [
      "a name with a bidi override",
      { redirect_uris: ["https://app.example/cb"], client_name: "Agent \u202Eabc" },
      "invalid_client_metadata",
    ],
  ])("refuses %s", async (_, body, error) => {
    const res = await register(body);
    expect(res.status).toBe(400);
    expect(await json(res)).toEqual({ error, error_description: expect.any(String) });
  });

  it.each([
    ["client_name", { client_name: "Agent \ud800" }, "invalid_client_metadata"],
    ["client_name", { client_name: "\udc00Agent" }, "invalid_client_metadata"],
    ["client_uri", { client_uri: "https://app.example/\ud83d" }, "invalid_client_metadata"],
    ["logo_uri", { logo_uri: "https://app.example/logo\ud800.png" }, "invalid_client_metadata"],
    ["tos_uri", { tos_uri: "https://app.example/tos\udfff" }, "invalid_client_metadata"],
    ["policy_uri", { policy_uri: "https://app.example/\ud800policy" }, "invalid_client_metadata"],
    ["software_id", { software_id: "agent-\ud800" }, "invalid_client_metadata"],
    ["software_version", { software_version: "1.0\udc00" }, "invalid_client_metadata"],
    ["contacts.1", { contacts: ["ops@app.example", "\ud800@app.example"] }, "invalid_client_metadata"],
    ["scope", { scope: "contacts:read \ud800" }, "invalid_client_metadata"],
    ["x_\ufffd", { "x_\ud800": "y" }, "invalid_client_metadata"],
    // RFC 7591 section 3.2.2: a bad redirection URI has its own error code.
    ["redirect_uris.0", { redirect_uris: ["https://app.example/cb\ud800"] }, "invalid_redirect_uri"],
  ])("refuses a lone UTF-16 surrogate in %s, registering nothing", async (field, metadata, error) => {
    const clients = () => env.DB.prepare("SELECT COUNT(*) AS n FROM oauth_clients").first<number>("n");
    const before = await clients();
    const res = await register({ redirect_uris: ["https://app.example/cb"], client_name: "Agent", ...metadata });
    expect(res.status).toBe(400);
    const body = await json(res);
    expect(body).toEqual({
      error,
      error_description: `${field}: ${field.startsWith("x_") ? "Field names must be well-formed Unicode text" : "Must be well-formed Unicode text (a lone UTF-16 surrogate is not a character)"}`,
    });
    expect(body.error_description.isWellFormed()).toBe(true);
    expect(await clients()).toBe(before);
  });

  it("lets a registered client authorize with its exact redirect URI only", async () => {
    const uri = "http://127.0.0.1:33418/callback";
    const { client_id } = await json(await register({ redirect_uris: [uri], client_name: "Registered agent" }));
    const principal = await createPrincipal();
    const { verifier, challenge } = await pkce();
    const other = await call("GET", authorizeUrl(validParams(challenge, { client_id, redirect_uri: "http://127.0.0.1:33418/other" })), {
      token: principal.token,
    });
    expect(other.status).toBe(400);
    const page = await call("GET", authorizeUrl(validParams(challenge, { client_id, redirect_uri: uri })));
    expect(await page.text()).toContain("Registered agent");
    const res = await call("GET", authorizeUrl(validParams(challenge, { client_id, redirect_uri: uri })), { token: principal.token });
    expect(res.status).toBe(302);
    const code = locationOf(res).searchParams.get("code")!;
    const tokenRes = await tokenRequest({ grant_type: "authorization_code", code, redirect_uri: uri, client_id, code_verifier: verifier });
    expect(tokenRes.status).toBe(200);
    expect(claimsOf((await json(tokenRes)).access_token).client_id).toBe(client_id);
  });
});

describe("loopback redirect URIs (RFC 8252 section 7.3)", () => {
  const register = async (uris: string[]) =>
    (await json(await call("POST", "/oauth/register", { body: { redirect_uris: uris }, headers: { "cf-connecting-ip": freshIp() } })))
      .client_id as string;
  const authorizeWith = async (client_id: string, redirect_uri: string) => {
    const principal = await createPrincipal();
    const { verifier, challenge } = await pkce();
    const res = await call("GET", authorizeUrl(validParams(challenge, { client_id, redirect_uri })), { token: principal.token });
    return { res, verifier };
  };

  it.each([
    ["a portless 127.0.0.1 registration", "http://127.0.0.1/callback", "http://127.0.0.1:49152/callback"],
    ["a portless [::1] registration", "http://[::1]/callback", "http://[::1]:50123/callback"],
    ["a portless localhost registration", "http://localhost/cb?x=1", "http://localhost:7777/cb?x=1"],
    ["another port than registered", "http://127.0.0.1:33418/callback", "http://127.0.0.1:61000/callback"],
    ["no port when one was registered", "http://[::1]:8080/cb", "http://[::1]/cb"],
  ])("admits any port for %s, and the code is exchanged with that exact URI", async (_, registered, used) => {
    const client_id = await register([registered]);
    const { res, verifier } = await authorizeWith(client_id, used);
    expect(res.status).toBe(302);
    expect(res.headers.get("location")!.startsWith(used.split("?")[0]!)).toBe(true);
    const code = locationOf(res).searchParams.get("code")!;
    expect(
      (await tokenRequest({ grant_type: "authorization_code", code, redirect_uri: registered, client_id, code_verifier: verifier })).status,
    ).toBe(400);
    // The code is bound to the URI it was sent to, port included (the mismatch above did not spend it).
    expect(
      (await tokenRequest({ grant_type: "authorization_code", code, redirect_uri: used, client_id, code_verifier: verifier })).status,
    ).toBe(200);
  });

  it.each([
    ["another path on loopback", "http://127.0.0.1/callback", "http://127.0.0.1:4000/callback2"],
    ["a longer path on loopback", "http://127.0.0.1/callback", "http://127.0.0.1:4000/callback/x"],
    ["another query on loopback", "http://localhost/cb?x=1", "http://localhost:4000/cb?x=2"],
    ["https instead of http on loopback", "http://127.0.0.1/callback", "https://127.0.0.1:4000/callback"],
    ["another loopback host", "http://127.0.0.1/callback", "http://[::1]:4000/callback"],
    ["localhost for an IP registration", "http://127.0.0.1/callback", "http://localhost:4000/callback"],
    ["a host that only starts like loopback", "http://127.0.0.1/callback", "http://127.0.0.1.evil.example:4000/callback"],
    ["a non-loopback host on another port", "https://app.example/callback", "https://app.example:8443/callback"],
    ["a non-loopback host with its port dropped", "https://app.example:8443/callback", "https://app.example/callback"],
  ])("refuses %s with the error page", async (_, registered, used) => {
    const client_id = await register([registered]);
    const { res } = await authorizeWith(client_id, used);
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
  });

  it("applies to static clients too: mcp-dev's loopback pattern takes any port, never another path", async () => {
    const principal = await createPrincipal();
    const { challenge } = await pkce();
    const ok = await call("GET", authorizeUrl(validParams(challenge, { redirect_uri: "http://127.0.0.1/callback" })), {
      token: principal.token,
    });
    expect(ok.status).toBe(302);
    const bad = await call("GET", authorizeUrl(validParams(challenge, { redirect_uri: "http://127.0.0.1:5000/callbackx" })), {
      token: principal.token,
    });
    expect(bad.status).toBe(400);
  });
});

describe("housekeeping", () => {
  it("the cron deletes spent codes, grants and sign-ins, keeping a code as long as a token it issued lives", async () => {
    const principal = await createPrincipal();
    await accessToken(principal);
    const counts = async () => {
      const n = (sql: string) => env.DB.prepare(sql).first<number>("n");
      return { codes: await n("SELECT COUNT(*) AS n FROM oauth_codes"), grants: await n("SELECT COUNT(*) AS n FROM oauth_grants") };
    };
    const before = await counts();
    expect(before.codes).toBeGreaterThan(0);
    expect(before.grants).toBeGreaterThan(0);
    await pruneOAuth(createDb(env.DB), { now: Date.now() + 30 * 60_000 });
    expect(await counts()).toEqual(before);
    await pruneOAuth(createDb(env.DB), { now: Date.now() + 2 * 3_600_000 });
    expect(await counts()).toEqual({ codes: 0, grants: 0 });
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM oauth_sign_ins").first<number>("n")).toBe(0);
  });

  it("the cron deletes registered clients unused for 90 days; issuing a code keeps one", async () => {
    const uri = "http://127.0.0.1:33420/callback";
    const register = async () =>
      (await json(await call("POST", "/oauth/register", { body: { redirect_uris: [uri] }, headers: { "cf-connecting-ip": freshIp() } })))
        .client_id as string;
    const [used, idle] = [await register(), await register()];
    const longAgo = new Date(Date.now() - 100 * 86_400_000).toISOString();
    await env.DB.prepare("UPDATE oauth_clients SET created_at = ?, last_used_at = ? WHERE id IN (?, ?)")
      .bind(longAgo, longAgo, used, idle)
      .run();
    const principal = await createPrincipal();
    const { challenge } = await pkce();
    expect(
      (await call("GET", authorizeUrl(validParams(challenge, { client_id: used, redirect_uri: uri })), { token: principal.token })).status,
    ).toBe(302);
    await pruneOAuth(createDb(env.DB));
    const left = await env.DB.prepare("SELECT id FROM oauth_clients WHERE id IN (?, ?)").bind(used, idle).all<{ id: string }>();
    expect(left.results.map((r) => r.id)).toEqual([used]);
  });
});

describe("found by an adversarial pass", () => {
  it("counts sign-in codes per e-mail address across browsers and client addresses: new codes buy no new guesses, and mails are capped", async () => {
    const principal = await createPrincipal();
    const email = await emailOf(principal);
    const { challenge } = await pkce();
    let guesses = 0;
    // Three browsers (three cookies, three client addresses), each with a fresh code, guessing wrong.
    for (let b = 0; b < 3; b++) {
      const browser = new Browser(authorizeUrl(validParams(challenge)));
      await browser.open();
      await browser.post({ step: "email", email });
      const code = await mailedCode(email);
      const wrong = code === "111111" ? "222222" : "111111";
      for (let i = 0; i < 4; i++) {
        const page = await browser.post({ step: "code", code: wrong });
        if (page.html.includes("Too many codes were tried")) break;
        guesses++;
      }
    }
    expect(guesses).toBe(10);
    // Even the right code is not checked any more for this address, from a new browser.
    const last = new Browser(authorizeUrl(validParams(challenge)));
    await last.open();
    await last.post({ step: "email", email });
    const page = await last.post({ step: "code", code: await mailedCode(email) });
    expect(page.html).toContain("Too many codes were tried");
    expect(page.html).not.toContain("Allow");
    // Five codes may be mailed in 15 minutes (four so far): the sixth request is refused without a mail.
    const more = new Browser(authorizeUrl(validParams(challenge)));
    await more.open();
    expect((await more.post({ step: "email", email })).html).not.toContain("Too many codes were asked");
    await vi.waitFor(async () => expect(await mailTo(email)).toHaveLength(5), { timeout: 5000, interval: 50 });
    expect((await more.post({ step: "email", email })).html).toContain("Too many codes were asked");
    expect(await mailTo(email)).toHaveLength(5);
    // The sign-in mail names no client: a registered client chooses its own name.
    expect((await mailTo(email))[0]!.text).not.toContain(CLIENT);
  });

  it("refuses embeds the token could not read by itself", async () => {
    const principal = await createPrincipal();
    const token = await accessToken(principal, "contacts:read");
    expect((await call("GET", "/v1/contacts?include=activities", { token })).status).toBe(200);
    const embedded = await call("GET", "/v1/contacts?include=deals", { token });
    expect(embedded.status).toBe(403);
    expect(await json(embedded)).toMatchObject({ error: { code: "insufficient_permission" } });
    const deals = await accessToken(principal, "deals:read");
    expect((await call("GET", "/v1/deals?include=contact", { token: deals })).status).toBe(403);
    expect((await call("GET", "/v1/deals?include=documents", { token: deals })).status).toBe(200);
    const both = await accessToken(principal, "deals:read contacts:read");
    expect((await call("GET", "/v1/deals?include=contact", { token: both })).status).toBe(200);
  });

  it("answers an over-long authorization parameter with the error page, not JSON", async () => {
    const res = await call("GET", authorizeUrl(validParams("A".repeat(129))));
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("location")).toBeNull();
  });

  it("refuses a token whose grant expired, whatever exp it claims", async () => {
    const principal = await createPrincipal();
    const token = await accessToken(principal);
    expect((await call("GET", "/v1/contacts", { token })).status).toBe(200);
    await env.DB.prepare("UPDATE oauth_grants SET expires_at = ? WHERE id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), claimsOf(token).jti)
      .run();
    expect((await call("GET", "/v1/contacts", { token })).status).toBe(401);
  });
});
