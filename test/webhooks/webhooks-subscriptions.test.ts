import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, json } from "../helpers/client";
import { createApiKey } from "../helpers/api-keys";
import { createPrincipal, tenantDb } from "../helpers/factories";
import { receiverUrl } from "../helpers/receiver";
import { subscribe } from "../helpers/webhooks";
import { testApp } from "../helpers/test-app";

const sink = () => `${receiverUrl()}/hooks/sink`;
const validation = (field: string, code: string) => ({
  success: false,
  error: expect.objectContaining({
    type: "validation_error",
    status: 422,
    errors: expect.arrayContaining([expect.objectContaining({ field, code })]),
  }),
});

describe("webhook subscriptions", () => {
  it("creates with the spec's fields, shows the secret once, and keeps it encrypted at rest", async () => {
    const owner = await createPrincipal();
    const body = {
      url: sink(),
      events: ["contact.created", "deal.won"],
      secret: "my-own-secret-of-24-chars",
      enabled: true,
      description: "CRM sync",
      filters: { "contact.leadScore": { gte: 80 } },
    };
    const res = await call("POST", "/v1/webhooks", { token: owner.token, body });
    expect(res.status).toBe(201);
    const created = (await json(res)).data;
    expect(created).toMatchObject({ ...body, id: expect.any(String), disabledReason: null, createdAt: expect.any(String) });
    const read = (await json(await call("GET", `/v1/webhooks/${created.id}`, { token: owner.token }))).data;
    expect(read).not.toHaveProperty("secret");
    const { secret: _, ...rest } = created;
    expect(read).toEqual(rest);
    const row = await (await tenantDb(owner.organizationId))
      .prepare("SELECT * FROM webhook_subscriptions WHERE id = ?")
      .bind(created.id)
      .first<Record<string, unknown>>();
    expect(JSON.stringify(row)).not.toContain(body.secret);
    expect(row!.secret_ciphertext).toMatch(/^v1\./);
  });

  it("generates a secret when none is given; defaults enabled, description and filters", async () => {
    const owner = await createPrincipal();
    const created = await subscribe(owner, { url: sink() });
    expect(created).toMatchObject({
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      enabled: true,
      description: "",
      filters: {},
    });
  });

  it("lists newest first with keyset pagination, without secrets, only the caller's", async () => {
    const owner = await createPrincipal();
    const other = await createPrincipal();
    await subscribe(other, { url: sink() });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await subscribe(owner, { url: sink(), description: `n${i}` })).id);
    const first = await json(await call("GET", "/v1/webhooks?limit=2", { token: owner.token }));
    expect(first.data.map((w: { id: string }) => w.id)).toEqual([ids[2], ids[1]]);
    expect(first.pagination).toEqual({ hasMore: true, nextCursor: expect.any(String), total: 3, limit: 2 });
    expect(JSON.stringify(first)).not.toContain("secret");
    const second = await json(await call("GET", `/v1/webhooks?limit=2&cursor=${first.pagination.nextCursor}`, { token: owner.token }));
    expect(second.data.map((w: { id: string }) => w.id)).toEqual([ids[0]]);
    expect(second.pagination).toMatchObject({ hasMore: false, nextCursor: null });
    const bad = await call("GET", "/v1/webhooks?limit=0&cursor=garbage", { token: owner.token });
    expect(bad.status).toBe(422);
    expect(await json(bad)).toMatchObject(validation("limit", "too_small"));
    expect(await json(await call("GET", "/v1/webhooks?cursor=%%%", { token: owner.token }))).toMatchObject(
      validation("cursor", "invalid_cursor"),
    );
  });

  it("updates url, events, filters, enabled and description; rotation returns a new secret once", async () => {
    const owner = await createPrincipal();
    const created = await subscribe(owner, { url: sink() });
    const patch = {
      url: `${sink()}?v=2`,
      events: ["property.price_changed"],
      filters: { "property.listing.listPrice": { lt: 500000 } },
      enabled: false,
      description: "new",
    };
    const updated = await json(await call("PATCH", `/v1/webhooks/${created.id}`, { token: owner.token, body: patch }));
    expect(updated.data).toMatchObject(patch);
    expect(updated.data).not.toHaveProperty("secret");
    const rotated = await json(await call("PATCH", `/v1/webhooks/${created.id}`, { token: owner.token, body: { rotateSecret: true } }));
    expect(rotated.data.secret).toMatch(/^whsec_/);
    expect(rotated.data.secret).not.toBe(created.secret);
    const chosen = await json(
      await call("PATCH", `/v1/webhooks/${created.id}`, { token: owner.token, body: { secret: "another-secret-of-enough-length" } }),
    );
    expect(chosen.data.secret).toBe("another-secret-of-enough-length");
    expect((await json(await call("GET", `/v1/webhooks/${created.id}`, { token: owner.token }))).data).not.toHaveProperty("secret");
  });

  it("deletes the subscription with its delivery log", async () => {
    const owner = await createPrincipal();
    const created = await subscribe(owner, { url: sink() });
    await call("POST", `/v1/webhooks/${created.id}/test`, { token: owner.token });
    const res = await call("DELETE", `/v1/webhooks/${created.id}`, { token: owner.token });
    expect(await json(res)).toEqual({ success: true, data: { id: created.id, deleted: true } });
    expect((await call("GET", `/v1/webhooks/${created.id}`, { token: owner.token })).status).toBe(404);
    expect(
      await (await tenantDb(owner.organizationId))
        .prepare("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE subscription_id = ?")
        .bind(created.id)
        .first("n"),
    ).toBe(0);
  });

  it("refuses test and replay on a disabled webhook with 409; unknown delivery or event ids are 404", async () => {
    const owner = await createPrincipal();
    const created = await subscribe(owner, { url: sink(), enabled: false });
    const test = await call("POST", `/v1/webhooks/${created.id}/test`, { token: owner.token });
    expect(test.status).toBe(409);
    expect(await json(test)).toMatchObject({ success: false, error: { type: "conflict_error", status: 409 } });
    await call("PATCH", `/v1/webhooks/${created.id}`, { token: owner.token, body: { enabled: true } });
    const unknownDelivery = await call("POST", `/v1/webhooks/${created.id}/deliveries/${crypto.randomUUID()}/replay`, {
      token: owner.token,
    });
    expect(await json(unknownDelivery)).toMatchObject({ success: false, error: { type: "not_found_error", detail: "Delivery not found" } });
    const unknownEvent = await call("POST", `/v1/webhooks/${created.id}/events/${crypto.randomUUID()}/replay`, { token: owner.token });
    expect(await json(unknownEvent)).toMatchObject({ success: false, error: { type: "not_found_error", detail: "Event not found" } });
  });

  it("lists a refused URL together with the schema problems of the same body", async () => {
    const owner = await createPrincipal();
    const res = await call("POST", "/v1/webhooks", {
      token: owner.token,
      body: { url: "https://user:pw@10.0.0.1/x", events: ["nope.event"], description: 5 },
    });
    expect(res.status).toBe(422);
    const fields = (await json(res)).error.errors.map((e: { field: string }) => e.field);
    expect(fields).toEqual(expect.arrayContaining(["url", "events.0", "description"]));
  });

  it("answers bad input to every route with the CRM error body", async () => {
    const owner = await createPrincipal();
    const id = (await subscribe(owner, { url: sink() })).id;
    const cases: [string, string, unknown, string, string][] = [
      ["POST", "/v1/webhooks", { url: sink() }, "events", "required"],
      ["POST", "/v1/webhooks", { url: sink(), events: ["contact.exploded"] }, "events.0", "invalid_enum_value"],
      ["POST", "/v1/webhooks", { url: sink(), events: [] }, "events", "too_small"],
      ["POST", "/v1/webhooks", { url: sink(), events: ["contact.created", "contact.created"] }, "events", "duplicate_event"],
      ["POST", "/v1/webhooks", { url: "not a url", events: ["contact.created"] }, "url", "invalid_url"],
      ["POST", "/v1/webhooks", { url: sink(), events: ["contact.created"], colour: "red" }, "colour", "unknown_field"],
      ["POST", "/v1/webhooks", { url: sink(), events: ["contact.created"], secret: "short" }, "secret", "too_small"],
      ["POST", "/v1/webhooks", { url: sink(), events: ["contact.created"], enabled: "yes" }, "enabled", "invalid_type"],
      [
        "POST",
        "/v1/webhooks",
        { url: sink(), events: ["contact.created"], filters: { "contact.leadScore": { around: 3 } } },
        "filters.contact.leadScore.around",
        "unknown_field",
      ],
      [
        "POST",
        "/v1/webhooks",
        { url: sink(), events: ["contact.created"], filters: { leadScore: { gte: 3 } } },
        "filters.leadScore",
        "invalid_key",
      ],
      [
        "POST",
        "/v1/webhooks",
        { url: sink(), events: ["contact.created"], filters: { "contact.source": { in: "WEBSITE" } } },
        "filters.contact.source.in",
        "invalid_type",
      ],
      ["PATCH", `/v1/webhooks/${id}`, {}, "", "empty_update"],
      ["PATCH", `/v1/webhooks/${id}`, { rotateSecret: true, secret: "a-secret-long-enough-here" }, "rotateSecret", "conflicting_fields"],
      ["PATCH", `/v1/webhooks/${id}`, { url: "ftp://example.com/x" }, "url", "https_required"],
      ["PATCH", "/v1/webhooks/not-a-uuid", { enabled: true }, "id", "invalid_uuid"],
      ["GET", "/v1/webhooks/not-a-uuid", undefined, "id", "invalid_uuid"],
      ["DELETE", "/v1/webhooks/42", undefined, "id", "invalid_uuid"],
      ["POST", "/v1/webhooks/42/test", undefined, "id", "invalid_uuid"],
      ["GET", `/v1/webhooks/${id}/deliveries?status=lost`, undefined, "status", "invalid_enum_value"],
      ["GET", `/v1/webhooks/${id}/deliveries?limit=101`, undefined, "limit", "too_big"],
      ["POST", `/v1/webhooks/${id}/deliveries/nope/replay`, undefined, "deliveryId", "invalid_uuid"],
    ];
    for (const [method, path, body, field, code] of cases) {
      const res = await call(method, path, { token: owner.token, body });
      expect(res.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(422);
      expect(await json(res), `${method} ${path} ${JSON.stringify(body)}`).toMatchObject(validation(field, code));
    }
  });

  it("is unavailable, not broken, without WEBHOOK_SECRET_KEY", async () => {
    const owner = await createPrincipal();
    const t = testApp();
    const { createExecutionContext } = await import("cloudflare:test");
    const res = await t.app.fetch(
      new Request("http://api.test/v1/webhooks", {
        method: "POST",
        headers: { authorization: `Bearer ${owner.token}`, "content-type": "application/json" },
        body: JSON.stringify({ url: sink(), events: ["contact.created"] }),
      }),
      { ...env, WEBHOOK_SECRET_KEY: "" },
      createExecutionContext(),
    );
    expect(res.status).toBe(503);
    expect(await json(res)).toMatchObject({ success: false, error: { status: 503, detail: "WEBHOOK_SECRET_KEY is not configured" } });
  });
});

