import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { routePermission } from "../../src/platform/permissions";
import { createApiKey } from "../helpers/api-keys";
import { createPrincipal, type TestPrincipal } from "../helpers/factories";
import { bodyOf, type Family, fillPath, type MatrixRoute, ROUTES, varsOf } from "../helpers/route-table";

const UNAUTHORIZED: Record<Family, unknown> = {
  crm: { success: false, error: expect.objectContaining({ type: "authentication_error", status: 401 }) },
  api: { error: "Unauthorized" },
  plants: { error: 401, message: expect.any(String) },
};

/** The shards of the test env (wrangler.toml binds DB_SHARD_0 and DB_SHARD_1). */
const SHARDS = [0, 1] as const;

const name = (r: { method: string; path: string }) => `${r.method} ${r.path}`;
const placeholderParams = (path: string) =>
  Object.fromEntries([...path.matchAll(/\{(\w+)\}/g)].map((m) => [m[1]!, "00000000-0000-4000-8000-000000000000"]));

const cases = (routes: MatrixRoute[]) => routes.map((r) => [name(r), r] as const);
/** Every route twice, its organization on shard 0 then on shard 1: the cases that read or write organization data. */
const onEachShard = (routes: MatrixRoute[]) => routes.flatMap((r) => SHARDS.map((shard) => [name(r), shard, r] as const));
/** Every route once, its organization on shard 0 or 1 by turns. */
const alternatingShards = (routes: MatrixRoute[]) => routes.map((r, i) => [name(r), SHARDS[i % SHARDS.length]!, r] as const);
const unknownPath = (route: MatrixRoute) => fillPath(route.path, route.unknown ?? placeholderParams(route.path));

/**
 * The route as a key holding only the permission its path needs would call it (issue 40): where the route reads more
 * for its object (`objectReads`), that key gets 403 insufficient_permission and a key holding those too is answered;
 * elsewhere the narrow key is. Returns the answer that went through. The trash asks per kind: its owner calls it.
 */
async function throughNarrowKey(owner: TestPrincipal, route: MatrixRoute, params: Record<string, string>, path: string): Promise<Response> {
  const opts = { body: bodyOf(route, params), vars: varsOf(route, params) };
  const needs = routePermission(route.method, path);
  if (needs === null || needs === "per-kind") return call(route.method, path, { token: owner.token, ...opts });
  const narrow = await createApiKey(owner.token, [needs]);
  const res = await call(route.method, path, { token: narrow.key, ...opts });
  if (!route.objectReads) {
    expect(res.status, `a key holding only ${needs}`).not.toBe(403);
    return res;
  }
  expect(res.status, `a key holding only ${needs}, not ${route.objectReads.join(", ")}`).toBe(403);
  const refused = (await json(res)).error;
  // The CRM family's error is an object with its code, the /api family's the code itself.
  expect(route.family === "crm" ? refused.code : refused).toBe("insufficient_permission");
  const wide = await createApiKey(owner.token, [needs, ...route.objectReads]);
  return call(route.method, path, { token: wide.key, ...opts });
}

describe("route matrix", () => {
  it.each(cases(ROUTES))("%s answers 401 in its family's shape without a token, and with a bad one", async (_, route) => {
    for (const headers of [{}, { authorization: "Bearer not-a-real-token" }] as Record<string, string>[]) {
      const params = route.unknown ?? placeholderParams(route.path);
      const res = await call(route.method, unknownPath(route), { headers, body: bodyOf(route, params), vars: varsOf(route, params) });
      expect(res.status).toBe(401);
      expect(await json(res)).toEqual(UNAUTHORIZED[route.family]);
    }
  });

  // Each seeded route with its owner on each shard (issue 24), and for each, strangers on the owner's shard (kept out
  // by the organization in every query) and on the other one (a database without the row): both answer as unknown.
  it.each(onEachShard(ROUTES.filter((r) => r.seed)))(
    "%s answers another organization exactly as an unknown id (owner on shard %i)",
    async (_, shard, route) => {
      const owner = await createPrincipal({ shard });
      const params = await route.seed!(owner);
      const vars = varsOf(route, params);
      for (const strangerShard of [shard, 1 - shard]) {
        const stranger = await createPrincipal({ shard: strangerShard });
        const foreign = await call(route.method, fillPath(route.path, params), {
          token: stranger.token,
          body: bodyOf(route, params),
          vars,
        });
        const unknown = await call(route.method, unknownPath(route), { token: stranger.token, body: bodyOf(route, params), vars });
        expect(foreign.status, `stranger on shard ${strangerShard}`).toBe(404);
        expect(unknown.status, `stranger on shard ${strangerShard}`).toBe(404);
        expect(await foreign.text(), `stranger on shard ${strangerShard}`).toBe(await unknown.text());
      }
      // The owner still has it: the strangers' requests changed nothing. On shard 0 the owner's request is made with a
      // key holding the route's permission alone (and, where the route reads more for the object, with those too).
      const own =
        shard === 0
          ? await throughNarrowKey(owner, route, params, fillPath(route.path, params))
          : await call(route.method, fillPath(route.path, params), { token: owner.token, body: bodyOf(route, params), vars });
      expect(own.status).toBeLessThan(300);
    },
  );

  // The routes on no seeded object (lists, creates) with a key holding only their permission: 403 exactly where they
  // read more than it (a contact subscription, a list's export), never elsewhere.
  it.each(alternatingShards(ROUTES.filter((r) => !r.seed)))(
    "%s answers a key holding only its permission (shard %i)",
    async (_, shard, route) => {
      const owner = await createPrincipal({ shard });
      const params = route.unknown ?? placeholderParams(route.path);
      const res = await throughNarrowKey(owner, route, params, unknownPath(route));
      expect(res.status).not.toBe(403);
    },
  );

  // A malformed body is refused before the handler reads anything: one shard per route is enough, the routes take turns.
  it.each(alternatingShards(ROUTES.filter((r) => r.body !== undefined)))(
    "%s answers malformed or non-JSON bodies with a 4xx, never a 5xx (shard %i)",
    async (_, shard, route) => {
      const owner = await createPrincipal({ shard });
      const target = route.seed ? fillPath(route.path, await route.seed(owner)) : unknownPath(route);
      const bodies: [string, string][] = [
        ["{", "application/json"],
        ['{"a":', "application/json"],
        ["null", "application/json"],
        ["[]", "application/json"],
        ['"text"', "application/json"],
        ["", "application/json"],
        ["name=x", "application/x-www-form-urlencoded"],
        ["<xml/>", "text/xml"],
      ];
      for (const [rawBody, contentType] of bodies) {
        const res = await call(route.method, target, { token: owner.token, rawBody, headers: { "content-type": contentType } });
        expect(res.status, `${rawBody} as ${contentType}`).toBeGreaterThanOrEqual(400);
        expect(res.status, `${rawBody} as ${contentType}`).toBeLessThan(500);
      }
    },
  );

  it("covers every authenticated route that /openapi.json declares", async () => {
    const doc = await json(await call("GET", "/openapi.json"));
    const declared = Object.entries(doc.paths as Record<string, Record<string, { security?: unknown[] }>>).flatMap(([p, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => (op.security ?? []).length > 0)
        .map(([method]) => `${method.toUpperCase()} ${p}`),
    );
    expect(declared.length).toBeGreaterThan(0);
    expect(declared.sort()).toEqual(ROUTES.map(name).sort());
  });
});
