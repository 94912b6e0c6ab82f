import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";

describe("API documentation", () => {
  it("serves an OpenAPI 3.1 document with the bearer scheme and every route's schemas", async () => {
    const res = await call("GET", "/openapi.json");
    expect(res.status).toBe(200);
    const doc = await json(res);
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(["Plant", "NewPlant", "Error"]));
    expect(Object.keys(doc.paths["/plants"].post.responses)).toEqual(expect.arrayContaining(["200", "400", "401"]));
    expect(Object.keys(doc.paths["/plants/{id}"].delete.responses)).toEqual(expect.arrayContaining(["204", "404"]));
    expect(doc.components.schemas.NewPlant.required.sort()).toEqual(["id", "name"]);
  });

  it("declares X-Request-Id, the shared header component, on every response of every operation", async () => {
    const doc = await json(await call("GET", "/openapi.json"));
    expect(doc.components.headers.RequestId).toMatchObject({ required: true, schema: { type: "string" } });
    const responses = Object.entries(
      doc.paths as Record<string, Record<string, { responses: Record<string, { headers?: Record<string, unknown> }> }>>,
    ).flatMap(([path, methods]) =>
      Object.entries(methods).flatMap(([method, op]) =>
        Object.entries(op.responses).map(([status, response]) => ({ at: `${method.toUpperCase()} ${path} ${status}`, response })),
      ),
    );
    expect(responses.length).toBeGreaterThan(500);
    const without = responses.filter(
      ({ response }) => (response.headers?.["X-Request-Id"] as { $ref?: string } | undefined)?.$ref !== "#/components/headers/RequestId",
    );
    expect(without.map((r) => r.at)).toEqual([]);
  });

  it("serves an interactive reference at /docs that loads /openapi.json", async () => {
    const res = await call("GET", "/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(await res.text()).toContain("/openapi.json");
  });
});
