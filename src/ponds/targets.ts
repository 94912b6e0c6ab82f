import { and, eq, sql } from "drizzle-orm";
import { contactRouting, leadRoutingCursors, ponds, type RoutingStep, type StoredRouteTarget } from "../db/schema";
import { guard, type Statement } from "../db/write";
import { idsOf } from "../lib/sql";
import type { LeadRouting, RouteTarget } from "../organization/schemas";
import type { ServiceContext } from "../service-context";
import { existingUserIds } from "../users/service";
import type { RoutedTarget } from "./schemas";

/**
 * Where a lead goes under `settings.leadRouting` mode `rules` (issue 46), and what going there writes: the contact's
 * assignee or pond, and its contact_routing row (state, the cron's deadlines, the trail). Pure decisions over what was
 * read once (the users and ponds the targets name, round robin's turn); the statements join the caller's batch.
 */

/** What a rule can match a lead on, as intake stores it (source in capitals with underscores). */
export interface LeadFacts {
  source: string;
  type: string;
  tags: string[];
  zip: string | null;
}

type Fallback = { userId: string } | { pondId: string };

/** A target resolved: who takes the lead now, and why. `label` names where the target was set (`rules.0`, `default`, `speedToLead`). */
export type Decision =
  | { kind: "user"; userId: string; reason: string; statements: Statement[] }
  | { kind: "pond"; pondId: string; reason: string; statements: Statement[] }
  | {
      kind: "claim_group";
      label: string;
      userIds: string[];
      timeoutMinutes: number;
      fallback: Fallback;
      reason: string;
      statements: Statement[];
    }
  | { kind: "nobody"; reason: string; statements: Statement[] };

/** Round robin's turn as read (leads/routing.ts keeps the organization's ring on the same row). */
export interface Turn {
  lastUserId: string | null;
  turn: number;
}

/** The users and ponds of the organization among those the targets name, read side by side. */
export interface Known {
  users: Set<string>;
  ponds: Set<string>;
}

const usersOf = (t: RouteTarget | Fallback): string[] =>
  "userId" in t
    ? [t.userId]
    : "roundRobin" in t
      ? t.roundRobin
      : "firstToClaim" in t
        ? [...t.firstToClaim.userIds, ...usersOf(t.firstToClaim.fallback)]
        : [];
const pondsOf = (t: RouteTarget | Fallback): string[] =>
  "pondId" in t ? [t.pondId] : "firstToClaim" in t ? pondsOf(t.firstToClaim.fallback) : [];

export async function readKnown(ctx: Pick<ServiceContext, "db" | "organizationId">, targets: (RouteTarget | Fallback)[]): Promise<Known> {
  const userIds = [...new Set(targets.flatMap(usersOf))];
  const pondIds = [...new Set(targets.flatMap(pondsOf))];
  const [users, found] = await Promise.all([
    userIds.length ? existingUserIds(ctx, userIds) : new Set<string>(),
    pondIds.length
      ? ctx.db
          .select({ id: ponds.id })
          .from(ponds)
          .where(and(idsOf(ponds, ctx.organizationId, pondIds)))
      : [],
  ]);
  return { users, ponds: new Set(found.map((p) => p.id)) };
}

export async function readTurn(ctx: Pick<ServiceContext, "db" | "organizationId">): Promise<Turn> {
  const row = await ctx.db
    .select({ lastUserId: leadRoutingCursors.lastUserId, turn: leadRoutingCursors.turn })
    .from(leadRoutingCursors)
    .where(eq(leadRoutingCursors.organizationId, ctx.organizationId))
    .get();
  return row ?? { lastUserId: null, turn: 0 };
}

const normalizedZip = (zip: string) => zip.replace(/[\s-]/g, "").toUpperCase();

type Rule = NonNullable<LeadRouting["rules"]>[number];

/** What of a rule's match held, for the reason; null when some key did not. Every given key must hold. */
function matched(match: Rule["match"], lead: LeadFacts): string | null {
  const held: string[] = [];
  if (match.source !== undefined) {
    if (match.source !== lead.source) return null;
    held.push(`source ${match.source}`);
  }
  if (match.tag !== undefined) {
    const tag = match.tag.toLowerCase();
    if (!lead.tags.some((t) => t.toLowerCase() === tag)) return null;
    held.push(`tag ${match.tag}`);
  }
  if (match.zipPrefix !== undefined) {
    if (!lead.zip || !normalizedZip(lead.zip).startsWith(match.zipPrefix)) return null;
    held.push(`zip ${match.zipPrefix}…`);
  }
  if (match.type !== undefined) {
    if (match.type !== lead.type) return null;
    held.push(`type ${match.type}`);
  }
  return held.length ? held.join(", ") : "every lead";
}

/**
 * A target resolved against what exists, or null when nobody of it does (a user or pond deleted since the settings
 * were saved): the caller tries the next rule. Round robin takes the next of its users after the last one the
 * organization's turn went to, with the statements that guard the turn read and take it.
 */
