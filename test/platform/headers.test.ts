import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { signedFileUrl } from "../../src/files/signed-url";
import { FEED_TTL_SECONDS } from "../../src/profiles/feed";
import { call } from "../helpers/client";
import { createDocument, freshIp, sendForSignature, tokenOf } from "../helpers/documents";
import { createPrincipal, type TestPrincipal } from "../helpers/factories";
import { publishedProfile } from "../helpers/profiles";
import { createSurveyTemplate, scheduleSurvey } from "../helpers/surveys";
import { testApp } from "../helpers/test-app";

/** What a row expects of Cache-Control: no-store, the route's own value (exact or a pattern), or none at all. */
type Caching = "no-store" | { own: string | RegExp } | "none";

interface Seed {
  owner: TestPrincipal;
  documentId: string;
  signingToken: string;
  surveyToken: string;
  slug: string;
  fileUrl: string;
}

interface Row {
  name: string;
  method?: "GET" | "POST";
  path: (s: Seed) => string;
  auth?: boolean;
  body?: unknown;
  status: number;
  cache: Caching;
}

const UNKNOWN_TOKEN = "sign_unknownunknownunknownunknownunknownunknownu";

const ROWS: Row[] = [
  // Authenticated families: personal data and links, never stored by a cache.
  { name: "CRM list", path: () => "/v1/contacts", auth: true, status: 200, cache: "no-store" },
  { name: "CRM 404", path: () => `/v1/contacts/${crypto.randomUUID()}`, auth: true, status: 404, cache: "no-store" },
  { name: "CRM without a token", path: () => "/v1/contacts", status: 401, cache: "no-store" },
  {
    name: "CRM validation error",
    method: "POST",
    path: () => "/v1/contacts",
    auth: true,
    body: { firstName: 1 },
    status: 422,
    cache: "no-store",
  },
  { name: "API read", path: (s) => `/api/documents/${s.documentId}`, auth: true, status: 200, cache: "no-store" },
  { name: "API 404", path: () => `/api/documents/${crypto.randomUUID()}`, auth: true, status: 404, cache: "no-store" },
  { name: "API without a token", path: () => "/api/documents", status: 401, cache: "no-store" },
  {
    name: "API envelope list (signers' addresses)",
    path: (s) => `/api/documents/${s.documentId}/signatures`,
    auth: true,
    status: 200,
    cache: "no-store",
  },
  {
    name: "plant store",
    method: "POST",
    path: () => "/plants",
    auth: true,
    body: { id: 41, name: "Basil", tag: "herb" },
    status: 200,
    cache: "no-store",
  },
  // A route with its own choice keeps it.
  { name: "clickwrap list (own header)", path: () => "/api/clickwrap", auth: true, status: 200, cache: { own: "private, no-store" } },
  // Capability paths: the token is in the URL, success and errors alike.
  { name: "signing link opened", path: (s) => `/api/public/sign/${s.signingToken}`, status: 200, cache: "no-store" },
  {
    name: "signing action",
    method: "POST",
    path: (s) => `/api/public/sign/${s.signingToken}`,
    body: { action: "authenticate", codeVerified: true },
    status: 200,
    cache: "no-store",
  },
  {
    name: "signing action, bad body",
    method: "POST",
    path: (s) => `/api/public/sign/${s.signingToken}`,
    body: { action: "dance" },
    status: 400,
    cache: "no-store",
  },
  { name: "signing link gone", path: () => `/api/public/sign/${UNKNOWN_TOKEN}`, status: 404, cache: "no-store" },
  { name: "signing page", path: (s) => `/sign/${s.signingToken}`, status: 200, cache: "no-store" },
  { name: "survey opened", path: (s) => `/api/public/survey/${s.surveyToken}`, status: 200, cache: "no-store" },
  // After "survey opened": a survey takes an answer only once opened (409 invalid_state before).
  {
    name: "survey answer, bad body",
    method: "POST",
    path: (s) => `/api/public/survey/${s.surveyToken}`,
    body: { answers: { overall: 9 } },
    status: 400,
    cache: "no-store",
  },
  { name: "survey gone", path: () => "/api/public/survey/srv_unknown", status: 404, cache: "no-store" },
  { name: "survey page", path: (s) => `/survey/${s.surveyToken}`, status: 200, cache: "no-store" },
  // Public answers meant to be cached keep their own caching.
  {
    name: "public reviews feed",
    path: (s) => `/api/public/reviews/${s.slug}`,
    status: 200,
    cache: { own: `public, max-age=${FEED_TTL_SECONDS}` },
  },
  { name: "reviews widget", path: () => "/widget/reviews.js", status: 200, cache: { own: "public, max-age=300" } },
  { name: "signed file download", path: (s) => s.fileUrl, status: 200, cache: { own: /^private, max-age=\d+$/ } },
  { name: "OpenAPI document", path: () => "/openapi.json", status: 200, cache: "none" },
  { name: "docs page", path: () => "/docs", status: 200, cache: "none" },
  { name: "unknown route", path: () => "/no/such/route", status: 404, cache: "none" },
];

