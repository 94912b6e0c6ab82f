// The developer contracts of DESIGN.md, run as a user runs them: `npm run dev` serves the API on 127.0.0.1:$PORT
// with local D1 migrated, and `npm run --silent token` prints a working token while it runs.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiClient } from "../../src/client";
import { mintToken as token, startDev } from "./helpers/dev-server";

const run = promisify(execFile);
let dev: Awaited<ReturnType<typeof startDev>>;
let base = "";

beforeAll(async () => {
  dev = await startDev();
  base = dev.base;
});

afterAll(() => dev?.stop());

describe("npm run dev + npm run token", () => {
  it("serves /openapi.json and /docs", async () => {
    expect(((await (await fetch(`${base}/openapi.json`)).json()) as { openapi: string }).openapi).toBe("3.1.0");
    const docs = await fetch(`${base}/docs`);
    expect(docs.status).toBe(200);
    expect(docs.headers.get("content-type")).toContain("text/html");
  });

  it("mints a working token per call, mapping the same org and email to the same ids", async () => {
    const org = `E2E Realty ${Date.now()}`;
    const first = await token(org, "agent@e2e.test");
    const second = await token(org, "agent@e2e.test");
    const colleague = await token(org, "colleague@e2e.test");
    const elsewhere = await token(`${org} West`, "agent@e2e.test");
    expect(second.organizationId).toBe(first.organizationId);
    expect(second.userId).toBe(first.userId);
    expect(second.token).not.toBe(first.token);
    expect(colleague.organizationId).toBe(first.organizationId);
    expect(colleague.userId).not.toBe(first.userId);
    expect(elsewhere.organizationId).not.toBe(first.organizationId);

    // Through the typed client (src/client), as a TypeScript caller would.
    const api = (t?: string) => createApiClient(base, t);
    const created = await api(first.token).POST("/plants", { body: { id: 77, name: "Basil", tag: "herb" } });
    expect(created.response.status).toBe(200);
    expect(created.data).toEqual({ name: "Basil", tag: "herb" });
    // Both tokens of the same user work; the other organization cannot see the plant.
    const plant = { params: { path: { id: 77 } } };
    expect((await api(elsewhere.token).DELETE("/plants/{id}", plant)).error).toMatchObject({ error: 404 });
    expect((await api(second.token).DELETE("/plants/{id}", plant)).response.status).toBe(204);
    expect((await api().DELETE("/plants/{id}", plant)).response.status).toBe(401);
  });

  it("works the contacts API through the typed client: create, conditional update, list", async () => {
    const { token: t } = await token(`E2E Typed ${Date.now()}`, "typed@e2e.test");
    const api = createApiClient(base, t);
    const created = await api.POST("/v1/contacts", { body: { firstName: "Ada", lastName: "Typed", email: "ada@e2e.test", tags: ["e2e"] } });
    expect(created.response.status).toBe(201);
    const id = created.data!.data.id;
    const etag = created.response.headers.get("etag")!;
    const path = { params: { path: { id } } };
    const updated = await api.PUT("/v1/contacts/{id}", { ...path, body: { notes: "typed" }, headers: { "If-Match": etag } });
    expect(updated.data?.data.notes).toBe("typed");
    const stale = await api.PUT("/v1/contacts/{id}", { ...path, body: { notes: "stale" }, headers: { "If-Match": etag } });
    expect(stale.response.status).toBe(412);
    expect(stale.error?.error.type).toBe("precondition_failed_error");
    const listed = await api.GET("/v1/contacts", { params: { query: { limit: 10, tags: "e2e" } } });
    expect(listed.data?.data.map((c) => c.id)).toEqual([id]);
    expect(listed.response.headers.get("x-d1-bookmark")).toMatch(/^[0-9a-f-]+$/);
  });

  it("refuses a call without --org or --email", async () => {
    await expect(run("npm", ["run", "--silent", "token", "--", "--org", "Only Org"], { cwd: process.cwd() })).rejects.toMatchObject({ code: 2 });
  });
});