describe("webhook routes in /openapi.json", () => {
  it("documents every route with its success and error responses", async () => {
    const doc = await json(await call("GET", "/openapi.json"));
    const expected: [string, string, string[]][] = [
      ["/v1/webhooks", "post", ["201", "400", "401", "413", "415", "422", "503"]],
      ["/v1/webhooks", "get", ["200", "401", "422"]],
      ["/v1/webhooks/{id}", "get", ["200", "401", "404", "422"]],
      ["/v1/webhooks/{id}", "patch", ["200", "400", "401", "404", "422", "503"]],
      ["/v1/webhooks/{id}", "delete", ["200", "401", "404", "422"]],
      ["/v1/webhooks/{id}/test", "post", ["202", "401", "404", "409", "422"]],
      ["/v1/webhooks/{id}/deliveries", "get", ["200", "401", "404", "422"]],
      ["/v1/webhooks/{id}/deliveries/{deliveryId}/replay", "post", ["202", "401", "404", "409", "422"]],
      ["/v1/webhooks/{id}/events/{eventId}/replay", "post", ["202", "401", "404", "409", "422"]],
    ];
    for (const [path, method, statuses] of expected) {
      const op = doc.paths[path]?.[method];
      expect(op, `${method} ${path}`).toBeDefined();
      expect(Object.keys(op.responses), `${method} ${path}`).toEqual(expect.arrayContaining(statuses));
      expect(op.security).toEqual([{ bearerAuth: [] }]);
    }
    expect(doc.components.schemas.CreateWebhook.properties.events.items.enum).toContain("property.price_changed");
    expect(doc.components.schemas.Webhook.properties).not.toHaveProperty("secret");
  });
});

