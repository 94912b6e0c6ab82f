import { describe, expect, it } from "vitest";
import { MAX_DELIVERY_RETRIES } from "../../src/webhooks/backoff";
import { MAX_QUEUE_DELAY_SECONDS, WEBHOOK_DELIVERY } from "../../src/lib/retry";
import { matchesFilters, type WebhookFilters } from "../../src/webhooks/filters";
import { buildPayload } from "../../src/webhooks/payload";
import { signWebhook, verifyWebhook } from "../../src/webhooks/verify";

describe("verifyWebhook (receiver kit)", () => {
  const secret = "whsec_receiver-test-secret";
  const body = JSON.stringify({ id: "evt_1", event: "contact.created" });
  const now = 1_800_000_000;
  const signed = async (ts = now, raw = body) => ({
    "X-Service-Timestamp": String(ts),
    "X-Service-Signature": await signWebhook(secret, ts, raw),
  });

  it("accepts a fresh, untouched delivery from fetch Headers or Node-style header objects, string or bytes", async () => {
    const h = await signed();
    expect(await verifyWebhook(secret, new Headers(h), body, { now })).toEqual({ ok: true, timestamp: now });
    const nodeStyle = { "x-service-timestamp": h["X-Service-Timestamp"], "x-service-signature": [h["X-Service-Signature"]] };
    expect(await verifyWebhook(secret, nodeStyle, new TextEncoder().encode(body), { now })).toMatchObject({ ok: true });
    // A plain object with the headers as sent (mixed case), e.g. copied from a request log.
    expect(await verifyWebhook(secret, { ...h }, body, { now })).toMatchObject({ ok: true });
  });

  it("signs `<timestamp>.<raw body>` with HMAC-SHA-256, hex, as the spec says", async () => {
    const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${now}.${body}`)));
    expect(await signWebhook(secret, now, body)).toBe(`sha256=${[...mac].map((b) => b.toString(16).padStart(2, "0")).join("")}`);
  });

  it("rejects tampered bodies, other secrets, stale or future timestamps, and malformed headers", async () => {
    const h = await signed();
    expect(await verifyWebhook(secret, new Headers(h), body.replace("evt_1", "evt_2"), { now })).toEqual({
      ok: false,
      reason: "signature_mismatch",
    });
    expect(await verifyWebhook("whsec_other", new Headers(h), body, { now })).toEqual({ ok: false, reason: "signature_mismatch" });
    expect(await verifyWebhook(secret, new Headers(h), body, { now: now + 301 })).toEqual({
      ok: false,
      reason: "timestamp_out_of_tolerance",
    });
    expect(await verifyWebhook(secret, new Headers(h), body, { now: now - 301 })).toEqual({
      ok: false,
      reason: "timestamp_out_of_tolerance",
    });
    expect(await verifyWebhook(secret, new Headers(h), body, { now: now + 290 })).toMatchObject({ ok: true });
    expect(await verifyWebhook(secret, new Headers(h), body, { now: now + 1000, toleranceSeconds: 1200 })).toMatchObject({ ok: true });
    // A signature replayed under a new timestamp does not verify: the timestamp is signed too.
    expect(await verifyWebhook(secret, new Headers({ ...h, "X-Service-Timestamp": String(now + 5) }), body, { now })).toEqual({
      ok: false,
      reason: "signature_mismatch",
    });
    expect(await verifyWebhook(secret, new Headers({ "X-Service-Timestamp": String(now) }), body, { now })).toEqual({
      ok: false,
      reason: "missing_headers",
    });
    expect(await verifyWebhook(secret, new Headers({ ...h, "X-Service-Signature": "md5=abc" }), body, { now })).toEqual({
      ok: false,
      reason: "malformed_signature",
    });
  });

  it("accepts either secret while a rotation is under way", async () => {
    const h = await signed();
    expect(await verifyWebhook(["whsec_new-secret", secret], new Headers(h), body, { now })).toMatchObject({ ok: true });
  });
});

describe("subscription filters", () => {
  const contact = {
    leadScore: 85,
    source: "WEBSITE",
    tags: ["vip", "buyer"],
    address: { city: "Toronto" },
    createdAt: "2026-11-01T00:00:00Z",
  };
  const check = (filters: WebhookFilters, event = "contact.created", object: unknown = contact) => matchesFilters(filters, event, object);

  it("supports every operator on dotted paths", () => {
    expect(check({ "contact.leadScore": { gte: 80 } })).toBe(true);
    expect(check({ "contact.leadScore": { gt: 85 } })).toBe(false);
    expect(check({ "contact.leadScore": { lt: 90, gte: 85 } })).toBe(true);
    expect(check({ "contact.leadScore": { lte: 84 } })).toBe(false);
    expect(check({ "contact.source": { eq: "WEBSITE" } })).toBe(true);
    expect(check({ "contact.source": { ne: "WEBSITE" } })).toBe(false);
    expect(check({ "contact.source": { in: ["REFERRAL", "WEBSITE"] } })).toBe(true);
    expect(check({ "contact.source": { nin: ["REFERRAL", "WEBSITE"] } })).toBe(false);
    expect(check({ "contact.address.city": { eq: "Toronto" } })).toBe(true);
    expect(check({ "contact.createdAt": { gte: "2026-10-01" } })).toBe(true);
  });

  it("matches array fields by element, needs every condition, and never orders across types", () => {
    expect(check({ "contact.tags": { eq: "vip" } })).toBe(true);
    expect(check({ "contact.tags": { in: ["seller", "buyer"] } })).toBe(true);
    expect(check({ "contact.tags": { nin: ["vip"] } })).toBe(false);
    expect(check({ "contact.leadScore": { gte: 80 }, "contact.source": { eq: "REFERRAL" } })).toBe(false);
    expect(check({ "contact.leadScore": { gte: "80" } })).toBe(false);
  });

  it("treats a missing field as matching only ne and nin, and leaves other resources' events alone", () => {
    expect(check({ "contact.budget": { gte: 1 } })).toBe(false);
    expect(check({ "contact.budget": { ne: 1 } })).toBe(true);
    expect(check({ "contact.budget": { nin: [1] } })).toBe(true);
    expect(check({ "contact.leadScore": { gte: 99 } }, "deal.won", { value: 1 })).toBe(true);
    expect(check({ "deal.value": { gte: 10 } }, "deal.won", { value: 1 })).toBe(false);
  });
});

describe("retry schedule", () => {
  it("grows from a minute, never exceeds the Queues maximum delay, and spans about three days", () => {
    expect(WEBHOOK_DELIVERY.baseSeconds(1)).toBe(60);
    expect(WEBHOOK_DELIVERY.baseSeconds(2)).toBe(90);
    const delays = Array.from({ length: MAX_DELIVERY_RETRIES }, (_, i) => WEBHOOK_DELIVERY.delaySeconds(i + 1));
    expect(delays.every((d) => d > 0 && d <= MAX_QUEUE_DELAY_SECONDS)).toBe(true);
    const lowest = Array.from({ length: MAX_DELIVERY_RETRIES }, (_, i) => WEBHOOK_DELIVERY.delaySeconds(i + 1, () => 0)).reduce(
      (a, b) => a + b,
    );
    const highest = Array.from({ length: MAX_DELIVERY_RETRIES }, (_, i) => WEBHOOK_DELIVERY.delaySeconds(i + 1, () => 1)).reduce(
      (a, b) => a + b,
    );
    expect(lowest / 86_400).toBeGreaterThan(2.2);
    expect(highest / 86_400).toBeLessThan(3.3);
  });
});

describe("payload", () => {
  const parties = { organization: { id: "org-1", name: "Acme Realty" }, user: { id: "u-1", name: "Ada", email: "ada@acme.test" } };

  it("property.price_changed adds data.priceChange; other events carry object, previousAttributes and changes only", () => {
    const priceChange = { previousPrice: 500000, newPrice: 475000, changeAmount: -25000, changePercentage: -5 };
    const data = {
      object: { id: "p-1", listing: { listPrice: 475000 } },
      previousAttributes: { "listing.listPrice": 500000 },
      changes: ["listing.listPrice"],
      priceChange,
      internal: "not for receivers",
    };
    const body = JSON.parse(
      buildPayload({ id: "e-1", type: "property.price_changed", occurredAt: "2026-11-22T00:00:00.000Z", data }, parties),
    );
    expect(body).toEqual({
      id: "e-1",
      event: "property.price_changed",
      apiVersion: expect.stringMatching(/^\d{4}-(0[1-9]|1[0-2])$/),
      createdAt: "2026-11-22T00:00:00.000Z",
      data: { object: data.object, previousAttributes: data.previousAttributes, changes: data.changes, priceChange },
      organization: parties.organization,
      user: parties.user,
    });
    const deleted = JSON.parse(
      buildPayload(
        { id: "e-2", type: "contact.deleted", occurredAt: "2026-11-22T00:00:00.000Z", data: { object: { id: "c-1" } } },
        { ...parties, user: null },
      ),
    );
    expect(deleted.data).toEqual({ object: { id: "c-1" }, previousAttributes: null, changes: null });
    expect(deleted.user).toBeNull();
  });
});