export function resolveTarget(
  ctx: Pick<ServiceContext, "db" | "organizationId">,
  target: RouteTarget,
  label: string,
  why: string,
  known: Known,
  turn: Turn,
): Decision | null {
  if ("userId" in target) {
    return known.users.has(target.userId) ? { kind: "user", userId: target.userId, reason: `${why}: user`, statements: [] } : null;
  }
  if ("pondId" in target) {
    return known.ponds.has(target.pondId) ? { kind: "pond", pondId: target.pondId, reason: `${why}: pond`, statements: [] } : null;
  }
  if ("roundRobin" in target) {
    const ring = target.roundRobin.filter((id) => known.users.has(id)).sort();
    if (ring.length === 0) return null;
    const userId = ring.find((id) => turn.lastUserId === null || id > turn.lastUserId) ?? ring[0]!;
    return { kind: "user", userId, reason: `${why}: round robin of ${ring.length}`, statements: takeTurn(ctx, turn, userId) };
  }
  const offer = target.firstToClaim;
  const userIds = offer.userIds.filter((id) => known.users.has(id));
  if (userIds.length === 0) return null;
  return {
    kind: "claim_group",
    label,
    userIds,
    timeoutMinutes: offer.timeoutMinutes,
    fallback: offer.fallback,
    reason: `${why}: first to claim of ${userIds.length}, ${offer.timeoutMinutes} min`,
    statements: [],
  };
}

/** Round robin's turn taken, guarded on the turn read: of concurrent leads one takes each turn, the others retry. */
export function takeTurn(ctx: Pick<ServiceContext, "db" | "organizationId">, turn: Turn, userId: string): Statement[] {
  const org = ctx.organizationId;
  const c = leadRoutingCursors;
  return [
    guard(ctx.db, sql`COALESCE((SELECT ${c.turn} FROM ${c} WHERE ${c.organizationId} = ${org}), 0) = ${turn.turn}`),
    ctx.db
      .insert(c)
      .values({ organizationId: org, lastUserId: userId, turn: turn.turn + 1 })
      .onConflictDoUpdate({ target: c.organizationId, set: { lastUserId: userId, turn: turn.turn + 1 } }),
  ];
}

/** Mode rules: the first rule whose match holds and whose target exists, else the default, else nobody. */
export function decideByRules(
  ctx: Pick<ServiceContext, "db" | "organizationId">,
  routing: LeadRouting,
  lead: LeadFacts,
  known: Known,
  turn: Turn,
): Decision {
  const rules = routing.rules ?? [];
  for (let i = 0; i < rules.length; i++) {
    const held = matched(rules[i]!.match, lead);
    if (held === null) continue;
    const decision = resolveTarget(ctx, rules[i]!.target, `rules.${i}`, `rules.${i} matched ${held}`, known, turn);
    if (decision) return decision;
  }
  const fallback = routing.default && resolveTarget(ctx, routing.default, "default", "no rule matched; default", known, turn);
  return fallback || { kind: "nobody", reason: "no rule matched and the default names nobody of your organization", statements: [] };
}

/** Every target a routing names, for `readKnown`. */
export const targetsOf = (routing: LeadRouting): RouteTarget[] => [
  ...(routing.rules ?? []).map((r) => r.target),
  ...(routing.default ? [routing.default] : []),
];

/** The decision as the API names it. */
export function routedTarget(d: Decision): RoutedTarget | null {
  if (d.kind === "user") return { type: "user", id: d.userId };
  if (d.kind === "pond") return { type: "pond", id: d.pondId };
  if (d.kind === "claim_group") return { type: "claim_group", id: d.label };
  return null;
}

/** The contact's fields a decision sets: an assignee, or a pond (unassigned), or neither (an offer, nobody). */
export const placementOf = (d: Decision): { assignedTo: string | null; pondId: string | null } => ({
  assignedTo: d.kind === "user" ? d.userId : null,
  pondId: d.kind === "pond" ? d.pondId : null,
});

const addMinutes = (at: string, minutes: number) => new Date(Date.parse(at) + minutes * 60_000).toISOString();

/** Speed to lead's deadline for an assignment made at `at`: only a user's, and only once per lead (never after a reassignment it made). */
export function speedDeadline(
  d: Decision,
  speed: LeadRouting["speedToLead"],
  trail: RoutingStep[],
  at: string,
): { speedDueAt: string | null; speedReassignTo: StoredRouteTarget | null } {
  if (d.kind !== "user" || !speed || trail.some((s) => s.event === "speed_to_lead")) return { speedDueAt: null, speedReassignTo: null };
  return { speedDueAt: addMinutes(at, speed.minutes), speedReassignTo: speed.reassignTo as StoredRouteTarget };
}

/** The routing row's columns after a decision made at `at`, with its step appended to the trail. */
export function routingColumns(d: Decision, speed: LeadRouting["speedToLead"], trail: RoutingStep[], event: string, at: string) {
  const target = routedTarget(d);
  const next = target ? [...trail, { at, event, target, reason: d.reason }] : trail;
  return {
    state: (d.kind === "pond" ? "pond" : d.kind === "claim_group" ? "offered" : "assigned") as "assigned" | "pond" | "offered",
    offeredTo: d.kind === "claim_group" ? d.userIds : null,
    offerExpiresAt: d.kind === "claim_group" ? addMinutes(at, d.timeoutMinutes) : null,
    fallback: d.kind === "claim_group" ? (d.fallback as StoredRouteTarget) : null,
    ...speedDeadline(d, speed, trail, at),
    trail: next,
    updatedAt: at,
  };
}

/** A new contact's routing row (intake: the step `routed`). */
export function newRoutingRow(
  ctx: Pick<ServiceContext, "db" | "organizationId">,
  contactId: string,
  d: Decision,
  speed: LeadRouting["speedToLead"],
  at: string,
): Statement {
  return ctx.db
    .insert(contactRouting)
    .values({ contactId, organizationId: ctx.organizationId, ...routingColumns(d, speed, [], "routed", at), version: 1 });
}
