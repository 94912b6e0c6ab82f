import { and, eq, sql } from "drizzle-orm";
import { contactMatchSql, contactWhere, resolvedAt } from "../contacts/service";
import type { ContactListQuery } from "../contacts/schemas";
import { customFieldQuery } from "../crm/custom-fields";
import type { Db } from "../db/client";
import { processedEvents, smartListMembers, smartLists } from "../db/schema";
import { expectNoRow, expectRow, guard, type Statement, withRetries } from "../db/write";
import type { Env } from "../env";
import { commit } from "../events/commit";
import type { EventConsumer } from "../events/consumers";
import type { DomainEvent } from "../events/event";
import { newEvent } from "../events/outbox";
import { withDeferred } from "../lib/deferred";
import { nowIso } from "../lib/time";
import type { ServiceContext } from "../service-context";
import { systemContext } from "../shards/tenants";
import { storedQuery } from "./service";

/**
 * smart_list.entered / smart_list.exited (issue 46): a contact's membership is the difference between what matched
 * when it was last looked at (smart_list_members) and what matches now. Writes are looked at by the events consumer
 * (a contact's, task's or communication's event re-evaluates that contact against the organization's lists); time by
 * the daily pass (the lists with a relative date bound). Each change moves the member row in the batch that stages its
 * event, guarded on the row as it was read: of two evaluations racing on one contact, one stages the event and the
 * other, finding the row moved, reads again and has nothing left to do.
 */
type Row = typeof smartLists.$inferSelect;

/** A list ready to test contacts against at one instant: its query resolved, its custom fields read. */
interface Evaluable {
  row: Row;
  q: ContactListQuery;
  custom: Awaited<ReturnType<typeof customFieldQuery>>;
}

async function evaluable(ctx: ServiceContext, rows: Row[], now: Date): Promise<Evaluable[]> {
  const out: Evaluable[] = [];
  for (const row of rows) {
    const parsed = await storedQuery(ctx, row);
    // A query that no longer parses (a custom field deleted) matches nobody: its members exit.
    const q = resolvedAt(parsed ?? { limit: 1, "leadScore[gte]": 101 }, now) as ContactListQuery;
    out.push({ row, q, custom: parsed ? await customFieldQuery(ctx, "contact", "c", q, q.sort) : null });
  }
  return out;
}

const memberIs = (organizationId: string, listId: string, contactId: string) =>
  and(eq(smartListMembers.organizationId, organizationId), eq(smartListMembers.listId, listId), eq(smartListMembers.contactId, contactId));

const membershipEvent = (ctx: ServiceContext, type: "smart_list.entered" | "smart_list.exited", row: Row, contactId: string): DomainEvent =>
  newEvent(ctx, type, { object: { id: row.id, name: row.name, contactId }, previousAttributes: null, changes: null });

/** Re-evaluates `contactId` against `lists` at `now`: the member rows and the events of what changed, in one batch. */
export async function reevaluateContact(ctx: ServiceContext, lists: Evaluable[], contactId: string, now: Date): Promise<number> {
  if (lists.length === 0) return 0;
  return withRetries(async () => {
    const [members, ...hits] = await ctx.d1.batch([
      ctx.d1
        .prepare("SELECT list_id FROM smart_list_members WHERE organization_id = ? AND contact_id = ?")
        .bind(ctx.organizationId, contactId),
      ...lists.map((l) => {
        const m = contactMatchSql(ctx.organizationId, l.q, l.custom, contactId);
        return ctx.d1.prepare(m.sql).bind(...m.params);
      }),
    ]);
    const was = new Set((members!.results as { list_id: string }[]).map((r) => r.list_id));
    const statements: Statement[] = [];
    const events: DomainEvent[] = [];
    lists.forEach((l, i) => {
      const matches = (hits[i]!.results[0] as { hit: number }).hit === 1;
      const where = memberIs(ctx.organizationId, l.row.id, contactId);
      if (matches && !was.has(l.row.id)) {
        statements.push(
          expectNoRow(ctx.db, smartListMembers, where),
          // The list may have been deleted since it was read: then no member row and no event.
          ctx.db
            .insert(smartListMembers)
            .select(
              sql`SELECT ${l.row.id}, ${contactId}, ${ctx.organizationId}, ${nowIso(now)} WHERE EXISTS (SELECT 1 FROM ${smartLists} WHERE ${smartLists.id} = ${l.row.id})`,
            ),
        );
        events.push(membershipEvent(ctx, "smart_list.entered", l.row, contactId));
      } else if (!matches && was.has(l.row.id)) {
        statements.push(expectRow(ctx.db, smartListMembers, where), ctx.db.delete(smartListMembers).where(where));
        events.push(membershipEvent(ctx, "smart_list.exited", l.row, contactId));
      }
    });
    if (events.length) await commit(ctx, statements, events);
    return events.length;
  });
}

