import { describe, expect, it, vi } from "vitest";
import { Webhook } from "standardwebhooks";
import { verifyWebhook } from "../../src/webhooks/verify";
import { call } from "../helpers/client";
import { createPrincipal } from "../helpers/factories";
import { type Mailbox, openMailbox } from "../helpers/receiver";
import { subscribe } from "../helpers/webhooks";

/**
 * Standard Webhooks (issue 16): real deliveries, through the outbox, both queues and the network, verified with the
 * official `standardwebhooks` package, and with the spec's own X-Service-Signature on the same delivery.
 */
async function firstDelivery(box: Mailbox) {
  await vi.waitFor(async () => expect(await box.count()).toBe(1), { timeout: 20_000, interval: 100 });
  return (await box.received())[0]!;
}

describe("Standard Webhooks signatures", { timeout: 30_000 }, () => {
  it("issues secrets as whsec_<base64>, and a real delivery verifies with standardwebhooks and with the spec's scheme", async () => {
    const owner = await createPrincipal();
    const box = await openMailbox();
    const sub = await subscribe(owner, { url: box.url, events: ["contact.created"] });
    expect(sub.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(
      (await call("POST", "/v1/contacts", { token: owner.token, body: { firstName: "Std", lastName: "Hooks", email: "std@example.test" } }))
        .status,
    ).toBe(201);
    const delivery = await firstDelivery(box);

    const payload = new Webhook(sub.secret).verify(delivery.body, delivery.headers) as { id: string; event: string };
    expect(payload.event).toBe("contact.created");
    expect(delivery.headers["webhook-id"]).toBe(payload.id);
    expect(delivery.headers["webhook-timestamp"]).toBe(delivery.headers["x-service-timestamp"]);
    expect(await verifyWebhook(sub.secret, delivery.headers, delivery.body)).toMatchObject({ ok: true });

    // Tampering, or another secret, fails both.
    expect(() => new Webhook(sub.secret).verify(`${delivery.body} `, delivery.headers)).toThrow();
    expect(() => new Webhook(`whsec_${btoa("another key, 32 bytes long......")}`).verify(delivery.body, delivery.headers)).toThrow();
  });

  it("signs with a secret the caller chose too: the spec's header as before, Standard Webhooks with the raw key", async () => {
    const owner = await createPrincipal();
    const box = await openMailbox();
    const secret = "our-own-signing-secret-2026";
    const sub = await subscribe(owner, { url: box.url, events: ["contact.created"], secret });
    expect(sub.secret).toBe(secret);
    await call("POST", "/v1/contacts", { token: owner.token, body: { firstName: "Raw", lastName: "Key", email: "raw@example.test" } });
    const delivery = await firstDelivery(box);
    expect(await verifyWebhook(secret, delivery.headers, delivery.body)).toMatchObject({ ok: true });
    expect(new Webhook(secret, { format: "raw" }).verify(delivery.body, delivery.headers)).toMatchObject({ event: "contact.created" });
  });

  it("a rotated secret is issued in the standard form and signs the next delivery", async () => {
    const owner = await createPrincipal();
    const box = await openMailbox();
    const sub = await subscribe(owner, { url: box.url, events: ["contact.created"], secret: "an-old-style-secret-value" });
    const rotated = (await (
      await call("PATCH", `/v1/webhooks/${sub.id}`, { token: owner.token, body: { rotateSecret: true } })
    ).json()) as { data: { secret: string } };
    expect(rotated.data.secret).toMatch(/^whsec_/);
    expect((await call("POST", `/v1/webhooks/${sub.id}/test`, { token: owner.token })).status).toBe(202);
    const delivery = await firstDelivery(box);
    expect(new Webhook(rotated.data.secret).verify(delivery.body, delivery.headers)).toMatchObject({ event: "webhook.test" });
  });
});
