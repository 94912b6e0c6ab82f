import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Ponds (issue 46): a shared pool of unassigned leads its members may claim. */
export const ponds = sqliteTable(
  "ponds",
  {
    id: text().primaryKey(),
    organizationId: text().notNull(),
    name: text().notNull(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
    version: integer().notNull().default(1),
  },
  (t) => [index("ponds_org_created_idx").on(t.organizationId, t.createdAt, t.id)],
);

export const pondMembers = sqliteTable(
  "pond_members",
  {
    pondId: text().notNull(),
    userId: text().notNull(),
    organizationId: text().notNull(),
  },
  (t) => [primaryKey({ columns: [t.pondId, t.userId] }), index("pond_members_org_user_idx").on(t.organizationId, t.userId)],
);

/** Where a lead was sent, as stored: a user, a pond or a first-to-claim group (the API's RouteTarget). */
export type StoredRouteTarget =
  | { userId: string }
  | { pondId: string }
  | { roundRobin: string[] }
  | { firstToClaim: { userIds: string[]; timeoutMinutes: number; fallback: { userId: string } | { pondId: string } } };
export interface RoutingStep {
  at: string;
  /** `routed` | `claimed` | `offer_expired` | `speed_to_lead` | `assigned` | … */
  event: string;
  target: { type: "user" | "pond" | "claim_group"; id: string };
  reason: string;
}

/**
 * A lead's routing (issue 46), one row per contact that was routed: its state, what the cron still has to do for it
 * (`offer_expires_at`: a first-to-claim offer's timeout; `speed_due_at`: speed-to-lead's deadline), and its trail.
 * `state`: `assigned` (to contacts.assigned_to), `pond` (contacts.pond_id, unassigned), `offered` (a claim group:
 * `offered_to`, unassigned until a claim or the timeout), `claimed`.
 */
export const contactRouting = sqliteTable(
  "contact_routing",
  {
    contactId: text().primaryKey(),
    organizationId: text().notNull(),
    state: text().$type<"assigned" | "pond" | "offered" | "claimed">().notNull(),
    offeredTo: text({ mode: "json" }).$type<string[]>(),
    offerExpiresAt: text(),
    fallback: text({ mode: "json" }).$type<StoredRouteTarget>(),
    speedDueAt: text(),
    speedReassignTo: text({ mode: "json" }).$type<StoredRouteTarget>(),
    trail: text({ mode: "json" }).$type<RoutingStep[]>().notNull(),
    updatedAt: text().notNull(),
    version: integer().notNull().default(1),
  },
  (t) => [
    index("contact_routing_org_idx").on(t.organizationId, t.state),
    index("contact_routing_offer_due_idx").on(t.offerExpiresAt).where(sql`${t.state} = 'offered'`),
    index("contact_routing_speed_due_idx").on(t.speedDueAt).where(sql`${t.speedDueAt} IS NOT NULL`),
  ],
);
