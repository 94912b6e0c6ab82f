import { and, count, desc, eq } from "drizzle-orm";
import { decodeNewestFirstCursor, olderThan, paginate } from "../crm/pagination";
import { contactCommunications } from "../db/schema";
import { withRetries } from "../db/write";
import { commit } from "../events/commit";
import type { DomainEvent } from "../events/event";
import { newEvent } from "../events/outbox";
import { newId } from "../lib/ids";
import type { ServiceContext } from "../service-context";
import { type ActivityFigures, type ContactRecord, findContact, readContactForWrite, touchContact } from "../contacts/service";
import type { Statement } from "../db/write";
import {
  type Communication,
  type CommunicationCreate,
  type CommunicationListQuery,
  type CommunicationRecord,
  toCommunication,
} from "./schemas";
export { communicationsErasable } from "./erasure";

/** The list's sort, named in its cursors: a cursor of another list (activities, by createdAt) is refused. */
const SORT = "occurredAt:desc";

/**
 * The webhook events of a logged communication (spec: Events, Communication), each carrying it as `data.object`.
 * A call logged with its duration has ended: `call_started` carries the call as it began (no duration yet), then
 * `call_ended` the call with its duration ("call_ended carries the call with duration").
 */
function communicationEvents(ctx: ServiceContext, c: Communication): DomainEvent[] {
  // Whole names, so test/node/catalogue-emitters.test.ts sees each one emitted.
  const of = (type: `communication.${string}`, object: Communication) =>
    newEvent(ctx, type, { object, previousAttributes: null, changes: null });
  const sent = c.direction === "outbound";
  switch (c.type) {
    case "email":
      return [of(sent ? "communication.email_sent" : "communication.email_received", c)];
    case "sms":
      return [of(sent ? "communication.sms_sent" : "communication.sms_received", c)];
    case "voicemail":
      return [of("communication.voicemail_received", c)];
    case "call":
      return c.durationSeconds === null
        ? [of("communication.call_started", c)]
        : [of("communication.call_started", { ...c, durationSeconds: null }), of("communication.call_ended", c)];
  }
}

/**
 * POST /v1/contacts/{id}/communications. The communication, its event(s) and the contact's move go in one guarded
 * batch under the contact's version, as an activity's do (contacts/writes.ts `touchContact`): the contact's lastContactedAt
 * moves to occurredAt when that is later (never backwards), which is a contact.updated event (an automatic lead score
 * is recomputed: lastContactedAt is its recency; its engagement counts activities only); its version (the ETag) moves
 * in any case, since include=communications shows the communication. With an Idempotency-Key the answer is kept in
 * the same batch.
 */
export async function logCommunication(ctx: ServiceContext, contactId: string, input: CommunicationCreate): Promise<Communication> {
  return withRetries(async () => {
    const { before, figures } = await readContactForWrite(ctx, contactId);
    const { communication, statements, events } = communicationStatements(ctx, before, figures, input, new Date());
    await commit(ctx, statements, events, { answer: communication });
    return communication;
  });
}

/**
 * A communication of a contact read for a write (contacts/service.ts `readContactForWrite`), as statements and events
 * for the caller's own batch: the row and the contact's guarded move, as `logCommunication` writes them (the action
 * plans' e-mail step logs its mail in the batch that records the step done).
 */
export function communicationStatements(
  ctx: ServiceContext,
  before: ContactRecord,
  figures: ActivityFigures,
  input: CommunicationCreate,
  now: Date,
): { communication: Communication; statements: Statement[]; events: DomainEvent[] } {
  const at = now.toISOString();
  const row: CommunicationRecord = {
    id: newId(),
    organizationId: ctx.organizationId,
    contactId: before.id,
    type: input.type,
    direction: input.direction,
    subject: input.subject ?? null,
    body: input.body ?? null,
    durationSeconds: input.durationSeconds ?? null,
    occurredAt: input.occurredAt ?? at,
    metadata: input.metadata ?? null,
    createdBy: ctx.actor.userId ?? null,
    createdAt: at,
  };
  const communication = toCommunication(row);
  const contact = touchContact(ctx, before, figures, row.occurredAt, now);
  return {
    communication,
    statements: [...contact.statements, ctx.db.insert(contactCommunications).values(row)],
    events: [...communicationEvents(ctx, communication), ...contact.events],
  };
}

/** GET /v1/contacts/{id}/communications: newest first, optionally of one type; the page and the total in one round trip. */
export async function listCommunications(ctx: ServiceContext, contactId: string, q: CommunicationListQuery) {
  const after = decodeNewestFirstCursor(q.cursor, SORT);
  await findContact(ctx, contactId);
  const t = contactCommunications;
  const scope = and(eq(t.organizationId, ctx.organizationId), eq(t.contactId, contactId), q.type ? eq(t.type, q.type) : undefined);
  const [rows, [total]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(t)
      .where(after ? and(scope, olderThan(t.occurredAt, t.id, after)) : scope)
      .orderBy(desc(t.occurredAt), desc(t.id))
      .limit(q.limit + 1),
    ctx.db.select({ n: count() }).from(t).where(scope),
  ]);
  const { page, pagination } = paginate(rows, q.limit, total?.n ?? 0, (r) => ({ at: r.occurredAt, id: r.id }), SORT);
  return { data: page.map(toCommunication), pagination };
}
