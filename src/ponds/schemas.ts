import { z } from "@hono/zod-openapi";
import { listQuery } from "../crm/list-query";
import { oneLineText } from "../lib/validation";

/** Members one pond holds at most (a brokerage's whole team fits). */
export const MAX_POND_MEMBERS = 500;

const members = z
  .array(z.string().min(1).max(100))
  .max(MAX_POND_MEMBERS)
  .overwrite((ids) => [...new Set(ids)])
  .openapi({ description: "Ids of users of your organization who may see and claim the pond's leads" });

export const PondCreate = z.strictObject({ name: oneLineText(100), members: members.default([]) }).openapi("PondCreate");
export type PondCreate = z.infer<typeof PondCreate>;

export const PondUpdate = z
  .strictObject({ name: oneLineText(100).optional(), members: members.optional() })
  .refine((u) => Object.keys(u).length > 0, { message: "Nothing to update", params: { code: "empty_update" } })
  .openapi("PondUpdate");
export type PondUpdate = z.infer<typeof PondUpdate>;

export const Pond = z
  .object({
    id: z.string(),
    name: z.string(),
    members: z.array(z.string()).openapi({ description: "User ids, in id order" }),
    contactCount: z.int().openapi({ description: "Leads waiting in the pond, unassigned" }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("Pond");
export type Pond = z.infer<typeof Pond>;

export const PondListQuery = listQuery({});

/** Where routing sent a lead: a user, a pond, or a first-to-claim group (its id: the rule that made it, e.g. `rules.0`). */
export const RoutedTarget = z.object({ type: z.enum(["user", "pond", "claim_group"]), id: z.string() }).openapi("RoutedTarget");
export type RoutedTarget = z.infer<typeof RoutedTarget>;

export const RoutingStep = z
  .object({
    at: z.string(),
    event: z.string().openapi({
      description:
        "`routed` (intake), `claimed`, `offer_expired` (a first-to-claim offer timed out to its fallback), `speed_to_lead` (not contacted in time: reassigned)",
    }),
    target: RoutedTarget,
    reason: z.string(),
  })
  .openapi("RoutingStep");

export const ContactRouting = z
  .object({
    contactId: z.string(),
    state: z.enum(["assigned", "pond", "offered", "claimed"]),
    pondId: z.string().nullable().openapi({ description: "The pond the lead waits in (state pond)" }),
    offeredTo: z.array(z.string()).nullable().openapi({ description: "state offered: the users who may claim it" }),
    offerExpiresAt: z.string().nullable().openapi({ description: "state offered: when the offer goes to its fallback" }),
    speedDueAt: z.string().nullable().openapi({ description: "Speed to lead: reassigned at this time unless contacted" }),
    trail: z.array(RoutingStep).openapi({ description: "Every routing step, oldest first" }),
  })
  .openapi("ContactRouting");
export type ContactRouting = z.infer<typeof ContactRouting>;

export const RoutePreview = z
  .object({
    target: RoutedTarget.nullable().openapi({ description: "null: nobody would take it (no user accepts leads)" }),
    reason: z.string().openapi({ example: "rules.0 matched source ZILLOW" }),
  })
  .openapi("RoutePreview");
export type RoutePreview = z.infer<typeof RoutePreview>;
