import { and, eq, type SQL, sql } from "drizzle-orm";
import { recordWrites } from "../crm/record-writes";
import { dealActivities, deals, dealStageChanges, dealStageStats, type StoredCommission, type StoredTeamMember, users } from "../db/schema";
import { atVersion, expectVersion, guard, rowExists, type Statement, type VersionedTable } from "../db/write";
import type { DomainEvent } from "../events/event";
import { newEvent } from "../events/outbox";
import { type FieldIssue, Validation } from "../lib/errors";
import { newId, newRecordId } from "../lib/ids";
import { idsOf } from "../lib/sql";
import { type Reference, referenceIssuesOf, references, referencesRead } from "../db/references";
import type { ServiceContext } from "../service-context";
import { type DealRecord, toDeal } from "./mapping";
import { rollupMoves } from "./rollups";
import {
  type DealCreate,
  type DealStage,
  type DealStatus,
  type DealUpdate,
  FINAL_STAGES,
  READ_ONLY_FIELDS,
  STAGE_PROBABILITY,
} from "./schemas";

export const DEALS: VersionedTable = { table: deals, id: deals.id, organizationId: deals.organizationId, version: deals.version };

/** A deal as every resource's writes see it (crm/record-writes.ts): lastActivityAt moving is no change of its own. */
const dealWrites = recordWrites({
  resource: "deals",
  readOnly: READ_ONLY_FIELDS,
  updated: "deal.updated",
  shown: toDeal,
  unchanged: ["updatedAt", "lastActivityAt"],
});

/** The deals' count and list version, in the batch of every deal write; the input a write takes. */
export const { bumpCounters, writableInput } = dealWrites;

const issue = (path: (string | number)[], code: string, message: string): FieldIssue => ({ field: path.join("."), path, code, message });

/** To the cent. */
export const round2 = (n: number) => Math.round(n * 100) / 100;

/**
 * The contact and property a write sets or changes (db/references.ts: a reference kept as it was stays valid even
 * when its target was deleted since).
 */
export function dealReferences(input: DealUpdate, before?: DealRecord): Reference[] {
  return references(
    { path: ["contactId"], target: "contact", id: input.contactId !== before?.contactId ? input.contactId : undefined },
    { path: ["propertyId"], target: "property", id: input.propertyId !== before?.propertyId ? input.propertyId : undefined },
  );
}

/**
 * The contact, property, agent and team members a write names belong to the caller's organization (the contact and
 * property only where the write sets or changes them), and the team's splits add up to 1: every problem at once, in
 * one round trip.
 */
export async function checkReferences(ctx: ServiceContext, input: DealUpdate, before?: DealRecord): Promise<void> {
  const org = ctx.organizationId;
  const userIds = [...new Set([...(input.assignedTo ? [input.assignedTo] : []), ...(input.teamMembers ?? []).map((m) => m.userId)])];
  const refs = dealReferences(input, before);
  // One round trip for the references and the users; none when the write names neither (most PUTs).
  const [refRow, found] =
    refs.length || userIds.length
      ? await ctx.db.batch([
          referencesRead(ctx, refs),
          ctx.db
            .select({ id: users.id })
            .from(users)
            .where(and(idsOf(users, org, userIds.length ? userIds : [""]))),
        ])
      : [undefined, [] as { id: string }[]];
  const refIssues = referenceIssuesOf(refs, refRow);
  const known = new Set(found.map((u) => u.id));
  const issues: FieldIssue[] = [...refIssues];
  if (input.assignedTo && !known.has(input.assignedTo))
    issues.push(issue(["assignedTo"], "invalid_reference", "No user with this id in your organization"));
  const team = input.teamMembers ?? [];
  const seen = new Set<string>();
  team.forEach((m, i) => {
    if (!known.has(m.userId))
      issues.push(issue(["teamMembers", i, "userId"], "invalid_reference", "No user with this id in your organization"));
    if (seen.has(m.userId)) issues.push(issue(["teamMembers", i, "userId"], "duplicate", "This user is already a member of the team"));
    seen.add(m.userId);
  });
  const total = team.reduce((s, m) => s + m.commissionSplit, 0);
  if (team.length && Math.abs(total - 1) > 1e-6)
    issues.push(
      issue(["teamMembers"], "invalid_split_total", `The members' commission splits add up to ${Math.round(total * 1e6) / 1e6}, not 1`),
    );
  if (issues.length) throw new Validation(issues);
}