describe("what a subscription may carry (issue 33 follow-up of 32)", () => {
  it("needs the read permission of each event's object: a key with webhooks:manage alone cannot have contacts sent away", async () => {
    const owner = await createPrincipal();
    const narrow = await createApiKey(owner.token, ["webhooks:manage"]);
    const wide = await createApiKey(owner.token, ["webhooks:manage", "contacts:read"]);
    const body = { url: sink(), events: ["contact.created"] };
    const refused = await call("POST", "/v1/webhooks", { token: narrow.key, body });
    expect(refused.status).toBe(403);
    expect((await json(refused)).error).toMatchObject({ code: "insufficient_permission" });
    const created = await call("POST", "/v1/webhooks", { token: wide.key, body });
    expect(created.status).toBe(201);
    const id = (await json(created)).data.id;
    // Widening an existing subscription is held to the same rule, and so is any other change of it (issue 40).
    const widened = await call("PATCH", `/v1/webhooks/${id}`, { token: narrow.key, body: { events: ["contact.created", "deal.won"] } });
    expect(widened.status).toBe(403);
    expect((await call("PATCH", `/v1/webhooks/${id}`, { token: wide.key, body: { description: "renamed" } })).status).toBe(200);
    const hook = (await json(await call("GET", `/v1/webhooks/${id}`, { token: owner.token }))).data;
    expect(hook).toMatchObject({ events: ["contact.created"], description: "renamed" });
  });

  // Issue 40: a key with webhooks:manage alone redirected the owner's contact subscription with a PATCH of its URL, then
  // replayed past deliveries to it. Every write of a subscription needs what reading its events needs.
  it("refuses a key that cannot read contacts every write of a contact subscription: URL, secret, replays, recover", async () => {
    const owner = await createPrincipal();
    const narrow = await createApiKey(owner.token, ["webhooks:manage"]);
    const wide = await createApiKey(owner.token, ["webhooks:manage", "contacts:read"]);
    const { id } = await subscribe(owner, { url: sink(), events: ["contact.created"] });
    const test = await call("POST", `/v1/webhooks/${id}/test`, { token: narrow.key });
    expect(test.status).toBe(202);
    const deliveryId = (await json(test)).data.id as string;
    await settled(owner.token, id);
    const eventId = (await json(await call("GET", `/v1/webhooks/${id}/deliveries`, { token: owner.token }))).data[0].eventId as string;
    const since = new Date(Date.now() - 60_000).toISOString();
    const attacker = `${receiverUrl()}/hooks/attacker`;
    const writes: [string, string, Record<string, unknown> | undefined][] = [
      ["PATCH", `/v1/webhooks/${id}`, { url: attacker }],
      ["PATCH", `/v1/webhooks/${id}`, { enabled: true }],
      ["POST", `/v1/webhooks/${id}/rotate-secret`, { overlapSeconds: 0 }],
      ["POST", `/v1/webhooks/${id}/deliveries/${deliveryId}/replay`, undefined],
      ["POST", `/v1/webhooks/${id}/events/${eventId}/replay`, undefined],
      ["POST", `/v1/webhooks/${id}/recover`, { since }],
    ];
    for (const [method, path, body] of writes) {
      const res = await call(method as "POST", path, { token: narrow.key, body });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect((await json(res)).error, `${method} ${path}`).toMatchObject({ code: "insufficient_permission" });
    }
    const hook = (await json(await call("GET", `/v1/webhooks/${id}`, { token: owner.token }))).data;
    expect(hook.url).toBe(sink());
    // The same writes with contacts:read go through; the narrow key keeps what only the subscription itself carries.
    expect((await call("PATCH", `/v1/webhooks/${id}`, { token: wide.key, body: { url: `${sink()}?moved=1` } })).status).toBe(200);
    expect((await call("POST", `/v1/webhooks/${id}/rotate-secret`, { token: wide.key, body: { overlapSeconds: 0 } })).status).toBe(200);
    expect((await call("POST", `/v1/webhooks/${id}/deliveries/${deliveryId}/replay`, { token: wide.key })).status).toBe(202);
    const own = await subscribe(owner, { url: sink(), events: ["webhook.endpoint_disabled"] });
    expect((await call("PATCH", `/v1/webhooks/${own.id}`, { token: narrow.key, body: { url: attacker } })).status).toBe(200);
  });

  it("needs the read permission of what a replay or recover would send even after the subscription was narrowed", async () => {
    const owner = await createPrincipal();
    const deals = await createApiKey(owner.token, ["webhooks:manage", "deals:read"]);
    const { id } = await subscribe(owner, { url: sink(), events: ["contact.created", "deal.created"] });
    const contact = await call("POST", "/v1/contacts", {
      token: owner.token,
      body: { firstName: "Nia", lastName: "Narrowed", email: `nia-${owner.userId}@example.test` },
    });
    expect(contact.status).toBe(201);
    const delivery = await settled(owner.token, id);
    expect(delivery.event).toBe("contact.created");
    // The owner narrows it to deals: the key reaches every event it now holds, not the contact delivery it would re-send.
    expect((await call("PATCH", `/v1/webhooks/${id}`, { token: owner.token, body: { events: ["deal.created"] } })).status).toBe(200);
    const replay = await call("POST", `/v1/webhooks/${id}/deliveries/${delivery.id}/replay`, { token: deals.key });
    expect(replay.status).toBe(403);
    expect((await call("PATCH", `/v1/webhooks/${id}`, { token: deals.key, body: { description: "deals only" } })).status).toBe(200);
  });
});

/** The newest delivery of the subscription once its retry chain has ended (the test receiver's sink answers 200). */
async function settled(token: string, id: string): Promise<{ id: string; event: string; eventId: string; status: string }> {
  for (let i = 0; i < 150; i++) {
    const log = (await json(await call("GET", `/v1/webhooks/${id}/deliveries`, { token }))).data as {
      id: string;
      event: string;
      eventId: string;
      status: string;
    }[];
    if (log[0] && ["delivered", "failed", "dead"].includes(log[0].status)) return log[0];
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("the delivery did not settle");
}
