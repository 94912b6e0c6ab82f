import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { cacheSecondsOf, MAX_CACHE_SECONDS } from "../../src/oauth/client-documents";
import type { DnsResolver } from "../../src/lib/dns";
import { json } from "../helpers/client";
import { createPrincipal, type TestPrincipal } from "../helpers/factories";
import {
  authorizeUrl,
  Browser,
  type Call,
  call,
  callOn,
  emailOf,
  freshIp,
  locationOf,
  mailedCode,
  pkce,
  postForm,
  validParams,
} from "../helpers/oauth";
import { type ClientDocumentOptions, openClientDocument } from "../helpers/receiver";
import { testApp } from "../helpers/test-app";

// Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; MCP authorization 2025-11-25): a client_id
// that is the URL of a JSON document the client publishes. The documents are served by the test receiver on 127.0.0.1,
// which the test configuration (like development) accepts; production's refusals run on an app configured as production.

const REDIRECT = "http://127.0.0.1/callback";
const CALLBACK = "http://127.0.0.1:45123/callback";

/** A valid document for a public client, naming its own address; `extra` adds or replaces fields. */
const documentBody = (extra: Record<string, unknown> = {}) => ({
  client_id: "{self}",
  client_name: "Doc Agent",
  client_uri: "https://agent.example",
  redirect_uris: [REDIRECT, "https://agent.example/callback"],
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
  token_endpoint_auth_method: "none",
  ...extra,
});
const CACHED = { "cache-control": "max-age=600" };
const publish = (opts: Partial<ClientDocumentOptions> = {}) => openClientDocument({ body: documentBody(), headers: CACHED, ...opts });

const paramsFor = (clientId: string, challenge: string, extra: Record<string, string | undefined> = {}) =>
  validParams(challenge, { client_id: clientId, redirect_uri: CALLBACK, ...extra });

/** The bearer-session shortcut: a code at once, for the session's user. */
async function codeFor(principal: TestPrincipal, clientId: string, send: Call = call, scope?: string) {
  const { verifier, challenge } = await pkce();
  const res = await send("GET", authorizeUrl(paramsFor(clientId, challenge, { scope })), { token: principal.token });
  expect(res.status, await res.clone().text()).toBe(302);
  return { code: locationOf(res).searchParams.get("code")!, verifier };
}

const exchange = (clientId: string, code: string, verifier: string, send: Call = call) =>
  postForm(
    "/oauth/token",
    { grant_type: "authorization_code", code, redirect_uri: CALLBACK, client_id: clientId, code_verifier: verifier },
    send,
  );

/** The error page: 400, HTML, no redirect anywhere, with the page's text. */
async function refusedPage(res: Response): Promise<string> {
  expect(res.status).toBe(400);
  expect(res.headers.get("location")).toBeNull();
  expect(res.headers.get("content-type")).toContain("text/html");
  return (await res.text()).replaceAll("&quot;", '"').replaceAll("&#39;", "'");
}

/** A browser that signed in as `principal` and stands on the consent page of `url`. */
async function atConsent(principal: TestPrincipal, url: string, send: Call = call) {
  const email = await emailOf(principal);
  const browser = new Browser(url, send);
  await browser.open();
  await browser.post({ step: "email", email });
  const consent = await browser.post({ step: "code", code: await mailedCode(email) });
  expect(consent.res.status).toBe(200);
  return { browser, html: consent.html };
}

