import type { Context } from "hono";
import { requirePermission } from "../platform/auth";
import type { AppBindings } from "../platform/context";
import { crmError } from "../crm/body";
import { type DeliveryReach, inCatalogue, readPermissionOf } from "./catalogue";

/**
 * What the caller may have delivered (catalogue.ts `DeliveryReach`): the read permission of each event's object, with its
 * role's and credential's 403s. `webhook.test` carries the subscription itself: `webhooks:manage`, which the route has.
 */
export function deliveryReach(c: Context<AppBindings>): DeliveryReach {
  return (events) => {
    for (const permission of new Set(events.map((e) => (inCatalogue(e) ? readPermissionOf(e) : ("webhooks:manage" as const)))))
      requirePermission(c, permission);
  };
}

/** A subscription sends its events' objects: every write of one needs what reading them needs (reach.ts). */
export const REACH = {
  403: crmError(
    "The credential may not read the objects of an event the subscription holds after the change (insufficient_permission: `contacts:read` for `contact.*`, `deals:read` for `deal.*` …)",
  ),
};
