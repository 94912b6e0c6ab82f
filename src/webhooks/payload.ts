import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { organizations, users } from "../db/schema";
import type { DomainEvent } from "../events/event";
import { WEBHOOK_API_VERSION } from "./catalogue";

export interface PayloadParties {
  organization: { id: string; name: string };
  user: { id: string; name: string | null; email: string } | null;
}

/** The organization and the acting user (null for system actors), in one D1 round trip. */
export async function loadParties(db: Db, organizationId: string, userId: string | null): Promise<PayloadParties> {
  const [org, user] = await db.batch([
    db.select({ id: organizations.id, name: organizations.name }).from(organizations).where(eq(organizations.id, organizationId)),
    db
      .select({ id: users.id, name: users.name, email: users.email })
      .from(users)
      .where(and(eq(users.id, userId ?? ""), eq(users.organizationId, organizationId))),
  ]);
  return { organization: org[0] ?? { id: organizationId, name: "" }, user: user[0] ?? null };
}

/** The payload of an event (spec: Payload structure), as every delivery of it and the event log (GET /v1/events) show it. */
export interface WebhookPayload {
  id: string;
  event: string;
  apiVersion: string;
  createdAt: string;
  data: { object: unknown; previousAttributes: unknown; changes: unknown } & Partial<Record<(typeof PAYLOAD_EXTRAS)[number], unknown>>;
  organization: PayloadParties["organization"];
  user: PayloadParties["user"];
}

/**
 * What an event may add beside object, previousAttributes and changes (spec: Payload structure adds `priceChange` to
 * property.price_changed; ours: `signer`, the signer an envelope.opened or envelope.signer_signed is about,
 * `documentSha256`, the sealed PDF's hash on envelope.sealed, `tags` the tags a contact.tagged/untagged added or
 * removed, `task` and `document` of deal.task_* and deal.document_uploaded (no link: it would outlive its signature),
 * `stageChange` of deal.stage_changed, `signal` of a property's inquiry, showing or offer, `mergedFrom` and
 * `mergedInto` of a merge's contact.updated and contact.deleted, `claimedBy` and `pondId` of contact.claimed,
 * `appointment` of a showing appointment's property.showing_scheduled, `reason` of appointment.cancelled, `step` of
 * action_plan.step_due: the plan's step that is due). Other keys stay internal (an appointment.updated's `uninvited`,
 * the addresses its consumer mails a cancellation).
 */
const PAYLOAD_EXTRAS = [
  "priceChange",
  "signer",
  "documentSha256",
  "tags",
  "task",
  "document",
  "stageChange",
  "signal",
  "mergedFrom",
  "mergedInto",
  "claimedBy",
  "pondId",
  "appointment",
  "reason",
  "step",
] as const;

/** The payload (spec: Payload structure): `data` carries the event's object, previousAttributes and changes, and the extras it has. */
export function payloadOf(event: Pick<DomainEvent, "id" | "type" | "occurredAt" | "data">, parties: PayloadParties): WebhookPayload {
  const source = event.data as Record<string, unknown>;
  const { object = null, previousAttributes = null, changes = null } = source;
  const data: WebhookPayload["data"] = { object, previousAttributes, changes };
  for (const key of PAYLOAD_EXTRAS) if (source[key] !== undefined) data[key] = source[key];
  return {
    id: event.id,
    event: event.type,
    apiVersion: WEBHOOK_API_VERSION,
    createdAt: event.occurredAt,
    data,
    organization: parties.organization,
    user: parties.user,
  };
}

/** The delivery body: the payload serialised once; every attempt sends these bytes. */
export const buildPayload = (event: Pick<DomainEvent, "id" | "type" | "occurredAt" | "data">, parties: PayloadParties): string =>
  JSON.stringify(payloadOf(event, parties));
