import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createPrincipal, tenantDb } from "../helpers/factories";

/** Spec: "Sample plant store". Statuses 200/400 on create, 204/404 on delete, the Error body {error: int32, message}. */
describe("POST /plants", () => {
  it("answers 200 with the Plant (name, tag) and stores it in the caller's organization", async () => {
    const { token, organizationId } = await createPrincipal();
    const res = await call("POST", "/plants", { token, body: { id: 1, name: "Monstera", tag: "tropical" } });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ name: "Monstera", tag: "tropical" });
    const row = await (await tenantDb(organizationId))
      .prepare("SELECT name, tag FROM plants WHERE organization_id = ? AND id = 1")
      .bind(organizationId)
      .first();
    expect(row).toEqual({ name: "Monstera", tag: "tropical" });
  });

  it("leaves tag out of the answer when the plant has none", async () => {
    const { token } = await createPrincipal();
    const res = await call("POST", "/plants", { token, body: { id: 2, name: "Fern" } });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ name: "Fern" });
  });

  it("replaces the plant when the id already exists in the organization", async () => {
    const { token } = await createPrincipal();
    await call("POST", "/plants", { token, body: { id: 3, name: "Cactus", tag: "desert" } });
    const res = await call("POST", "/plants", { token, body: { id: 3, name: "Saguaro" } });
    expect(await json(res)).toEqual({ name: "Saguaro" });
    expect((await call("DELETE", "/plants/3", { token })).status).toBe(204);
    expect((await call("DELETE", "/plants/3", { token })).status).toBe(404);
  });

  it("keeps the same id apart in two organizations", async () => {
    // On one shard: apart by organization, not by database.
    const a = await createPrincipal({ shard: 0 });
    const b = await createPrincipal({ shard: 0 });
    await call("POST", "/plants", { token: a.token, body: { id: 7, name: "A's plant" } });
    await call("POST", "/plants", { token: b.token, body: { id: 7, name: "B's plant" } });
    expect((await call("DELETE", "/plants/7", { token: a.token })).status).toBe(204);
    const left = await (await tenantDb(b.organizationId))
      .prepare("SELECT name FROM plants WHERE id = 7 AND organization_id = ?")
      .bind(b.organizationId)
      .first();
    expect(left).toEqual({ name: "B's plant" });
  });

  it.each([
    ["id missing", { name: "Fern" }, ["id"]],
    ["name missing", { id: 1 }, ["name"]],
    ["both missing", {}, ["id", "name"]],
    ["id not an integer", { id: 1.5, name: "Fern" }, ["id"]],
    ["id a string", { id: "1", name: "Fern" }, ["id"]],
    ["name empty", { id: 1, name: "" }, ["name"]],
    ["tag not a string", { id: 1, name: "Fern", tag: 5 }, ["tag"]],
    ["id beyond 2^53", { id: 2 ** 60, name: "Fern" }, ["id"]],
  ])("answers 400 Error when %s, naming every bad field", async (_, body, fields) => {
    const { token } = await createPrincipal();
    const res = await call("POST", "/plants", { token, body });
    expect(res.status).toBe(400);
    const err = await json(res);
    expect(err).toEqual({ error: 400, message: expect.any(String) });
    for (const field of fields) expect(err.message).toContain(`${field}:`);
  });

  it("answers 400 Error for malformed JSON and for a body that is not an object", async () => {
    const { token } = await createPrincipal();
    for (const rawBody of ["{", "[1,2]", "null", ""]) {
      const res = await call("POST", "/plants", { token, rawBody, headers: { "content-type": "application/json" } });
      expect(res.status, rawBody).toBe(400);
      expect(await json(res)).toEqual({ error: 400, message: expect.any(String) });
    }
  });

  it("answers 415 Error when the body is not JSON", async () => {
    const { token } = await createPrincipal();
    const res = await call("POST", "/plants", {
      token,
      rawBody: "id=1&name=Fern",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(res.status).toBe(415);
    expect(await json(res)).toEqual({ error: 415, message: expect.any(String) });
  });

  it("answers 401 Error without a token", async () => {
    const res = await call("POST", "/plants", { body: { id: 1, name: "Fern" } });
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual({ error: 401, message: expect.any(String) });
  });
});

describe("DELETE /plants/{id}", () => {
  it("answers 204 with no body, and the plant is gone", async () => {
    const { token, organizationId } = await createPrincipal();
    await call("POST", "/plants", { token, body: { id: 11, name: "Ivy" } });
    const res = await call("DELETE", "/plants/11", { token });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
    const row = await (await tenantDb(organizationId))
      .prepare("SELECT 1 FROM plants WHERE organization_id = ? AND id = 11")
      .bind(organizationId)
      .first();
    expect(row).toBeNull();
  });

  it("answers 404 with the Error body for an unknown id", async () => {
    const { token } = await createPrincipal();
    const res = await call("DELETE", "/plants/999", { token });
    expect(res.status).toBe(404);
    expect(await json(res)).toEqual({ error: 404, message: expect.any(String) });
  });

  it("answers 404, not 403, for another organization's plant, and leaves it in place", async () => {
    const owner = await createPrincipal();
    const other = await createPrincipal();
    await call("POST", "/plants", { token: owner.token, body: { id: 12, name: "Palm" } });
    const res = await call("DELETE", "/plants/12", { token: other.token });
    expect(res.status).toBe(404);
    expect(await json(res)).toEqual(await json(await call("DELETE", "/plants/424242", { token: other.token })));
    expect((await call("DELETE", "/plants/12", { token: owner.token })).status).toBe(204);
  });

  it("answers 400 Error for an id that is not an integer", async () => {
    const { token } = await createPrincipal();
    for (const id of ["abc", "1.5", "99999999999999999999"]) {
      const res = await call("DELETE", `/plants/${id}`, { token });
      expect(res.status, id).toBe(400);
      expect(await json(res)).toEqual({ error: 400, message: expect.any(String) });
    }
  });

  it("answers 401 Error without a token", async () => {
    const res = await call("DELETE", "/plants/1");
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual({ error: 401, message: expect.any(String) });
  });
});