/**
 * The stored commission: a given one replaces the previous one (null fields left out, as a read shows them); with a
 * rate, its amount is the deal's amount × rate (a given amount must agree).
 */
function commissionFor(
  raw: DealUpdate["commission"],
  previous: StoredCommission | null,
  amount: number,
  issues: FieldIssue[],
): StoredCommission | null {
  if (raw === null) return null;
  const given =
    raw === undefined
      ? undefined
      : (Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== null && v !== undefined)) as StoredCommission);
  const c: StoredCommission = given === undefined ? { ...(previous ?? {}) } : { ...given };
  if (given === undefined && !previous) return null;
  if (c.rate !== undefined) {
    const computed = round2(amount * c.rate);
    if (given?.amount !== undefined && Math.abs(given.amount - computed) > 0.005) {
      issues.push(
        issue(
          ["commission", "amount"],
          "commission_mismatch",
          `With rate ${c.rate} the commission on ${amount} is ${computed}; leave amount out to have it computed`,
        ),
      );
    }
    c.amount = computed;
  }
  return Object.keys(c).length ? c : null;
}

function mergeTimeline(previous: Record<string, string> | null, given: DealUpdate["timeline"]): Record<string, string> | null {
  if (given === null) return null;
  if (given === undefined) return previous;
  const out: Record<string, string> = { ...(previous ?? {}) };
  for (const [k, v] of Object.entries(given)) {
    if (v === undefined) continue;
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return Object.keys(out).length ? out : null;
}

/**
 * Where a deal ends up when it enters `stage` from `from` (STAGE_RULES in schemas.ts): CLOSED closes it, LOST
 * cancels it, an open stage after a final one reopens it; the probability is the one given or the stage's default.
 */
export function enterStage(
  from: DealRecord | null,
  stage: DealStage,
  probability: number | undefined,
  status: DealStatus | undefined,
  at: string,
) {
  const wasFinal = from !== null && FINAL_STAGES.includes(from.stage as DealStage);
  const nextStatus: DealStatus =
    stage === "CLOSED"
      ? "CLOSED"
      : stage === "LOST"
        ? "CANCELLED"
        : (status ?? (wasFinal || !from ? "ACTIVE" : (from.status as DealStatus)));
  return {
    stage,
    status: nextStatus,
    probability: probability ?? STAGE_PROBABILITY[stage],
    closedAt: stage === "CLOSED" ? at : null,
    decidedAt: FINAL_STAGES.includes(stage) ? at : null,
  };
}

/** Status and stage agree: CLOSED with CLOSED only, LOST with CANCELLED only. */
function checkStatus(stage: string, status: string, issues: FieldIssue[]): void {
  if (status === "CLOSED" && stage !== "CLOSED")
    issues.push(issue(["status"], "invalid_status", "Status CLOSED goes with stage CLOSED: move the deal to CLOSED instead"));
  if (stage === "CLOSED" && status !== "CLOSED")
    issues.push(issue(["status"], "invalid_status", "A deal in stage CLOSED has status CLOSED"));
  if (stage === "LOST" && status !== "CANCELLED")
    issues.push(issue(["status"], "invalid_status", "A deal in stage LOST has status CANCELLED"));
}

/** A new deal: ACTIVE, in LEAD or the open stage given. */
export function newDealRecord(ctx: ServiceContext, input: DealCreate, now: Date): DealRecord {
  const at = now.toISOString();
  const issues: FieldIssue[] = [];
  const stage = input.stage ?? "LEAD";
  if (FINAL_STAGES.includes(stage))
    issues.push(issue(["stage"], "invalid_stage", `A deal cannot be created in ${stage}: create it, then move it`));
  if (input.status && input.status !== "ACTIVE" && input.status !== "ON_HOLD")
    issues.push(issue(["status"], "invalid_status", "A new deal is ACTIVE or ON_HOLD"));
  const entered = enterStage(null, stage, input.probability, input.status, at);
  const commission = commissionFor(input.commission, null, input.amount, issues);
  if (issues.length) throw new Validation(issues);
  const timeline = mergeTimeline(null, input.timeline);
  return {
    id: newRecordId(Date.parse(at)),
    organizationId: ctx.organizationId,
    title: input.title,
    description: input.description ?? null,
    type: input.type,
    stage: entered.stage,
    status: entered.status,
    amount: input.amount,
    commission,
    contactId: input.contactId,
    propertyId: input.propertyId ?? null,
    assignedTo: input.assignedTo ?? null,
    teamMembers: (input.teamMembers ?? []) as StoredTeamMember[],
    timeline,
    closingDate: timeline?.closingDate?.slice(0, 10) ?? "",
    probability: entered.probability,
    source: input.source ?? null,
    notes: input.notes ?? null,
    tags: [...new Set(input.tags ?? [])],
    createdAt: at,
    updatedAt: at,
    lastActivityAt: at,
    closedAt: null,
    decidedAt: null,
    customFields: null,
    version: 1,
  };
}

/** `before` with an update applied (stage rules included); the caller sets updatedAt and version. */
export function applyUpdate(before: DealRecord, input: DealUpdate, now: Date): DealRecord {
  const at = now.toISOString();
  const issues: FieldIssue[] = [];
  const amount = input.amount ?? before.amount;
  const stageChanges = input.stage !== undefined && input.stage !== before.stage;
  const entered = stageChanges ? enterStage(before, input.stage!, input.probability, input.status, at) : null;
  const status = entered ? entered.status : (input.status ?? before.status);
  const stage = entered ? entered.stage : before.stage;
  checkStatus(stage, status, issues);
  const commission = commissionFor(input.commission, before.commission, amount, issues);
  if (issues.length) throw new Validation(issues);
  const timeline = mergeTimeline(before.timeline, input.timeline);
  const pick = <K extends keyof DealRecord>(key: K, value: DealRecord[K] | undefined): DealRecord[K] =>
    value === undefined ? before[key] : value;
  return {
    ...before,
    title: pick("title", input.title),
    description: pick("description", input.description),
    type: pick("type", input.type),
    stage,
    status,
    amount,
    commission,
    contactId: pick("contactId", input.contactId),
    propertyId: pick("propertyId", input.propertyId),
    assignedTo: pick("assignedTo", input.assignedTo),
    teamMembers: pick("teamMembers", input.teamMembers as StoredTeamMember[] | undefined),
    timeline,
    closingDate: timeline?.closingDate?.slice(0, 10) ?? "",
    probability: entered ? entered.probability : (input.probability ?? before.probability),
    source: pick("source", input.source),
    notes: pick("notes", input.notes),
    tags: input.tags ? [...new Set(input.tags)] : before.tags,
    closedAt: entered ? entered.closedAt : before.closedAt,
    decidedAt: entered ? entered.decidedAt : before.decidedAt,
  };
}

/**
 * The per-stage figures of the pipeline moved by one write: `before` leaves its stage, `after` enters its own; and the
 * analytics rollups it changes (rollups.ts). Every deal write that creates, changes, trashes or restores a deal batches these.
 */
export function pipelineMoves(ctx: ServiceContext, before: DealRecord | null, after: DealRecord | null): Statement[] {
  return [...stageStatsMoves(ctx, before, after), ...rollupMoves(ctx, before, after)];
}

function stageStatsMoves(ctx: ServiceContext, before: DealRecord | null, after: DealRecord | null): Statement[] {
  const delta = new Map<string, { count: number; value: number; probability: number }>();
  const add = (d: DealRecord | null, sign: 1 | -1) => {
    if (!d) return;
    const cur = delta.get(d.stage) ?? { count: 0, value: 0, probability: 0 };
    delta.set(d.stage, {
      count: cur.count + sign,
      value: cur.value + sign * d.amount,
      probability: cur.probability + sign * d.probability,
    });
  };
  add(before, -1);
  add(after, 1);
  return [...delta.entries()]
    .filter(([, d]) => d.count !== 0 || d.value !== 0 || d.probability !== 0)
    .map(([stage, d]) =>
      ctx.db
        .insert(dealStageStats)
        .values({ organizationId: ctx.organizationId, stage, count: d.count, value: d.value, probabilitySum: d.probability })
        .onConflictDoUpdate({
          target: [dealStageStats.organizationId, dealStageStats.stage],
          set: {
            count: sql`${dealStageStats.count} + ${d.count}`,
            value: sql`${dealStageStats.value} + ${d.value}`,
            probabilitySum: sql`${dealStageStats.probabilitySum} + ${d.probability}`,
          },
        }),
    );
}

/** A row of the deal's activity log. */
export const activityRow = (
  ctx: ServiceContext,
  dealId: string,
  type: string,
  description: string,
  metadata: Record<string, unknown> | null,
  at: string,
) => ({
  id: newId(),
  organizationId: ctx.organizationId,
  dealId,
  type,
  description,
  userId: ctx.actor.userId ?? null,
  metadata,
  createdAt: at,
});

/** The activity and history rows of a stage change (nothing when the stage stays). */
export function stageChangeStatements(
  ctx: ServiceContext,
  before: DealRecord | null,
  after: DealRecord,
  reason: string | undefined,
  at: string,
): Statement[] {
  if (before && before.stage === after.stage) return [];
  const previousStage = before?.stage ?? null;
  const rows: Statement[] = [
    ctx.db
      .insert(dealStageChanges)
      .values({ id: newId(), organizationId: ctx.organizationId, dealId: after.id, fromStage: previousStage, toStage: after.stage, at }),
  ];
  if (before) {
    const description = `Stage changed from ${previousStage} to ${after.stage}${reason ? `: ${reason}` : ""}`;
    rows.push(
      ctx.db
        .insert(dealActivities)
        .values(
          activityRow(ctx, after.id, "STAGE_CHANGED", description, { previousStage, newStage: after.stage, reason: reason ?? null }, at),
        ),
    );
  }
  return rows;
}

/**
 * The events of a change: deal.updated with what changed; a stage change adds deal.stage_changed, and CLOSED adds
 * deal.won, deal.closed and the internal DEAL_WON (survey scheduling listens to it), LOST adds deal.lost.
 */
export function changeEvents(
  ctx: ServiceContext,
  before: DealRecord,
  after: DealRecord,
  reason?: string,
  contactEmailKey?: string | null,
): DomainEvent[] {
  const updated = dealWrites.updated(ctx, before, after);
  if (!updated) return [];
  const { object } = updated;
  const events = [updated.event];
  if (before.stage === after.stage) return events;
  const stageChange = { previousStage: before.stage, newStage: after.stage, reason: reason ?? null };
  events.push(
    newEvent(ctx, "deal.stage_changed", { object, previousAttributes: { stage: before.stage }, changes: ["stage"], stageChange }),
  );
  if (after.stage === "CLOSED") {
    events.push(newEvent(ctx, "deal.won", { object, previousAttributes: { stage: before.stage }, changes: ["stage", "status"] }));
    events.push(
      newEvent(ctx, "deal.closed", {
        object,
        previousAttributes: { stage: before.stage, status: before.status },
        changes: ["stage", "status"],
      }),
    );
    events.push(
      newEvent(ctx, "DEAL_WON", {
        dealId: after.id,
        contactId: after.contactId,
        // The contact's address as the deal was won: its survey goes there or nowhere (surveys/scheduling.ts).
        ...(contactEmailKey !== undefined ? { contactEmailKey } : {}),
        propertyId: after.propertyId,
        assignedTo: after.assignedTo,
        type: after.type,
        amount: after.amount,
        closedAt: after.closedAt,
      }),
    );
  }
  if (after.stage === "LOST")
    events.push(
      newEvent(ctx, "deal.lost", {
        object,
        previousAttributes: { stage: before.stage, status: before.status },
        changes: ["stage", "status"],
      }),
    );
  return events;
}

/** The compare-and-set of one deal: the guard that it is still at the version read, its update, the counter version. */
export function replaceDeal(ctx: ServiceContext, before: DealRecord, after: DealRecord): Statement[] {
  const { id: _id, organizationId: _org, createdAt: _created, ...columns } = after;
  return [
    expectVersion(ctx.db, DEALS, ctx.organizationId, before),
    ctx.db
      .update(deals)
      .set(columns)
      .where(atVersion(DEALS, ctx.organizationId, before.id, before.version)),
    bumpCounters(ctx, 0),
  ];
}

/**
 * The statements that hang a child (a task, a document, a completion) on a deal in one atomic batch without contending
 * on the deal's version: the deal must still exist and each of `conditions` hold (a bound on its children, a task
 * still open), and the deal's lastActivityAt and version move by increment. Concurrent children then all land at
 * once, none lands under a deal deleted meanwhile, and a concurrent PUT of the deal still sees the version move.
 */
export function touchDeal(ctx: ServiceContext, dealId: string, at: string, conditions: SQL[] = []): Statement[] {
  const where = and(eq(deals.organizationId, ctx.organizationId), eq(deals.id, dealId));
  return [
    guard(ctx.db, rowExists(deals, where)),
    ...conditions.map((c) => guard(ctx.db, c)),
    ctx.db
      .update(deals)
      .set({ lastActivityAt: sql`max(${deals.lastActivityAt}, ${at})`, version: sql`${deals.version} + 1` })
      .where(where),
  ];
}
