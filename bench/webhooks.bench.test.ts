import { createMessageBatch } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { createDb } from "../src/db/client";
import { createDeliveryConsumer } from "../src/webhooks/delivery";
import { fanOutEvent, type DeliveryMessage } from "../src/webhooks/fanout";
import { openSecret } from "../src/webhooks/secret-box";
import { fetchTransport, type WebhookTransport } from "../src/webhooks/transport";
import { signWebhook } from "../src/webhooks/verify";
import { createPrincipal } from "../test/helpers/factories";
import { openMailbox } from "../test/helpers/receiver";
import { capturingEnv, contactEvent, subscribe } from "../test/helpers/webhooks";
import { helloWorld, measure, printTable } from "./harness";

const EVENTS = 1000;
const SUBSCRIPTIONS = 10;
const BATCH = 10; // wrangler.toml max_batch_size of webhook-deliveries

/**
 * Fan-out and delivery of 1,000 contact events to 10 subscriptions, all pointing at the Node receiver on
 * 127.0.0.1 (a real HTTP round trip per delivery). The receiver is an IP literal, so the per-attempt DNS-over-HTTPS
 * re-check of hostname URLs (two lookups) is not in these figures. workerd's clock moves only across I/O, so the
 * signing figure, pure computation, is a lower bound. Sending time is measured around the transport; signing
 * (secret decryption + HMAC) is timed on the same 10,000 deliveries apart from the consumer, since the consumer
 * does not expose its inner steps; the rest is D1 (one read and one batched write per batch) and checks. The POSTs of
 * a batch run side by side, so sending can overlap and the shares are of summed, not wall-clock, time.
 */
it("webhooks: fan-out, signing and delivery of 1,000 events to 10 subscriptions", async () => {
  const floor = await helloWorld();
  const owner = await createPrincipal();
  const box = await openMailbox({ record: false });
  const subs = [];
  for (let i = 0; i < SUBSCRIPTIONS; i++) subs.push(await subscribe(owner, { url: box.url, events: ["contact.created", "contact.updated"] }));

  const db = createDb(env.DB);
  const { env: capture, sent } = capturingEnv();
  const events = Array.from({ length: EVENTS }, (_, i) => contactEvent(owner, "contact.created", { id: crypto.randomUUID(), firstName: `Lead ${i}`, leadScore: i % 100, source: "WEBSITE" }));
  let next = 0;
  const fanOutStart = performance.now();
  const fanOut = await measure(`fan-out: 1 event -> ${SUBSCRIPTIONS} deliveries (D1 + payloads; queue send captured, not timed)`, () => fanOutEvent(capture, db, events[next++]!), { iterations: EVENTS, warmup: 0 });
  const fanOutMs = performance.now() - fanOutStart;
  expect(sent).toHaveLength(EVENTS * SUBSCRIPTIONS);

  // Wall-clock time with at least one POST in flight: the POSTs of a batch overlap, so summing them would overcount.
  let sendingMs = 0;
  let inFlight = 0;
  let since = 0;
  const real = fetchTransport();
  const timed: WebhookTransport = {
    async send(req) {
      if (inFlight++ === 0) since = performance.now();
      try {
        return await real.send(req);
      } finally {
        if (--inFlight === 0) sendingMs += performance.now() - since;
      }
    },
  };
  const consumer = createDeliveryConsumer({ resolver: { resolve: async () => [] }, transport: timed });
  let offset = 0;
  const deliverStart = performance.now();
  const deliver = await measure(
    `delivery: batch of ${BATCH} (2 D1 trips + decrypt + sign + POSTs)`,
    async () => {
      const slice: DeliveryMessage[] = sent.slice(offset, (offset += BATCH));
      await consumer(createMessageBatch("webhook-deliveries", slice.map((body, i) => ({ id: `b${offset}-${i}`, timestamp: new Date(), attempts: 1, body }))), env);
    },
    { iterations: sent.length / BATCH, warmup: 0 },
  );
  const deliverMs = performance.now() - deliverStart;
  // A local receiver under this load may drop a connection now and then; those deliveries are retried in production.
  const outcomes = await env.DB.prepare("SELECT status, last_error AS error, COUNT(*) AS n FROM webhook_deliveries WHERE organization_id = ? GROUP BY 1, 2").bind(owner.organizationId).all<{ status: string; error: string | null; n: number }>();
  const delivered = outcomes.results.find((o) => o.status === "delivered")?.n ?? 0;
  expect(delivered).toBeGreaterThan(EVENTS * SUBSCRIPTIONS * 0.99);

  // The signing work of the same 10,000 deliveries: decrypt the subscription secret, HMAC timestamp + body.
  const rows = await env.DB.prepare("SELECT id, secret_ciphertext FROM webhook_subscriptions WHERE organization_id = ?").bind(owner.organizationId).all<{ id: string; secret_ciphertext: string }>();
  // The real payloads the consumer signed (the bodies stored with the deliveries), not a stand-in.
  const bodies = (await env.DB.prepare("SELECT body FROM webhook_deliveries WHERE organization_id = ?").bind(owner.organizationId).all<{ body: string }>()).results.map((r) => r.body);
  const signStart = performance.now();
  for (let i = 0; i < bodies.length; i++) {
    const row = rows.results[i % rows.results.length]!;
    await signWebhook(await openSecret(env.WEBHOOK_SECRET_KEY!, row.id, row.secret_ciphertext), Math.floor(Date.now() / 1000), bodies[i]!);
  }
  const signingMs = performance.now() - signStart;

  // workerd's clock only advances on I/O, so the I/O-free floor can read 0 ms: no ratio against zero then.
  printTable("webhooks: 1,000 events x 10 subscriptions, local receiver", [floor, fanOut, deliver], floor.medianMs > 0 ? floor : undefined);
  const share = (ms: number) => `${((100 * ms) / deliverMs).toFixed(1)} %`;
  console.log(
    [
      `  fan-out:    ${EVENTS} events in ${(fanOutMs / 1000).toFixed(2)} s = ${((EVENTS * SUBSCRIPTIONS * 1000) / fanOutMs).toFixed(0)} deliveries/s created`,
      `  delivery:   ${sent.length} deliveries in ${(deliverMs / 1000).toFixed(2)} s = ${((sent.length * 1000) / deliverMs).toFixed(0)} deliveries/s (one consumer, batches one after another)`,
      `  end to end: ${((sent.length * 1000) / (fanOutMs + deliverMs)).toFixed(0)} deliveries/s`,
      `  outcomes:   ${outcomes.results.map((o) => `${o.status}${o.error ? ` (${o.error})` : ""}: ${o.n}`).join(", ")}`,
      `  share of delivery time: signing ${share(signingMs)} (${((1000 * signingMs) / sent.length).toFixed(1)} µs each), sending ${share(sendingMs)} (POSTs in flight), D1 and the rest ${share(deliverMs - signingMs - sendingMs)}`,
    ].join("\n"),
  );
});