describe("Client ID Metadata Documents", () => {
  it("are advertised in the authorization server metadata", async () => {
    expect(await json(await call("GET", "/.well-known/oauth-authorization-server"))).toMatchObject({
      client_id_metadata_document_supported: true,
      registration_endpoint: expect.any(String),
    });
  });

  it("let a client sign a user in with no registration: consent names the client, its document and where the code goes; tokens, refresh and revocation work; the document is read once while cached", async () => {
    const doc = await publish({ body: documentBody({ client_name: 'Doc <Agent> & "Co"' }) });
    const principal = await createPrincipal();
    const { verifier, challenge } = await pkce();
    const { browser, html } = await atConsent(principal, authorizeUrl(paramsFor(doc.url, challenge, { scope: "contacts:read" })));
    // The name is the document's own, escaped; the page says where it comes from and where the answer goes.
    expect(html).toContain("Allow Doc &lt;Agent&gt; &amp; &quot;Co&quot;?");
    expect(html).not.toContain("<Agent>");
    expect(html).toContain(`identified by the document at <code>${doc.url}</code>`);
    expect(html).toContain("You will be returned to <code>http://127.0.0.1:45123</code>");
    expect(html).toContain("Read contacts and their activities");

    const approved = await browser.post({ step: "consent", decision: "approve" });
    expect(approved.res.status).toBe(302);
    const location = locationOf(approved.res);
    expect(`${location.origin}${location.pathname}`).toBe(CALLBACK);
    const tokenRes = await exchange(doc.url, location.searchParams.get("code")!, verifier);
    expect(tokenRes.status).toBe(200);
    const tokens = await json(tokenRes);
    expect(tokens).toMatchObject({ permissions: ["contacts:read"], user_id: principal.userId });
    const claims = JSON.parse(atob(tokens.access_token.split(".")[1].replaceAll("-", "+").replaceAll("_", "/")));
    expect(claims.client_id).toBe(doc.url);
    expect((await call("GET", "/v1/contacts", { token: tokens.access_token })).status).toBe(200);
    // Connected to the organization as an integration, by its URL; no name is kept of a client that registered nothing.
    const listed = (await json(await call("GET", "/v1/integrations", { token: principal.token }))).data;
    expect(listed).toContainEqual(
      expect.objectContaining({ type: "oauth_client", id: doc.url, name: null, permissions: ["contacts:read"] }),
    );

    const refreshed = await postForm("/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: doc.url,
    });
    expect(refreshed.status).toBe(200);
    const next = await json(refreshed);
    expect((await postForm("/oauth/revoke", { token: next.refresh_token, client_id: doc.url })).status).toBe(200);
    expect((await call("GET", "/v1/contacts", { token: next.access_token })).status).toBe(401);
    // Every step above looked the client up (four pages, two token requests, a revocation): one read of the document.
    expect(await doc.hits()).toBe(1);
  });

  it("matches a loopback redirect on everything but its port, and nothing else is admitted", async () => {
    const doc = await publish();
    const principal = await createPrincipal();
    const { challenge } = await pkce();
    for (const redirect_uri of ["http://127.0.0.1:1/callback", "http://127.0.0.1:65000/callback", "https://agent.example/callback"]) {
      const res = await call("GET", authorizeUrl(paramsFor(doc.url, challenge, { redirect_uri })), { token: principal.token });
      expect(res.status, redirect_uri).toBe(302);
    }
    for (const redirect_uri of [
      "http://127.0.0.1:1/callback/more",
      "http://localhost:1/callback",
      "https://agent.example/other",
      "https://evil.example/callback",
    ]) {
      const page = await refusedPage(
        await call("GET", authorizeUrl(paramsFor(doc.url, challenge, { redirect_uri })), { token: principal.token }),
      );
      expect(page, redirect_uri).toContain(`not among the redirect_uris of its metadata document (${doc.url})`);
    }
  });

  it.each([
    [
      "the document's client_id differs from its address",
      { body: documentBody({ client_id: "https://agent.example/client.json" }) },
      'its client_id is "https://agent.example/client.json", not the address it was fetched from',
    ],
    ["the document has no client_id", { body: documentBody({ client_id: undefined }) }, "it has no client_id"],
    ["the document is not JSON", { body: "<html>a client</html>" }, "it is not JSON"],
    ["the document is a JSON array", { body: [documentBody()] }, "it is not a JSON object"],
    ["the document lists no redirect URI", { body: documentBody({ redirect_uris: [] }) }, "redirect_uris must list 1 to 10 URIs"],
    [
      "a redirect URI is relative",
      { body: documentBody({ redirect_uris: ["/callback"] }) },
      'redirect URI "/callback" is not an absolute https URI',
    ],
    [
      "a redirect URI is plain http to a public host",
      { body: documentBody({ redirect_uris: ["http://agent.example/cb"] }) },
      'redirect URI "http://agent.example/cb" is not an absolute https URI, or http to a loopback address',
    ],
    [
      "a shared-secret method",
      { body: documentBody({ token_endpoint_auth_method: "client_secret_post" }) },
      "token_endpoint_auth_method is client_secret_post, which needs a shared secret",
    ],
    [
      "client_secret_basic",
      { body: documentBody({ token_endpoint_auth_method: "client_secret_basic" }) },
      "token_endpoint_auth_method is client_secret_basic, which needs a shared secret, and a public document cannot hold one",
    ],
    [
      "a method this server does not support",
      { body: documentBody({ token_endpoint_auth_method: "private_key_jwt" }) },
      'token_endpoint_auth_method must be "none"',
    ],
    ["a client_secret in the document", { body: documentBody({ client_secret: "s3cret" }) }, "it carries a client_secret"],
    ["a name on two lines", { body: documentBody({ client_name: "Doc\nAgent" }) }, "client_name must be one line"],
    ["a logo_uri that is no URL", { body: documentBody({ logo_uri: "javascript:alert(1)" }) }, "logo_uri must be an http or https URL"],
    ["no code grant", { body: documentBody({ grant_types: ["client_credentials"] }) }, 'grant_types must include "authorization_code"'],
    ["a document over 5 KB", { body: documentBody({ client_name: "Doc", padding: "x".repeat(6000) }) }, "it is larger than 5 KB"],
    [
      "a document over 5 KB without Content-Length",
      { body: documentBody({ padding: "x".repeat(6000) }), chunked: true },
      "it is larger than 5 KB",
    ],
    ["an answer other than 200", { status: 404 }, "it answered HTTP 404, not 200"],
    [
      "a redirect",
      { status: 302, headers: { location: "https://agent.example/client.json" } },
      "it answered a redirect (HTTP 302), and redirects are not followed",
    ],
  ])("refuses %s with an error page naming the problem, never redirecting", async (_, opts, problem) => {
    const doc = await publish(opts);
    const { challenge } = await pkce();
    for (const token of [undefined, (await createPrincipal()).token]) {
      const page = await refusedPage(await call("GET", authorizeUrl(paramsFor(doc.url, challenge)), { token }));
      expect(page).toContain(`metadata document, ${doc.url}, which cannot be used: ${problem}`);
    }
  });

  it.each([
    ["a site's root", "https://agent.example/", "it must have a path"],
    ["a bare origin", "https://agent.example", "it must have a path"],
    ["a fragment", "https://agent.example/client.json#x", "it must not have a fragment"],
    ["a dot segment", "https://agent.example/a/../client.json", "its path must not have . or .. segments"],
    ["an encoded dot segment", "https://agent.example/a/%2E%2e/client.json", "its path must not have . or .. segments"],
    ["a user name", "https://user@agent.example/client.json", "it must not carry a user name or password"],
  ])("refuses a client_id URL with %s before fetching anything", async (_, clientId, problem) => {
    const fetched: string[] = [];
    const app = testApp({ oauth: { fetch: async (input) => (fetched.push(String(input)), new Response("{}")) } });
    const { challenge } = await pkce();
    const page = await refusedPage(await callOn(app)("GET", authorizeUrl(paramsFor(clientId, challenge))));
    expect(page).toContain(`which cannot be used: ${problem}`);
    expect(fetched).toEqual([]);
  });

  it("shows any other problem of a document client's request on the error page, never at its redirect URI", async () => {
    const doc = await publish();
    const { challenge } = await pkce();
    for (const extra of [{ response_type: "token" }, { code_challenge_method: "plain" }, { scope: "everything" }]) {
      const page = await refusedPage(await call("GET", authorizeUrl(paramsFor(doc.url, challenge, extra))));
      expect(page).toContain("describes itself in a document of its own, so the problem is shown here");
    }
  });

  it("gives up on a document that does not answer within the deadline", async () => {
    // A fetch that answers only when aborted, as a silent server does: the deadline (5 s, here 50 ms) aborts it.
    const silent: typeof fetch = (_input, init) =>
      new Promise((_, reject) => init?.signal?.addEventListener("abort", () => reject(init.signal!.reason)));
    const app = testApp({ oauth: { fetch: silent, timeoutMs: 50 } });
    const { challenge } = await pkce();
    const url = "http://127.0.0.1:9/slow/client.json";
    const page = await refusedPage(await callOn(app)("GET", authorizeUrl(paramsFor(url, challenge))));
    expect(page).toContain("it did not answer within 0.05 seconds");
  });

  it("stops reading an endless document at 5 KB", async () => {
    let pulled = 0;
    let cancelled = false;
    const endless: typeof fetch = async () =>
      new Response(
        new ReadableStream({
          pull(controller) {
            pulled++;
            controller.enqueue(new TextEncoder().encode(" ".repeat(1024)));
          },
          cancel() {
            cancelled = true;
          },
        }),
      );
    const app = testApp({ oauth: { fetch: endless } });
    const { challenge } = await pkce();
    const page = await refusedPage(await callOn(app)("GET", authorizeUrl(paramsFor("http://127.0.0.1:9/endless/client.json", challenge))));
    expect(page).toContain("it is larger than 5 KB");
    expect(cancelled).toBe(true);
    expect(pulled).toBeLessThan(10);
  });

  describe("in production", () => {
    const dns: Record<string, string[]> = { "docs.internal.test": ["192.168.1.10"], "mixed.test": ["93.184.216.34", "10.0.0.7"] };
    const fetched: string[] = [];
    const resolver: DnsResolver = { resolve: async (host) => dns[host] ?? [] };
    const production = testApp(
      { oauth: { resolver, fetch: async (input) => (fetched.push(String(input)), new Response("{}")) } },
      { ENVIRONMENT: "production", EMAIL_PROVIDER: "resend" },
    );

    it.each([
      ["http to this machine", "http://127.0.0.1:8787/client.json", "it must use https"],
      ["https to this machine", "https://127.0.0.1/client.json", "it is not an address this server fetches from"],
      ["a private address", "https://10.1.2.3/client.json", "must point to a public address"],
      ["the metadata address", "https://169.254.169.254/latest/client.json", "must point to a public address"],
      ["a name that resolves to a private address", "https://docs.internal.test/client.json", "must point to a public address"],
      ["a name with one private address among public ones", "https://mixed.test/client.json", "must point to a public address"],
      ["localhost", "https://localhost/client.json", "must point to a public address"],
    ])("refuses %s and never fetches it", async (_, clientId, problem) => {
      const { challenge } = await pkce();
      const page = await refusedPage(await callOn(production)("GET", authorizeUrl(paramsFor(clientId, challenge))));
      expect(page).toContain(problem);
      expect(fetched).toEqual([]);
    });
  });
});

