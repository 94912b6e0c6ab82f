import type { EventConsumer } from "../events/consumers";
import type { DomainEvent } from "../events/event";
import { withDeferred } from "../lib/deferred";
import { Validation, NotFound } from "../lib/errors";
import { withRetries } from "../db/write";
import { commit } from "../events/commit";
import type { ServiceContext } from "../service-context";
import { systemContext } from "../shards/tenants";
import type { StoredPlanTrigger } from "./schemas";
import { activeEnrollmentsOf, type EnrolledVia, enrollContact, pauseStatements, plansTriggeredBy } from "./service";

type Data = { object?: Record<string, unknown>; tags?: unknown; stageChange?: { newStage?: unknown } };

/** The contact an event is about and whether a plan's trigger matches it (null: the event names no contact). */
function matchOf(event: DomainEvent): { contactId: string; matches: (t: StoredPlanTrigger) => boolean; via: EnrolledVia } | null {
  const data = event.data as Data;
  const object = data.object ?? {};
  switch (event.type) {
    case "contact.tagged": {
      const added = Array.isArray(data.tags) ? (data.tags as string[]) : [];
      return typeof object.id === "string"
        ? { contactId: object.id, via: "trigger", matches: (t) => t.event === "contact.tagged" && added.includes(t.tag) }
        : null;
    }
    case "deal.stage_changed": {
      const stage = data.stageChange?.newStage ?? object.stage;
      return typeof object.contactId === "string"
        ? { contactId: object.contactId, via: "trigger", matches: (t) => t.event === "deal.stage_changed" && t.stage === stage }
        : null;
    }
    case "contact.created":
      // Lead intake's rule: a plan with the trigger {event: "contact.created", source} takes every new contact of that source.
      return typeof object.id === "string"
        ? {
            contactId: object.id,
            via: "intake",
            matches: (t) => t.event === "contact.created" && (t.source === undefined || t.source === object.source),
          }
        : null;
    default:
      return null;
  }
}

async function enrollByTrigger(ctx: ServiceContext, event: DomainEvent): Promise<void> {
  const match = matchOf(event);
  if (!match) return;
  const plans = await plansTriggeredBy(ctx, event.type as StoredPlanTrigger["event"]);
  for (const plan of plans) {
    if (!plan.triggers.some(match.matches)) continue;
    await enrollContact(ctx, plan.id, match.contactId, { via: match.via, at: event.occurredAt, onClash: "skip" }).catch((err) => {
      // The contact or the plan went away since the event: nothing to enroll.
      if (err instanceof Validation || err instanceof NotFound) return null;
      throw err;
    });
  }
}

/** contact.tagged, deal.stage_changed, contact.created → enrolls the contact in each plan whose trigger matches (once: already in it is skipped). */
export const actionPlanTriggerConsumer: EventConsumer = {
  name: "action-plan-triggers",
  accepts: (type) => type === "contact.tagged" || type === "deal.stage_changed" || type === "contact.created",
  async handle(events, { env, db }) {
    for (const event of events)
      await withDeferred((defer) => enrollByTrigger(systemContext(env, db, event.organizationId, `event:${event.id}`, defer), event));
  },
};

/** The contact answered: an inbound e-mail, SMS, call or voicemail. */
const REPLIES = new Set([
  "communication.email_received",
  "communication.sms_received",
  "communication.call_started",
  "communication.voicemail_received",
]);

/** Pauses every active enrollment of the contact who answered (reason: the event's type). */
export async function pauseOnReply(ctx: ServiceContext, event: DomainEvent): Promise<number> {
  const object = (event.data as Data).object ?? {};
  if (typeof object.contactId !== "string" || object.direction === "outbound") return 0;
  const contactId = object.contactId;
  return withRetries(async () => {
    const active = await activeEnrollmentsOf(ctx, contactId);
    if (active.length === 0) return 0;
    const at = new Date().toISOString();
    const moves = active.map((row) => pauseStatements(ctx, row, event.type, at));
    await commit(
      ctx,
      moves.flatMap((m) => m.statements),
      moves.map((m) => m.event),
    );
    return moves.length;
  });
}

export const actionPlanReplyConsumer: EventConsumer = {
  name: "action-plan-replies",
  accepts: (type) => REPLIES.has(type),
  async handle(events, { env, db }) {
    for (const event of events)
      await withDeferred((defer) => pauseOnReply(systemContext(env, db, event.organizationId, `event:${event.id}`, defer), event));
  },
};
