import { diffAttributes } from "../lib/changes";
import type { ServiceContext } from "../service-context";
import type { DomainEvent } from "./event";
import { newEvent } from "./outbox";

/**
 * A catalogue event in the spec's payload structure (Payload structure): `object` is the resource as its read route
 * shows it; given `before` (the same resource before the change), `changes` names what changed (dotted for nested,
 * `updatedAt` aside) and `previousAttributes` their prior values, else both are null. `extra` goes beside them in
 * `data` (webhooks/payload.ts says which extras a delivery carries).
 */
export function resourceEvent(
  ctx: Pick<ServiceContext, "organizationId" | "actor">,
  type: string,
  object: object,
  before: object | null = null,
  extra: Record<string, unknown> = {},
): DomainEvent {
  const diff = before ? diffAttributes(before as Record<string, unknown>, object as Record<string, unknown>, ["updatedAt"]) : null;
  return newEvent(ctx, type, { object, previousAttributes: diff?.previousAttributes ?? null, changes: diff?.changes ?? null, ...extra });
}
