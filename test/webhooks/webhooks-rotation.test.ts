import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { decryptSecret } from "../../src/webhooks/secret-box";
import { verifyWebhook } from "../../src/webhooks/verify";
import { call, json } from "../helpers/client";
import { createPrincipal, tenantDb, type TestPrincipal } from "../helpers/factories";
import { type Mailbox, openMailbox } from "../helpers/receiver";
import { subscribe } from "../helpers/webhooks";

/**
 * Secret rotation with an overlap (issue 32): POST /v1/webhooks/{id}/rotate-secret. Real deliveries (the test route,
 * through the queue and the network) checked by a Standard Webhooks receiver holding either secret and by an
 * X-Service-Signature receiver holding both.
 */
const HOUR = 3_600_000;

beforeEach(() => void vi.useFakeTimers({ toFake: ["Date"], shouldAdvanceTime: true }));
afterEach(() => void vi.useRealTimers());

const principal = () => createPrincipal({ expiresInSeconds: 30 * 86_400 });

async function rotate(owner: TestPrincipal, id: string, body?: unknown) {
  const res = await call("POST", `/v1/webhooks/${id}/rotate-secret`, { token: owner.token, body });
  return { status: res.status, body: await json(res) };
}

/** Sends a webhook.test delivery and answers it as the receiver got it. */
async function nextDelivery(owner: TestPrincipal, id: string, box: Mailbox) {
  const before = await box.count();
  expect((await call("POST", `/v1/webhooks/${id}/test`, { token: owner.token })).status).toBe(202);
  await vi.waitFor(async () => expect(await box.count()).toBe(before + 1), { timeout: 20_000, interval: 100 });
  return (await box.received()).at(-1)!;
}

const standardVerifies = (secret: string, d: { body: string; headers: Record<string, string> }) => {
  try {
    new Webhook(secret).verify(d.body, d.headers);
    return true;
  } catch {
    return false;
  }
};