describe("Client ID Metadata Documents: caching", () => {
  it("follows Cache-Control: within max-age the document is not read again; no-store, no-cache or none at all, every time", async () => {
    const principal = await createPrincipal();
    const reads = async (headers: Record<string, string>) => {
      const doc = await publish({ headers });
      await codeFor(principal, doc.url);
      await codeFor(principal, doc.url);
      return doc.hits();
    };
    expect(await reads({ "cache-control": "public, max-age=600" })).toBe(1);
    expect(await reads({ "cache-control": "no-store" })).toBe(2);
    expect(await reads({ "cache-control": "max-age=600, no-cache" })).toBe(2);
    expect(await reads({})).toBe(2);
    // Already as old as its max-age when it arrives: nothing left to keep.
    expect(await reads({ "cache-control": "max-age=60", age: "60" })).toBe(2);
  });

  it("keeps a document a day at most, and counts its Age", () => {
    const seconds = (headers: Record<string, string>) => cacheSecondsOf(new Headers(headers));
    expect(seconds({ "cache-control": "max-age=31536000" })).toBe(MAX_CACHE_SECONDS);
    expect(MAX_CACHE_SECONDS).toBe(86_400);
    expect(seconds({ "cache-control": "max-age=600", age: "100" })).toBe(500);
    expect(seconds({ "cache-control": 'max-age="120"' })).toBe(120);
    expect(seconds({ "cache-control": "no-store, max-age=600" })).toBe(0);
  });

  it("never keeps a refusal: a document fixed after it failed is read again and works", async () => {
    const doc = await publish({ status: 500 });
    const principal = await createPrincipal();
    const { challenge } = await pkce();
    expect(await refusedPage(await call("GET", authorizeUrl(paramsFor(doc.url, challenge)), { token: principal.token }))).toContain(
      "it answered HTTP 500",
    );
    await doc.update({ body: documentBody(), headers: CACHED });
    await codeFor(principal, doc.url);
    expect(await doc.hits()).toBe(2);
  });

  it("reads the document again at the token endpoint once it may not be kept: a document gone bad makes the client invalid_client", async () => {
    const doc = await publish({ headers: { "cache-control": "no-store" } });
    const principal = await createPrincipal();
    const { code, verifier } = await codeFor(principal, doc.url);
    await doc.update({ body: documentBody({ client_id: "https://agent.example/client.json" }), headers: { "cache-control": "no-store" } });
    const res = await exchange(doc.url, code, verifier);
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual({ error: "invalid_client", error_description: expect.stringContaining("its client_id is") });
    const revoked = await postForm("/oauth/revoke", { token: "anything", client_id: doc.url });
    expect(revoked.status).toBe(401);
  });
});

