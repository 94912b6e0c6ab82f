import { type Copy, rewriteCopies } from "../crm/copies";
import type { Erasable } from "../crm/erasure";
import { webhookDeliveries, webhookSubscriptions } from "../db/schema";

// The webhooks' share of a person's erasure (crm/erasure.ts, erasure/erase.ts): the bodies of deliveries (the
// event payloads as sent), and subscriptions' filters and descriptions that name them.
const COPIES: Copy[] = [
  { kind: "webhook_deliveries", table: webhookDeliveries, key: "id", column: "body" },
  { kind: "webhook_subscriptions", table: webhookSubscriptions, key: "id", column: "filters", versioned: true },
  { kind: "webhook_subscriptions", table: webhookSubscriptions, key: "id", column: "description", versioned: true },
];

export const webhooksErasable: Erasable = {
  erase: async (ctx, scrub, counted) => ({ name_mentions: await rewriteCopies(ctx, scrub, counted, COPIES) }),
};