describe("rotate-secret", { timeout: 60_000 }, () => {
  it("signs with both secrets during the overlap: Standard Webhooks verifies with either, X-Service-Signature with the new", async () => {
    const owner = await principal();
    const box = await openMailbox();
    const sub = await subscribe(owner, { url: box.url });
    const rotated = await rotate(owner, sub.id);
    expect(rotated.status).toBe(200);
    const secret = rotated.body.data.secret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(secret).not.toBe(sub.secret);
    const ends = Date.parse(rotated.body.data.previousSecretExpiresAt);
    expect(ends - Date.now()).toBeGreaterThan(24 * HOUR - 60_000);
    expect(ends - Date.now()).toBeLessThanOrEqual(24 * HOUR);
    // The secret is in the rotating answer only.
    const shown = (await json(await call("GET", `/v1/webhooks/${sub.id}`, { token: owner.token }))).data;
    expect(shown.previousSecretExpiresAt).toBe(rotated.body.data.previousSecretExpiresAt);
    expect(JSON.stringify(shown)).not.toContain(secret);

    const delivery = await nextDelivery(owner, sub.id, box);
    expect(delivery.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/=]+ v1,[A-Za-z0-9+/=]+$/);
    // A receiver still on the old secret, and one already on the new, both verify the same delivery.
    expect(new Webhook(sub.secret).verify(delivery.body, delivery.headers)).toMatchObject({ event: "webhook.test" });
    expect(new Webhook(secret).verify(delivery.body, delivery.headers)).toMatchObject({ event: "webhook.test" });
    // X-Service-Signature is one sha256= with the new secret: a receiver holding both tries them in turn.
    expect(delivery.headers["x-service-signature"]).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(await verifyWebhook([sub.secret, secret], delivery.headers, delivery.body)).toMatchObject({ ok: true });
    expect(await verifyWebhook(secret, delivery.headers, delivery.body)).toMatchObject({ ok: true });
    expect(await verifyWebhook(sub.secret, delivery.headers, delivery.body)).toEqual({ ok: false, reason: "signature_mismatch" });

    // Past the overlap: one signature, the new secret's.
    vi.setSystemTime(Date.now() + 24 * HOUR + 60_000);
    const after = await nextDelivery(owner, sub.id, box);
    expect(after.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
    expect(standardVerifies(secret, after)).toBe(true);
    expect(standardVerifies(sub.secret, after)).toBe(false);
    // The read still says when the overlap ended (a value that does not change under the subscription's ETag).
    expect((await json(await call("GET", `/v1/webhooks/${sub.id}`, { token: owner.token }))).data.previousSecretExpiresAt).toBe(
      rotated.body.data.previousSecretExpiresAt,
    );
  });

  it("takes the overlap it is given, up to 7 days; 0 switches at once; anything else is a 422", async () => {
    const owner = await principal();
    const box = await openMailbox();
    const sub = await subscribe(owner, { url: box.url });
    const week = await rotate(owner, sub.id, { overlapSeconds: 7 * 86_400 });
    expect(week.status).toBe(200);
    expect(Date.parse(week.body.data.previousSecretExpiresAt) - Date.now()).toBeGreaterThan(7 * 24 * HOUR - 60_000);
    vi.setSystemTime(Date.now() + 6 * 24 * HOUR);
    expect(standardVerifies(sub.secret, await nextDelivery(owner, sub.id, box))).toBe(true);

    const now = await rotate(owner, sub.id, { overlapSeconds: 0 });
    expect(now.body.data.previousSecretExpiresAt).toBeNull();
    const single = await nextDelivery(owner, sub.id, box);
    expect(single.headers["webhook-signature"]).not.toContain(" ");
    expect(standardVerifies(now.body.data.secret, single)).toBe(true);
    expect(standardVerifies(week.body.data.secret, single)).toBe(false);

    for (const body of [{ overlapSeconds: 7 * 86_400 + 1 }, { overlapSeconds: -1 }, { overlapSeconds: 1.5 }, { overlapHours: 2 }]) {
      const bad = await rotate(owner, sub.id, body);
      expect(bad.status, JSON.stringify(body)).toBe(422);
    }
    expect((await rotate(owner, crypto.randomUUID())).status).toBe(404);
    const stranger = await principal();
    expect((await rotate(stranger, sub.id)).status).toBe(404);
  });

  it("a PATCH that sets a secret switches at once and ends the overlap", async () => {
    const owner = await principal();
    const box = await openMailbox();
    const sub = await subscribe(owner, { url: box.url });
    const rotated = await rotate(owner, sub.id);
    const chosen = "a-secret-of-our-own-choosing-2026";
    const patched = await call("PATCH", `/v1/webhooks/${sub.id}`, { token: owner.token, body: { secret: chosen } });
    expect((await json(patched)).data).toMatchObject({ secret: chosen, previousSecretExpiresAt: null });
    const delivery = await nextDelivery(owner, sub.id, box);
    expect(delivery.headers["webhook-signature"]).not.toContain(" ");
    expect(new Webhook(chosen, { format: "raw" }).verify(delivery.body, delivery.headers)).toMatchObject({ event: "webhook.test" });
    expect(standardVerifies(rotated.body.data.secret, delivery)).toBe(false);
    expect(standardVerifies(sub.secret, delivery)).toBe(false);
    expect(await verifyWebhook([sub.secret, rotated.body.data.secret], delivery.headers, delivery.body)).toMatchObject({ ok: false });
  });

  it("of rotations racing, the last wins and the overlap holds a secret one of them handed out, never the first", async () => {
    const owner = await principal();
    const box = await openMailbox();
    const sub = await subscribe(owner, { url: box.url });
    const answers = await Promise.all(Array.from({ length: 8 }, () => rotate(owner, sub.id)));
    for (const a of answers) expect(a.status, JSON.stringify(a.body)).toBe(200);
    const handedOut = answers.map((a) => a.body.data.secret as string);
    expect(new Set(handedOut).size).toBe(8);

    const delivery = await nextDelivery(owner, sub.id, box);
    const signing = handedOut.filter((s) => standardVerifies(s, delivery));
    expect(signing).toHaveLength(2);
    expect(standardVerifies(sub.secret, delivery)).toBe(false);
    // The stored pair is the winner and the one it replaced; the winner's answer is the one with the highest version.
    const row = await (await tenantDb(owner.organizationId))
      .prepare("SELECT secret_ciphertext, previous_secret_ciphertext, version FROM webhook_subscriptions WHERE id = ?")
      .bind(sub.id)
      .first<{ secret_ciphertext: string; previous_secret_ciphertext: string; version: number }>();
    expect(row!.version).toBe(1 + 8);
    const current = await decryptSecret(env.WEBHOOK_SECRET_KEY!, sub.id, row!.secret_ciphertext);
    const previous = await decryptSecret(env.WEBHOOK_SECRET_KEY!, sub.id, row!.previous_secret_ciphertext);
    expect(new Set([current, previous])).toEqual(new Set(signing));
    expect(delivery.headers["x-service-signature"]).toBeDefined();
    expect(await verifyWebhook(current, delivery.headers, delivery.body)).toMatchObject({ ok: true });
  });
});
