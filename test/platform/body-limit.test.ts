import { createRoute, z } from "@hono/zod-openapi";
import { describe, expect, it } from "vitest";
import { DEFAULT_BODY_LIMIT_BYTES, limitBody } from "../../src/platform/body-limit";
import { call, json } from "../helpers/client";
import { createPrincipal } from "../helpers/factories";
import { testApp } from "../helpers/test-app";

const big = (bytes: number) => JSON.stringify({ id: 1, name: "x".repeat(bytes) });

describe("body size limits", () => {
  it("answers 413 for a body over the default limit, in the plant store's Error shape", async () => {
    const { token } = await createPrincipal();
    const res = await call("POST", "/plants", {
      token,
      rawBody: big(DEFAULT_BODY_LIMIT_BYTES),
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(413);
    expect(await json(res)).toEqual({ error: 413, message: expect.stringContaining(String(DEFAULT_BODY_LIMIT_BYTES)) });
  });

  it("counts a streamed body without Content-Length and still answers 413", async () => {
    const { token } = await createPrincipal();
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > DEFAULT_BODY_LIMIT_BYTES * 2) return controller.close();
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    const t = testApp();
    const res = await t.fetch("POST", "/plants", { token, body: stream, headers: { "content-type": "application/json" } });
    expect(res.status).toBe(413);
  });

  it("takes a smaller limit per route, refused before the handler or the parser runs", async () => {
    const t = testApp();
    let handled = 0;
    t.app.openapi(
      createRoute({
        method: "post",
        path: "/api/public/probe",
        middleware: [limitBody(1024)],
        request: { body: { required: true, content: { "application/json": { schema: z.object({ notes: z.string() }) } } } },
        responses: { 200: { description: "ok" } },
      }),
      (c) => {
        handled++;
        return c.json({ ok: true }, 200);
      },
    );
    const small = await t.fetch("POST", "/api/public/probe", {
      body: JSON.stringify({ notes: "hi" }),
      headers: { "content-type": "application/json" },
    });
    expect(small.status).toBe(200);
    const large = await t.fetch("POST", "/api/public/probe", {
      body: JSON.stringify({ notes: "x".repeat(2000) }),
      headers: { "content-type": "application/json" },
    });
    expect(large.status).toBe(413);
    expect(await large.json()).toEqual({ error: "payload_too_large", message: expect.any(String) });
    expect(handled).toBe(1);
  });
});