let seed: Seed;

beforeAll(async () => {
  const owner = await createPrincipal();
  const documentId = (await createDocument(owner.token)).id;
  const sent = await sendForSignature(owner.token, documentId);
  const template = await createSurveyTemplate(owner);
  const survey = await scheduleSurvey(owner, { templateId: template.id });
  const slug = await publishedProfile(owner);
  const key = `headers/${crypto.randomUUID()}.pdf`;
  await env.FILES.put(key, "%PDF-1.4\n%%EOF\n", { httpMetadata: { contentType: "application/pdf" } });
  const fileUrl = new URL((await signedFileUrl(env, "http://api.test", key)).url);
  seed = {
    owner,
    documentId,
    signingToken: tokenOf(sent.links[0]!.url),
    surveyToken: survey.accessToken,
    slug,
    fileUrl: `${fileUrl.pathname}${fileUrl.search}`,
  };
});

describe("response headers", () => {
  it.each(ROWS)("$name: nosniff, and the caching it must have", async (row) => {
    const res = await call(row.method ?? "GET", row.path(seed), {
      token: row.auth ? seed.owner.token : undefined,
      body: row.body,
      headers: { "cf-connecting-ip": freshIp() },
    });
    expect(res.status).toBe(row.status);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const cacheControl = res.headers.get("cache-control");
    if (row.cache === "no-store") expect(cacheControl).toBe("no-store");
    else if (row.cache === "none") expect(cacheControl).toBeNull();
    else if (typeof row.cache.own === "string") expect(cacheControl).toBe(row.cache.own);
    else expect(cacheControl).toMatch(row.cache.own);
  });

  it("an Idempotency-Key replay and an unexpected 500 carry them too", async () => {
    const { token } = await createPrincipal();
    const headers = { "idempotency-key": "headers-replay" };
    const body = { firstName: "Head", lastName: "Ers", email: `${crypto.randomUUID()}@headers.test` };
    await call("POST", "/v1/contacts", { token, body, headers });
    const replay = await call("POST", "/v1/contacts", { token, body, headers });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.headers.get("cache-control")).toBe("no-store");
    expect(replay.headers.get("x-content-type-options")).toBe("nosniff");

    const { app, fetch } = testApp();
    app.get("/v1/events/boom", () => {
      throw new Error("boom");
    });
    const quiet = vi.spyOn(console, "error").mockImplementation(() => {});
    const failed = await fetch("GET", "/v1/events/boom", { token });
    quiet.mockRestore();
    expect(failed.status).toBe(500);
    expect(failed.headers.get("cache-control")).toBe("no-store");
    expect(failed.headers.get("x-content-type-options")).toBe("nosniff");
  });
});
