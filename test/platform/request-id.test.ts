import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import type { RateLimiter } from "../../src/platform/rate-limiter";
import { newAgreement } from "../helpers/clickwrap";
import { call, json } from "../helpers/client";
import { createDocument, freshIp, sendForSignature, tokenOf } from "../helpers/documents";
import { createPrincipal, type TestPrincipal } from "../helpers/factories";
import { publishedProfile } from "../helpers/profiles";
import { createSurveyTemplate, scheduleSurvey } from "../helpers/surveys";

/** What the app generates: a v4 UUID. */
const GENERATED = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface Seed {
  owner: TestPrincipal;
  documentId: string;
  signingToken: string;
  surveyToken: string;
  agreementId: string;
  slug: string;
}

interface Row {
  group: string;
  name: string;
  method?: "GET" | "POST" | "DELETE";
  path: (s: Seed) => string;
  auth?: boolean;
  body?: unknown;
  form?: Record<string, string>;
  headers?: Record<string, string>;
  /** Outside /openapi.json (the MCP endpoint): sent without call()'s contract check. */
  undocumented?: boolean;
  status: number;
}

const UNKNOWN_TOKEN = "sign_unknownunknownunknownunknownunknownunknownu";
const MCP_INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "request-id", version: "1" } },
};
const MCP_HEADERS = { accept: "application/json, text/event-stream" };

/** Per route group (app.ts routeGroups) and page: a success, an error the group answers, and a 404. */
const ROWS: Row[] = [
  { group: "/v1", name: "list", path: () => "/v1/contacts", auth: true, status: 200 },
  { group: "/v1", name: "validation error", method: "POST", path: () => "/v1/contacts", auth: true, body: { firstName: 1 }, status: 422 },
  { group: "/v1", name: "unknown id", path: () => `/v1/contacts/${crypto.randomUUID()}`, auth: true, status: 404 },
  { group: "/v1", name: "unknown route", path: () => `/v1/contacts/${crypto.randomUUID()}/nothing/here`, auth: true, status: 404 },
  { group: "/api", name: "read", path: (s) => `/api/documents/${s.documentId}`, auth: true, status: 200 },
  { group: "/api", name: "bad query", path: () => "/api/documents?limit=0", auth: true, status: 400 },
  { group: "/api", name: "unknown id", path: () => `/api/documents/${crypto.randomUUID()}`, auth: true, status: 404 },
  { group: "/api", name: "unknown route", path: () => "/api/documents/x/y/z", auth: true, status: 404 },
  { group: "/api/public", name: "signing link opened", path: (s) => `/api/public/sign/${s.signingToken}`, status: 200 },
  {
    group: "/api/public",
    name: "signing action, bad body",
    method: "POST",
    path: (s) => `/api/public/sign/${s.signingToken}`,
    body: { action: "dance" },
    status: 400,
  },
  { group: "/api/public", name: "signing link gone", path: () => `/api/public/sign/${UNKNOWN_TOKEN}`, status: 404 },
  {
    group: "/oauth",
    name: "revoke (nothing to revoke)",
    method: "POST",
    path: () => "/oauth/revoke",
    form: { token: "nothing", client_id: "mcp-dev" },
    status: 200,
  },
  {
    group: "/oauth",
    name: "token, unsupported grant",
    method: "POST",
    path: () => "/oauth/token",
    form: { grant_type: "password", client_id: "mcp-dev" },
    status: 400,
  },
  { group: "/oauth", name: "unknown route", path: () => "/oauth/nothing", status: 404 },
  { group: "/.well-known", name: "server metadata", path: () => "/.well-known/oauth-authorization-server", status: 200 },
  { group: "/.well-known", name: "unknown document", path: () => "/.well-known/nothing", status: 404 },
  { group: "/plants", name: "store", method: "POST", path: () => "/plants", auth: true, body: { id: 7, name: "Basil" }, status: 200 },
  { group: "/plants", name: "bad body", method: "POST", path: () => "/plants", auth: true, body: { id: "seven" }, status: 400 },
  { group: "/plants", name: "unknown plant", method: "DELETE", path: () => "/plants/987654", auth: true, status: 404 },
  {
    group: "/mcp",
    name: "initialize",
    method: "POST",
    path: () => "/mcp",
    auth: true,
    body: MCP_INITIALIZE,
    headers: MCP_HEADERS,
    undocumented: true,
    status: 200,
  },
  {
    group: "/mcp",
    name: "without a token",
    method: "POST",
    path: () => "/mcp",
    body: MCP_INITIALIZE,
    headers: MCP_HEADERS,
    undocumented: true,
    status: 401,
  },
  { group: "/mcp", name: "unknown route", path: () => "/mcp/nothing", status: 404 },
  { group: "/sign", name: "page", path: (s) => `/sign/${s.signingToken}`, status: 200 },
  { group: "/sign", name: "unknown route", path: () => `/sign/${UNKNOWN_TOKEN}/nothing`, status: 404 },
  { group: "/consent", name: "page", path: (s) => `/consent/${s.agreementId}`, status: 200 },
  { group: "/consent", name: "bad subjectRef", path: (s) => `/consent/${s.agreementId}?subjectRef=${"x".repeat(201)}`, status: 400 },
  { group: "/consent", name: "unknown agreement", path: () => `/consent/${crypto.randomUUID()}`, status: 404 },
  { group: "/survey", name: "page", path: (s) => `/survey/${s.surveyToken}`, status: 200 },
  { group: "/survey", name: "unknown route", path: () => "/survey/srv_unknown/nothing", status: 404 },
  { group: "/widget", name: "script", path: () => "/widget/reviews.js", status: 200 },
  { group: "/widget", name: "unknown script", path: () => "/widget/nothing.js", status: 404 },
  { group: "/docs", name: "reference page", path: () => "/docs", status: 200 },
  { group: "/openapi.json", name: "document", path: () => "/openapi.json", status: 200 },
  { group: "app", name: "unknown route", path: () => "/no/such/route", status: 404 },
];

