import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import type { Env } from "../../src/env";
import { everyShard } from "../../src/shards/bindings";
import { newAgreement } from "../helpers/clickwrap";
import { createDocument, freshIp, leaseCanonical, mailTo, publicSign, sendForSignature, tokenOf } from "../helpers/documents";
import { createPrincipal, type TestPrincipal } from "../helpers/factories";
import { withSignerEnv } from "../helpers/faulty-bindings";
import { publishedProfile } from "../helpers/profiles";
import { bodyOf, fillPath, ROUTES, varsOf } from "../helpers/route-table";
import { createSurveyTemplate, scheduleSurvey } from "../helpers/surveys";

/**
 * Issue 24: a request reads at most one shard, its organization's. Each route of the route table runs against an env
 * whose shard bindings note every use; the owner's organization sits on shard 0 for one half of the routes and on
 * shard 1 for the other, so a route that reached for "the" database, or for every shard, fails here.
 */
function trackedEnv(): { env: Env; touched: Set<number> } {
  const touched = new Set<number>();
  const tracked: Record<string, unknown> = { ...env };
  for (const { shard, db } of everyShard(env)) {
    tracked[`DB_SHARD_${shard}`] = new Proxy(db, {
      get(target, prop) {
        if (prop === "prepare" || prop === "batch" || prop === "exec" || prop === "withSession") touched.add(shard);
        const value = Reflect.get(target, prop) as unknown;
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }
  return { env: tracked as unknown as Env, touched };
}

const app = createApp();

async function fetchTracked(method: string, path: string, token: string | null, body: unknown, vars: Record<string, string> | undefined) {
  const { env: tracked, touched } = trackedEnv();
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : { "cf-connecting-ip": freshIp() };
  if (body !== undefined && !(body instanceof FormData)) headers["content-type"] = "application/json";
  const payload = body === undefined ? undefined : body instanceof FormData ? body : JSON.stringify(body);
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(`http://api.test${path}`, { method, headers, body: payload }), { ...tracked, ...vars }, ctx);
  await waitOnExecutionContext(ctx);
  await res.arrayBuffer();
  return { status: res.status, touched };
}

describe("no request reads more than one shard", () => {
  it.each(ROUTES.map((r, i) => [`${r.method} ${r.path}`, r, i % 2] as const))(
    "%s reads only its organization's shard",
    async (_, route, shard) => {
      const owner = await createPrincipal({ shard });
      const params = route.seed ? await route.seed(owner) : {};
      const { status, touched } = await fetchTracked(
        route.method,
        fillPath(route.path, params),
        owner.token,
        bodyOf(route, params),
        varsOf(route, params),
      );
      expect(status).toBeLessThan(500);
      expect([...touched]).toEqual([shard]);
    },
  );
});

/** The public routes, each with what it is given made by an organization on `shard`: one directory read finds that shard. */
const PUBLIC: { name: string; path: (owner: TestPrincipal) => Promise<string>; method?: "POST"; body?: unknown }[] = [
  {
    name: "GET /api/public/sign/{token}",
    path: async (o) => `/api/public/sign/${tokenOf((await sendForSignature(o.token, (await createDocument(o.token)).id)).links[0]!.url)}`,
  },
  {
    name: "GET /sign/{token}",
    path: async (o) => `/sign/${tokenOf((await sendForSignature(o.token, (await createDocument(o.token)).id)).links[0]!.url)}`,
  },
  {
    name: "GET /api/public/survey/{token}",
    path: async (o) => `/api/public/survey/${(await createSurveyTemplate(o), await scheduleSurvey(o)).accessToken}`,
  },
  { name: "GET /survey/{token}", path: async (o) => `/survey/${(await createSurveyTemplate(o), await scheduleSurvey(o)).accessToken}` },
  { name: "GET /api/public/reviews/{agentSlug}", path: async (o) => `/api/public/reviews/${await publishedProfile(o)}` },
  {
    name: "POST /api/public/referral/{agentSlug}",
    method: "POST",
    body: {
      referrerName: "Rita Referrer",
      referrerEmail: "rita@shard-reads.test",
      referredName: "Lee Lead",
      referredEmail: "lee@shard-reads.test",
    },
    path: async (o) => `/api/public/referral/${await publishedProfile(o)}`,
  },
  { name: "GET /api/public/clickwrap/{agreementId}", path: async (o) => `/api/public/clickwrap/${(await newAgreement(o)).id}` },
  { name: "GET /consent/{agreementId}", path: async (o) => `/consent/${(await newAgreement(o)).id}` },
];

describe("no public route reads more than one shard", () => {
  it.each(PUBLIC.map((r, i) => [r.name, r, i % 2] as const))("%s reads only its organization's shard", async (_, route, shard) => {
    const owner = await createPrincipal({ shard });
    const { status, touched } = await fetchTracked(route.method ?? "GET", await route.path(owner), null, route.body, undefined);
    expect(status).toBeLessThan(300);
    // A page that only serves its script (the signing page fetches the API itself) reads no shard at all.
    expect([...touched].filter((s) => s !== shard)).toEqual([]);
  });
});

/** `env` with a directory that counts the reads prepared on it (through its sessions too). */
function directoryCountingEnv(): { env: Env; reads: () => number } {
  let reads = 0;
  const counting = <T extends D1Database | D1DatabaseSession>(db: T): T =>
    new Proxy(db, {
      get(target, prop) {
        if (prop === "prepare") return (q: string) => (/^\s*select\b/i.test(q) && reads++, target.prepare(q));
        if (prop === "withSession") return (c?: string) => counting((target as D1Database).withSession(c));
        const value = Reflect.get(target, prop) as unknown;
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  return { env: { ...env, DB: counting(env.DB) } as Env, reads: () => reads };
}

describe("a public sign reads the directory once (issue 30)", () => {
  it("the link's key finds the organization and its shard; the envelope's object and the next signer's mail read nothing there", async () => {
    const owner = await createPrincipal({ shard: 1 });
    const next = `${crypto.randomUUID()}@shard-reads.test`;
    const doc = await createDocument(owner.token, leaseCanonical());
    const sent = await sendForSignature(owner.token, doc.id, {
      mode: "sequential",
      signerVerification: "attested",
      signers: [
        { name: "First Signer", email: `${crypto.randomUUID()}@shard-reads.test`, role: "tenant" },
        { name: "Second Signer", email: next, role: "landlord" },
      ],
    });
    const token = tokenOf(sent.links[0]!.url);
    const ip = freshIp();
    await publicSign("GET", token, undefined, ip);
    await publicSign("POST", token, { action: "authenticate", codeVerified: true }, ip);
    await publicSign("POST", token, { action: "consent" }, ip);
    const counted = directoryCountingEnv();
    // The object reads through the counted env as one that has not loaded the envelope yet (new, or evicted) would.
    const status = await withSignerEnv(sent.envelopeId, counted.env, async () => {
      const ctx = createExecutionContext();
      const init = {
        method: "POST",
        headers: { "content-type": "application/json", "cf-connecting-ip": ip },
        body: JSON.stringify({ action: "sign" }),
      };
      const res = await app.fetch(new Request(`http://api.test/api/public/sign/${token}`, init), counted.env, ctx);
      await waitOnExecutionContext(ctx);
      await res.arrayBuffer();
      return res.status;
    });
    expect(status).toBe(200);
    expect(await mailTo(next)).toHaveLength(1);
    expect(counted.reads()).toBe(1);
  });
});
