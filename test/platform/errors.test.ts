import { createRoute, z } from "@hono/zod-openapi";
import { describe, expect, it, vi } from "vitest";
import { Conflict, NotFound } from "../../src/lib/errors";
import { loggableError } from "../../src/lib/log";
import { createPrincipal } from "../helpers/factories";
import { testApp } from "../helpers/test-app";

const Body = z.object({ email: z.email(), age: z.int().min(18), address: z.object({ city: z.string() }) }).strict();

/**
 * One route per family on the real app: a validated body, a thrown typed error, and an unexpected exception. Under
 * paths the route groups leave free and the permission table covers (an authenticated path it does not cover is
 * closed: 404): /v1/events/… (the events:read of the log) and /api/public/… (the /api family's shapes, no token).
 */
function appWithProbes() {
  const t = testApp();
  for (const prefix of ["/v1/events/probe", "/api/public/probe"]) {
    t.app.openapi(
      createRoute({
        method: "post",
        path: prefix,
        request: { body: { required: true, content: { "application/json": { schema: Body } } } },
        responses: { 200: { description: "ok" } },
      }),
      (c) => c.json({ ok: true }, 200),
    );
    t.app.get(`${prefix}/missing`, () => {
      throw new NotFound("Contact");
    });
    t.app.get(`${prefix}/conflict`, () => {
      throw new Conflict("A contact with this e-mail exists", "duplicate_email");
    });
    t.app.get(`${prefix}/boom`, () => {
      throw new Error("database exploded at /secret/path");
    });
  }
  return t;
}

const badBody = JSON.stringify({ email: "not-an-email", address: { city: 5 }, extra: true });

describe("CRM family (/v1)", () => {
  it("422 validation_error lists every problem with field, code and message", async () => {
    const { token } = await createPrincipal();
    const res = await appWithProbes().fetch("POST", "/v1/events/probe", {
      token,
      body: badBody,
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(422);
    const body = await res.json<any>();
    expect(body).toMatchObject({
      success: false,
      error: { type: "validation_error", title: expect.any(String), status: 422, detail: expect.any(String) },
    });
    expect(body.error.errors).toEqual(
      expect.arrayContaining([
        { field: "email", code: "invalid_email", message: expect.any(String) },
        { field: "age", code: "required", message: "Required" },
        { field: "address.city", code: "invalid_type", message: expect.any(String) },
        { field: "extra", code: "unknown_field", message: expect.any(String) },
      ]),
    );
    expect(body.error.errors).toHaveLength(4);
  });

  it("400 invalid_request_error for malformed JSON, 415 for another content type", async () => {
    const { token } = await createPrincipal();
    const t = appWithProbes();
    const malformed = await t.fetch("POST", "/v1/events/probe", { token, body: "{nope", headers: { "content-type": "application/json" } });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ success: false, error: { type: "invalid_request_error", status: 400 } });
    const wrongType = await t.fetch("POST", "/v1/events/probe", { token, body: "a=b", headers: { "content-type": "text/plain" } });
    expect(wrongType.status).toBe(415);
    expect(await wrongType.json()).toMatchObject({ success: false, error: { status: 415 } });
  });

  it("404 not_found_error and 409 conflict_error from typed errors", async () => {
    const { token } = await createPrincipal();
    const t = appWithProbes();
    const missing = await t.fetch("GET", "/v1/events/probe/missing", { token });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({
      success: false,
      error: { type: "not_found_error", code: "not_found", title: "Not Found", status: 404, detail: "Contact not found", errors: [] },
    });
    const conflict = await t.fetch("GET", "/v1/events/probe/conflict", { token });
    expect(conflict.status).toBe(409);
    expect(await conflict.json()).toMatchObject({
      success: false,
      error: { type: "conflict_error", code: "duplicate_email", status: 409 },
    });
  });
});

describe("document and reputation family (/api)", () => {
  it("400 invalid_request with issues [{field, path[], code, message}] listing every problem", async () => {
    const { token } = await createPrincipal();
    const res = await appWithProbes().fetch("POST", "/api/public/probe", {
      token,
      body: badBody,
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(400);
    const body = await res.json<any>();
    expect(body.error).toBe("invalid_request");
    expect(body.issues.map((i: any) => i.path)).toEqual(expect.arrayContaining([["email"], ["age"], ["address", "city"], ["extra"]]));
    for (const issue of body.issues)
      expect(issue).toEqual({ field: expect.any(String), path: expect.any(Array), code: expect.any(String), message: expect.any(String) });
  });

  it("409 {error: code, message} for a refused move", async () => {
    const { token } = await createPrincipal();
    const res = await appWithProbes().fetch("GET", "/api/public/probe/conflict", { token });
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ error: "duplicate_email", message: "A contact with this e-mail exists" });
  });
});

describe("unexpected exceptions", () => {
  it.each(["/v1/events/probe/boom", "/api/public/probe/boom"])(
    "%s answers 500 with the request id, logged, and no stack or message",
    async (path) => {
      const { token } = await createPrincipal();
      const log = vi.spyOn(console, "error").mockImplementation(() => {});
      const res = await appWithProbes().fetch("GET", path, { token, headers: { "x-request-id": "req-test-123" } });
      expect(res.status).toBe(500);
      const text = await res.text();
      expect(text).toContain("req-test-123");
      expect(text).not.toContain("exploded");
      expect(text).not.toMatch(/at .*\.ts|\/secret\/path/);
      expect(res.headers.get("x-request-id")).toBe("req-test-123");
      expect(log).toHaveBeenCalledWith(expect.stringContaining("req-test-123"));
      expect(log.mock.calls.flat().join(" ")).not.toContain(token);
      log.mockRestore();
    },
  );
});

describe("error logs", () => {
  it("keep the failed SQL and the database's message but never the bound values", () => {
    const err = new Error("Failed query: insert into contacts (email) values (?)\nparams: ann@private.test", {
      cause: new Error("UNIQUE constraint failed: contacts.email_key"),
    });
    const logged = loggableError(err);
    expect(logged).toContain("Failed query: insert into contacts");
    expect(logged).toContain("UNIQUE constraint failed");
    expect(logged).not.toContain("ann@private.test");
  });
});