let seed: Seed;

beforeAll(async () => {
  const owner = await createPrincipal();
  const documentId = (await createDocument(owner.token)).id;
  const sent = await sendForSignature(owner.token, documentId);
  const survey = await scheduleSurvey(owner, { templateId: (await createSurveyTemplate(owner)).id });
  const slug = await publishedProfile(owner);
  const agreementId = (await newAgreement(owner)).id;
  seed = { owner, documentId, signingToken: tokenOf(sent.links[0]!.url), surveyToken: survey.accessToken, agreementId, slug };
});

function send(row: Row, headers: Record<string, string> = {}) {
  const all = { "cf-connecting-ip": freshIp(), ...row.headers, ...headers };
  if (row.undocumented) {
    const request = new Request(`http://api.test${row.path(seed)}`, {
      method: row.method,
      headers: { ...all, "content-type": "application/json", ...(row.auth ? { authorization: `Bearer ${seed.owner.token}` } : {}) },
      body: JSON.stringify(row.body),
    });
    return exports.default.fetch(request);
  }
  if (row.form)
    return call(row.method ?? "GET", row.path(seed), {
      rawBody: new URLSearchParams(row.form).toString(),
      headers: { ...all, "content-type": "application/x-www-form-urlencoded" },
    });
  return call(row.method ?? "GET", row.path(seed), { token: row.auth ? seed.owner.token : undefined, body: row.body, headers: all });
}

