import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../src/app";
import type { Env } from "../src/env";
import { everyShard } from "../src/shards/bindings";
import { createPrincipal } from "./helpers/factories";
import { bodyOf, fillPath, ROUTES, varsOf } from "./helpers/route-table";

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

async function fetchTracked(method: string, path: string, token: string, body: unknown, vars: Record<string, string> | undefined) {
  const { env: tracked, touched } = trackedEnv();
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined && !(body instanceof FormData)) headers["content-type"] = "application/json";
  const payload = body === undefined ? undefined : body instanceof FormData ? body : JSON.stringify(body);
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(`http://api.test${path}`, { method, headers, body: payload }), { ...tracked, ...vars }, ctx);
  await waitOnExecutionContext(ctx);
  await res.arrayBuffer();
  return { status: res.status, touched };
}

describe("no request reads more than one shard", () => {
  it.each(ROUTES.map((r, i) => [`${r.method} ${r.path}`, r, i % 2] as const))("%s reads only its organization's shard", async (_, route, shard) => {
    const owner = await createPrincipal({ shard });
    const params = route.seed ? await route.seed(owner) : {};
    const { status, touched } = await fetchTracked(route.method, fillPath(route.path, params), owner.token, bodyOf(route, params), varsOf(route, params));
    expect(status).toBeLessThan(500);
    expect([...touched]).toEqual([shard]);
  });
});