/** The organization's lists, ready at `now`. */
async function listsOf(ctx: ServiceContext, now: Date): Promise<Evaluable[]> {
  const rows = await ctx.db.select().from(smartLists).where(eq(smartLists.organizationId, ctx.organizationId));
  return evaluable(ctx, rows, now);
}

/** The contacts an event is about: the contact's own, or the contact of a task or communication (before and after a move). */
function contactsOf(event: DomainEvent): string[] {
  const data = event.data as { object?: { id?: unknown; contactId?: unknown }; previousAttributes?: { contactId?: unknown } | null };
  const ids = event.type.startsWith("contact.") ? [data.object?.id] : [data.object?.contactId, data.previousAttributes?.contactId];
  return ids.filter((id): id is string => typeof id === "string" && id.length > 0);
}

const WATCHED = /^(contact|task|communication)\./;
/** An import writes its contacts without an event each (import.completed counts them): every list is diffed whole. */
const IMPORTED = "import.completed";
/** Steps of one list's whole diff in one consumer run (MEMBERS_PER_STEP each way each): the rest waits for the daily pass. */
const MAX_STEPS = 40;

/** The events consumer: each affected contact re-evaluated once per batch, per organization, at the time of handling. */
export const smartListConsumer: EventConsumer = {
  name: "smart-list-membership",
  accepts: (type) => WATCHED.test(type) || type === IMPORTED,
  handle: (events, { env, db }) =>
    withDeferred(async (defer) => {
      const now = new Date();
      const byOrg = new Map<string, Set<string>>();
      for (const e of events)
        for (const id of contactsOf(e)) byOrg.set(e.organizationId, (byOrg.get(e.organizationId) ?? new Set()).add(id));
      for (const [organizationId, ids] of byOrg) {
        const ctx = systemContext(env, db, organizationId, `event:${events[0]!.id}`, defer);
        const lists = await listsOf(ctx, now);
        for (const id of ids) await reevaluateContact(ctx, lists, id, now);
      }
      for (const organizationId of new Set(events.filter((e) => e.type === IMPORTED).map((e) => e.organizationId))) {
        const ctx = systemContext(env, db, organizationId, `event:${events[0]!.id}`, defer);
        for (const list of await listsOf(ctx, now)) for (let step = 0; step < MAX_STEPS && !(await stepList(ctx, list, now)).done; step++);
      }
    }),
};

/** Lists the daily pass looks at per cron run, and members it moves per list and direction per run: bounded work. */
export const LISTS_PER_PASS = 20;
export const MEMBERS_PER_STEP = 500;
/** The processed_events consumer under which a list's day is marked done (`<listId>@<YYYY-MM-DD>`). */
const DAILY = "smart-lists-daily";

/**
 * The daily pass (cron, every minute): the lists with a relative date bound not yet brought up to `now` on `now`'s
 * day (UTC), LISTS_PER_PASS at a time; each list's members moved to what matches at `now`, MEMBERS_PER_STEP each way,
 * with their events, in one guarded batch. A list whose difference was larger carries on at the next run; one done
 * is marked for the day in that batch, so each list is diffed in full once a day. Writes are the consumer's.
 */