describe("X-Request-Id on every answer", () => {
  it.each(ROWS)("$group $name ($status)", async (row) => {
    const res = await send(row);
    expect(res.status).toBe(row.status);
    expect(res.headers.get("x-request-id")).toMatch(GENERATED);
  });

  it("is new for every request, and a caller's own plain id is kept while a malformed one is replaced", async () => {
    const row = ROWS[0]!;
    const ids = await Promise.all([send(row), send(row)]).then((all) => all.map((r) => r.headers.get("x-request-id")));
    expect(ids[0]).not.toBe(ids[1]);
    expect((await send(row, { "x-request-id": "trace-42_ab=" })).headers.get("x-request-id")).toBe("trace-42_ab=");
    expect((await send(row, { "x-request-id": "bad id; <script>" })).headers.get("x-request-id")).toMatch(GENERATED);
  });

  it("is readable by a page on another origin on every route open to one (CORS exposes it, and Retry-After)", async () => {
    const origin = "https://agent-site.example";
    const open: [string, string, RequestInit?][] = [
      ["reviews feed", `/api/public/reviews/${seed.slug}`],
      ["clickwrap text", `/api/public/clickwrap/${seed.agreementId}`],
      [
        "referral form, bad body",
        `/api/public/referral/${seed.slug}`,
        { method: "POST", body: "{}", headers: { "content-type": "application/json" } },
      ],
      ["OAuth metadata", "/.well-known/oauth-authorization-server"],
      [
        "OAuth token, bad grant",
        "/oauth/token",
        { method: "POST", body: "grant_type=password", headers: { "content-type": "application/x-www-form-urlencoded" } },
      ],
    ];
    for (const [name, path, init] of open) {
      const res = await exports.default.fetch(
        new Request(`http://api.test${path}`, {
          ...init,
          headers: { ...(init?.headers as Record<string, string>), origin, "cf-connecting-ip": freshIp() },
        }),
      );
      expect(res.headers.get("access-control-allow-origin"), name).toBe("*");
      const exposed = (res.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(/\s*,\s*/);
      expect(exposed, name).toEqual(expect.arrayContaining(["x-request-id", "retry-after"]));
    }
  });
});

/** A database binding whose every query fails: the unexpected failure a group answers with its 500. */
const failingDatabase = {
  withSession: () => ({
    prepare: () => {
      throw new Error("database unavailable");
    },
    batch: () => Promise.reject(new Error("database unavailable")),
    getBookmark: () => null,
  }),
};

/** A rate limiter that fails, as a Durable Object outage would: the public routes consult it first. */
const failingLimiter: RateLimiter = {
  consume: () => Promise.reject(new Error("rate limiter unavailable")),
} as unknown as RateLimiter;

/** The production app with the shards' or the rate limiter's failure; unexpected failures answer 500 from the group. */
async function failing(method: string, path: string, init: { token?: string; body?: BodyInit; headers?: Record<string, string> } = {}) {
  const app = createApp({ rateLimiter: failingLimiter });
  const headers = new Headers({ "cf-connecting-ip": freshIp(), ...init.headers });
  if (init.token) headers.set("authorization", `Bearer ${init.token}`);
  const ctx = createExecutionContext();
  const res = await app.fetch(
    new Request(`http://api.test${path}`, { method, headers, body: init.body }),
    { ...env, DB_SHARD_0: failingDatabase, DB_SHARD_1: failingDatabase },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

describe("a group's unexpected 500", () => {
  const JSON_TYPE = { "content-type": "application/json" };
  const CASES: { group: string; request: (s: Seed) => Parameters<typeof failing>; idIn: (body: any) => string }[] = [
    { group: "/v1", request: (s) => ["GET", "/v1/contacts", { token: s.owner.token }], idIn: (b) => b.error.requestId },
    { group: "/api", request: (s) => ["GET", `/api/documents/${s.documentId}`, { token: s.owner.token }], idIn: (b) => b.requestId },
    { group: "/api/public", request: (s) => ["GET", `/api/public/sign/${s.signingToken}`], idIn: (b) => b.requestId },
    {
      group: "/plants",
      request: (s) => ["POST", "/plants", { token: s.owner.token, body: JSON.stringify({ id: 8, name: "Mint" }), headers: JSON_TYPE }],
      idIn: (b) => b.message,
    },
    {
      group: "/oauth",
      request: () => [
        "POST",
        "/oauth/token",
        {
          body: "grant_type=refresh_token&refresh_token=x&client_id=mcp-dev",
          headers: { "content-type": "application/x-www-form-urlencoded" },
        },
      ],
      idIn: (b) => b.error_description,
    },
  ];

  it.each(CASES)("$group: the body and the error log name the id X-Request-Id carries", async ({ request, idIn }) => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const res = await failing(...request(seed));
    const lines = logged.mock.calls.map((args) => String(args[0]));
    logged.mockRestore();
    expect(res.status).toBe(500);
    const id = res.headers.get("x-request-id")!;
    expect(id).toMatch(GENERATED);
    expect(idIn(await json(res))).toContain(id);
    expect(lines.filter((line) => line.includes(`"requestId":"${id}"`))).toHaveLength(1);
  });
});
