import { env } from "cloudflare:workers";
import type { DomainEvent } from "../../src/events/event";
import { newEvent } from "../../src/events/outbox";
import type { DeliveryMessage } from "../../src/webhooks/fanout";
import { call, json } from "./client";
import type { TestPrincipal } from "./factories";

/** Subscribes `owner` through the API; returns the subscription as created, secret included. */
export async function subscribe(owner: TestPrincipal, body: Record<string, unknown>) {
  const res = await call("POST", "/v1/webhooks", { token: owner.token, body: { events: ["contact.created"], ...body } });
  if (res.status !== 201) throw new Error(`subscribe failed: ${res.status} ${await res.text()}`);
  return (await json(res)).data as { id: string; secret: string; url: string };
}

/** A contact as the contacts issue will emit it (data: object, previousAttributes, changes). */
export function contactEvent(
  owner: TestPrincipal,
  type: string,
  object: Record<string, unknown>,
  previous: Record<string, unknown> | null = null,
): DomainEvent {
  const changes = previous ? Object.keys(previous) : null;
  return newEvent({ organizationId: owner.organizationId, actor: { type: "user", userId: owner.userId } }, type, {
    object,
    previousAttributes: previous,
    changes,
  });
}

/** An env whose webhook-deliveries producer records messages instead of queueing them (hand-driven consumers). */
export function capturingEnv() {
  const sent: DeliveryMessage[] = [];
  const queue = {
    sendBatch: async (msgs: { body: DeliveryMessage }[]) => void sent.push(...msgs.map((m) => m.body)),
    send: async (body: DeliveryMessage) => void sent.push(body),
  };
  return { env: { ...env, WEBHOOK_DELIVERIES: queue as unknown as Queue<unknown> }, sent };
}