export async function refreshSmartLists(env: Env, db: Db, now: Date): Promise<number> {
  const day = nowIso(now).slice(0, 10);
  const due = await db
    .select()
    .from(smartLists)
    .where(
      sql`(${smartLists.query} LIKE '%"-P%' OR ${smartLists.query} LIKE '%"+P%' OR ${smartLists.query} LIKE '%":"P%')
        AND NOT EXISTS (SELECT 1 FROM processed_events p WHERE p.consumer = ${DAILY} AND p.event_id = ${smartLists.id} || '@' || ${day} AND p.processed_at IS NOT NULL)`,
    )
    .limit(LISTS_PER_PASS);
  // Marks of days before yesterday are never read again (a pass asks for its own day): a bounded few go each run.
  await db.run(
    sql`DELETE FROM processed_events WHERE rowid IN (SELECT rowid FROM processed_events WHERE consumer = ${DAILY} AND processed_at < ${nowIso(new Date(now.getTime() - 2 * 86_400_000))} LIMIT ${LISTS_PER_PASS * 5})`,
  );
  let moved = 0;
  await withDeferred(async (defer) => {
    for (const row of due) {
      const ctx = systemContext(env, db, row.organizationId, `cron:smart-lists:${day}`, defer);
      const [list] = await evaluable(ctx, [row], now);
      moved += (await stepList(ctx, list!, now, `${row.id}@${day}`)).moved;
    }
  });
  return moved;
}

/** One bounded step of a list's diff at `now`; marks `doneKey` (if any) when nothing is left. */
function stepList(ctx: ServiceContext, list: Evaluable, now: Date, doneKey?: string): Promise<{ moved: number; done: boolean }> {
  const id = list.row.id;
  const where = contactWhere(ctx.organizationId, list.q, list.custom);
  const cond = where.sql.join(" AND ");
  return withRetries(async () => {
    const [entered, exited] = await ctx.d1.batch([
      ctx.d1
        .prepare(
          `SELECT c.id FROM contacts c WHERE ${cond} AND NOT EXISTS (SELECT 1 FROM smart_list_members m WHERE m.list_id = ? AND m.contact_id = c.id) LIMIT ${MEMBERS_PER_STEP}`,
        )
        .bind(...where.params, id),
      ctx.d1
        .prepare(
          `SELECT m.contact_id AS id FROM smart_list_members m WHERE m.list_id = ? AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.id = m.contact_id AND ${cond}) LIMIT ${MEMBERS_PER_STEP}`,
        )
        .bind(id, ...where.params),
    ]);
    const ins = (entered!.results as { id: string }[]).map((r) => r.id);
    const outs = (exited!.results as { id: string }[]).map((r) => r.id);
    const done = ins.length < MEMBERS_PER_STEP && outs.length < MEMBERS_PER_STEP;
    const insJson = JSON.stringify(ins);
    const outsJson = JSON.stringify(outs);
    const statements: Statement[] = [
      // The member rows as read: none of the entering, all of the exiting (a consumer may have moved one meanwhile).
      guard(
        ctx.db,
        sql`NOT EXISTS (SELECT 1 FROM ${smartListMembers} WHERE ${smartListMembers.listId} = ${id} AND ${smartListMembers.contactId} IN (SELECT value FROM json_each(${insJson})))
          AND (SELECT COUNT(*) FROM ${smartListMembers} WHERE ${smartListMembers.listId} = ${id} AND ${smartListMembers.contactId} IN (SELECT value FROM json_each(${outsJson}))) = ${outs.length}`,
      ),
      ctx.db
        .insert(smartListMembers)
        .select(sql`SELECT ${id}, value, ${ctx.organizationId}, ${nowIso(now)} FROM json_each(${insJson}) WHERE true`),
      ctx.db
        .delete(smartListMembers)
        .where(and(eq(smartListMembers.listId, id), sql`${smartListMembers.contactId} IN (SELECT value FROM json_each(${outsJson}))`)),
      ...(done && doneKey
        ? [
            ctx.db
              .insert(processedEvents)
              .values({ consumer: DAILY, eventId: doneKey, claimedAt: nowIso(now), processedAt: nowIso(now) })
              .onConflictDoUpdate({ target: [processedEvents.consumer, processedEvents.eventId], set: { processedAt: nowIso(now) } }),
          ]
        : []),
    ];
    const events = [
      ...ins.map((c) => membershipEvent(ctx, "smart_list.entered", list.row, c)),
      ...outs.map((c) => membershipEvent(ctx, "smart_list.exited", list.row, c)),
    ];
    await commit(ctx, statements, events);
    return { moved: events.length, done };
  });
}
