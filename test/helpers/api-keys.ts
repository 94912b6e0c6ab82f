import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { call, json } from "./client";
import type { TestPrincipal } from "./factories";
import { authorizeUrl, call as callOAuth, CLIENT, freshIp, locationOf, pkce, REDIRECT, validParams } from "./oauth";

// API keys and OAuth grants as integrations (issue 32): shared by the API key, integration and rate-limit tests.

export interface CreatedKey {
  id: string;
  key: string;
  prefix: string;
  permissions: string[];
}

/** A key of `owner`'s organization, created through the API. */
export async function createApiKey(
  token: string,
  permissions: string[] = ["contacts:read"],
  extra: Record<string, unknown> = {},
): Promise<CreatedKey> {
  const res = await call("POST", "/v1/api-keys", { token, body: { name: "Test key", permissions, ...extra } });
  expect(res.status, await res.clone().text()).toBe(201);
  return (await json(res)).data;
}

/** The organization's integration events in its shard outbox, oldest first. */
export async function integrationEvents(shard: D1Database, organizationId: string) {
  const rows = await shard
    .prepare(
      "SELECT id, type, actor, data FROM outbox_events WHERE organization_id = ? AND type LIKE 'integration.%' ORDER BY occurred_at, rowid",
    )
    .bind(organizationId)
    .all<{ id: string; type: string; actor: string; data: string }>();
  return rows.results.map((r) => ({ id: r.id, type: r.type, actor: JSON.parse(r.actor), object: JSON.parse(r.data).object }));
}

/** Events still waiting in the directory for their shard (events/directory-outbox.ts). */
export const pendingDirectoryEvents = async (organizationId: string) =>
  (await env.DB.prepare("SELECT COUNT(*) AS n FROM directory_outbox WHERE organization_id = ?")
    .bind(organizationId)
    .first<{ n: number }>())!.n;

/** A client's tokens for `principal`'s user: the bearer-session shortcut of the authorization endpoint, then the exchange. */
export async function grantTokens(principal: TestPrincipal, opts: { scope?: string; clientId?: string; redirectUri?: string } = {}) {
  const { verifier, challenge } = await pkce();
  const clientId = opts.clientId ?? CLIENT;
  const redirectUri = opts.redirectUri ?? REDIRECT;
  const authorized = await callOAuth(
    "GET",
    authorizeUrl(validParams(challenge, { scope: opts.scope, client_id: clientId, redirect_uri: redirectUri })),
    { token: principal.token },
  );
  expect(authorized.status).toBe(302);
  const code = locationOf(authorized).searchParams.get("code")!;
  const res = await tokenRequest({
    grant_type: "authorization_code",
    code,
    redirect_uri: redirectUri,
    client_id: clientId,
    code_verifier: verifier,
  });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await json(res)) as { access_token: string; refresh_token: string };
}

/** A form POST to the token or revocation endpoint, from an address of its own (they are rate-limited per address). */
export function tokenRequest(form: Record<string, string | undefined>, path = "/oauth/token") {
  const body = new URLSearchParams(Object.entries(form).filter((e): e is [string, string] => e[1] !== undefined)).toString();
  return callOAuth("POST", path, {
    rawBody: body,
    headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": freshIp() },
  });
}

/** A client that registered itself (RFC 7591) under `name`, returning to the test's loopback redirect. */
export async function registerClient(name: string): Promise<string> {
  const res = await call("POST", "/oauth/register", {
    body: { redirect_uris: [REDIRECT], client_name: name, grant_types: ["authorization_code", "refresh_token"] },
    headers: { "cf-connecting-ip": freshIp() },
  });
  expect(res.status).toBe(201);
  return (await json(res)).client_id;
}