describe("which client a client_id names", () => {
  it("prefers a configured client (OAUTH_CLIENTS) whose id is a URL: nothing is fetched", async () => {
    const clientId = "https://configured.example/client.json";
    const fetched: string[] = [];
    const app = testApp(
      { oauth: { fetch: async (input) => (fetched.push(String(input)), new Response("{}")) } },
      { OAUTH_CLIENTS: JSON.stringify([{ clientId, redirectUris: ["http://127.0.0.1:*/callback"] }]) },
    );
    const principal = await createPrincipal();
    const { code, verifier } = await codeFor(principal, clientId, callOn(app));
    expect((await exchange(clientId, code, verifier, callOn(app))).status).toBe(200);
    expect(fetched).toEqual([]);
  });

  it("keeps dynamic registration for clients that use it", async () => {
    const registered = await json(
      await call("POST", "/oauth/register", {
        body: { redirect_uris: [REDIRECT], client_name: "Registered" },
        headers: { "cf-connecting-ip": freshIp() },
      }),
    );
    const principal = await createPrincipal();
    const { code, verifier } = await codeFor(principal, registered.client_id);
    expect((await exchange(registered.client_id, code, verifier)).status).toBe(200);
  });
});

describe("consent after a step-up: what is new", () => {
  it("marks the permissions a client asks for beyond what the user already granted it, and grants exactly what was named", async () => {
    const doc = await publish();
    const principal = await createPrincipal();
    // A grant the user holds: contacts:read, through the bearer shortcut (the same user).
    const first = await codeFor(principal, doc.url, call, "contacts:read");
    const held = await json(await exchange(doc.url, first.code, first.verifier));
    expect(held.permissions).toEqual(["contacts:read"]);

    // What an MCP 403 step-up names: what the token holds plus what the tool needs.
    const mcp = await exports.default.fetch(
      new Request("http://api.test/mcp", {
        method: "POST",
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "create_contact", arguments: {} } }),
        headers: {
          authorization: `Bearer ${held.access_token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
        },
      }),
    );
    expect(mcp.status).toBe(403);
    const scope = /scope="([^"]+)"/.exec(mcp.headers.get("www-authenticate")!)![1]!;
    expect(scope).toBe("contacts:read contacts:write");

    const { verifier, challenge } = await pkce();
    const { browser, html } = await atConsent(principal, authorizeUrl(paramsFor(doc.url, challenge, { scope })));
    expect(html).toContain("It now asks for one more permission, marked <strong>Newly requested</strong>");
    expect(html).toMatch(
      /Create and change contacts, log activities <code>contacts:write<\/code> <strong class="new">Newly requested<\/strong>/,
    );
    expect(html).toMatch(/Read contacts and their activities <code>contacts:read<\/code> <span class="held">Already granted<\/span>/);
    // The new one is listed first.
    expect(html.indexOf("contacts:write")).toBeLessThan(html.indexOf("contacts:read</code>"));
    // Nothing explicit-only is asked for or shown.
    for (const p of ["contacts:erase", "users:manage", "api-keys:manage", "organization:manage"]) expect(html).not.toContain(p);

    const approved = await browser.post({ step: "consent", decision: "approve" });
    const wider = await json(await exchange(doc.url, locationOf(approved.res).searchParams.get("code")!, verifier));
    expect(wider.permissions).toEqual(["contacts:read", "contacts:write"]);
  });

  it("marks nothing when the user holds no live grant of the client (none yet, or revoked), and says when nothing is new", async () => {
    const doc = await publish();
    const principal = await createPrincipal();
    const { challenge } = await pkce();
    const url = authorizeUrl(paramsFor(doc.url, challenge, { scope: "contacts:read deals:read" }));
    const fresh = await atConsent(principal, url);
    expect(fresh.html).not.toContain("Newly requested");
    expect(fresh.html).not.toContain("Already granted");

    const first = await codeFor(principal, doc.url, call, "contacts:read deals:read");
    const held = await json(await exchange(doc.url, first.code, first.verifier));
    const again = await fresh.browser.open();
    expect(again.html).toContain("You already allowed <strong>Doc Agent</strong> all of this");
    expect(again.html).not.toContain("Newly requested");

    await postForm("/oauth/revoke", { token: held.refresh_token, client_id: doc.url });
    const revoked = await fresh.browser.open();
    expect(revoked.html).not.toContain("Already granted");
  });

  it("grants an explicit-only permission only when the scope names it, and shows it as newly requested", async () => {
    const doc = await publish();
    const principal = await createPrincipal();
    const baseline = await codeFor(principal, doc.url);
    const held = await json(await exchange(doc.url, baseline.code, baseline.verifier));
    for (const p of ["contacts:erase", "users:manage", "api-keys:manage", "organization:manage"]) expect(held.permissions).not.toContain(p);

    const { verifier, challenge } = await pkce();
    const scope = `${held.permissions.join(" ")} contacts:erase`;
    const { browser, html } = await atConsent(principal, authorizeUrl(paramsFor(doc.url, challenge, { scope })));
    expect(html).toMatch(/<code>contacts:erase<\/code> <strong class="new">Newly requested<\/strong>/);
    expect(html.match(/Newly requested<\/strong><\/li>/g)).toHaveLength(1);
    for (const p of ["users:manage", "api-keys:manage", "organization:manage"]) expect(html).not.toContain(p);
    const approved = await browser.post({ step: "consent", decision: "approve" });
    const wider = await json(await exchange(doc.url, locationOf(approved.res).searchParams.get("code")!, verifier));
    expect(wider.permissions).toContain("contacts:erase");
    for (const p of ["users:manage", "api-keys:manage", "organization:manage"]) expect(wider.permissions).not.toContain(p);
  });

  it("names the organization a permission was granted for when the user may choose among several", async () => {
    const doc = await publish();
    const principal = await createPrincipal();
    const other = await createPrincipal();
    // The same person in a second organization: one e-mail, two users.
    await env.DB.prepare("UPDATE users SET email = ? WHERE id = ?")
      .bind(await emailOf(principal), other.userId)
      .run();
    const first = await codeFor(principal, doc.url, call, "contacts:read");
    await exchange(doc.url, first.code, first.verifier);
    const { challenge } = await pkce();
    const { html } = await atConsent(other, authorizeUrl(paramsFor(doc.url, challenge, { scope: "contacts:read deals:read" })));
    expect(html).toContain("For which organization?");
    expect(html).toMatch(/<code>contacts:read<\/code> <span class="held">Already granted for [^<]+<\/span>/);
    expect(html).toMatch(/<code>deals:read<\/code> <strong class="new">Newly requested<\/strong>/);
  });
});
