import { describe, expect, it } from "vitest";
import { ROLE_PERMISSIONS, routePermission } from "../../src/platform/permissions";
import { call, json } from "../helpers/client";
import { createPrincipal } from "../helpers/factories";
import { bodyOf, fillPath, ROUTES, varsOf } from "../helpers/route-table";

const name = (r: { method: string; path: string }) => `${r.method} ${r.path}`;
const placeholders = (path: string) =>
  Object.fromEntries([...path.matchAll(/\{(\w+)\}/g)].map((m) => [m[1]!, "00000000-0000-4000-8000-000000000000"]));

describe("permissions and roles (issue 32)", () => {
  it("names the permission every authenticated route needs", () => {
    const uncovered = ROUTES.filter((r) => routePermission(r.method, fillPath(r.path, placeholders(r.path))) === null).map(name);
    expect(uncovered).toEqual([]);
  });

  // Every route an agent's role does not allow answers 403 insufficient_role before it reads anything, whatever the id.
  const managing = ROUTES.filter((r) => {
    const needs = routePermission(r.method, fillPath(r.path, placeholders(r.path)));
    return needs !== null && needs !== "per-kind" && !ROLE_PERMISSIONS.agent.includes(needs);
  });
  it.each(managing.map((r) => [name(r), r] as const))("%s refuses an agent with 403 insufficient_role", async (_, route) => {
    const agent = await createPrincipal({ role: "agent" });
    const params = route.unknown ?? placeholders(route.path);
    const res = await call(route.method, fillPath(route.path, params), {
      token: agent.token,
      body: bodyOf(route, params),
      vars: varsOf(route, params),
    });
    expect(res.status).toBe(403);
    expect(JSON.stringify(await json(res))).toContain("insufficient_role");
  });

  it("lets an agent do an agent's work, and an owner or admin manage", async () => {
    expect(managing.length).toBeGreaterThan(0);
    const agent = await createPrincipal({ role: "agent" });
    const created = await call("POST", "/v1/contacts", {
      token: agent.token,
      body: { firstName: "Ada", lastName: "Agent", email: `ada-${agent.userId}@example.test` },
    });
    expect(created.status).toBe(201);
    expect((await call("GET", "/v1/contacts", { token: agent.token })).status).toBe(200);
    for (const role of ["owner", "admin"] as const) {
      const manager = await createPrincipal({ role });
      expect((await call("GET", "/v1/webhooks", { token: manager.token })).status).toBe(200);
    }
  });

  it("answers a path no route has with 404, not a permission error", async () => {
    const owner = await createPrincipal();
    expect((await call("GET", "/v1/nothing-here", { token: owner.token })).status).toBe(404);
    expect((await call("GET", "/api/nothing-here", { token: owner.token })).status).toBe(404);
  });
});
