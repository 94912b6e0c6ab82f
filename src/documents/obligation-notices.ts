import { and, asc, gte, isNull, lt, lte, type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { documentObligations } from "../db/schema";
import type { Statement } from "../db/write";
import type { Env } from "../env";
import type { DomainEvent } from "../events/event";
import { publishEvents, stageEvents } from "../events/outbox";
import { resourceEvent } from "../events/resource-event";
import { nowIso } from "../lib/time";
import { DUE_SOON_DAYS, toObligation, utcDay } from "./obligations";

type ObligationRow = typeof documentObligations.$inferSelect;

/** Each notice: its event, and the column that marks it emitted. */
const NOTICES = [
  { type: "obligation.due_soon", key: "dueSoonEventAt", column: "due_soon_event_at" },
  { type: "obligation.overdue", key: "overdueEventAt", column: "overdue_event_at" },
] as const;

/** Obligation `o` is still due on `dueDate` and its notice (`column`) still unmarked. */
const dueAndUnmarked = (column: string, dueDate: SQL) => sql`o.due_date = ${dueDate} AND ${sql.raw(`o.${column}`)} IS NULL`;

/**
 * Cron pass: `obligation.due_soon` once an obligation falls due within DUE_SOON_DAYS (today included,
 * UTC), `obligation.overdue` from the day after its due date; each once per obligation and due date (an amendment
 * that moves the date emits them again for the new one: documents/obligations.ts resets the marks). An obligation
 * first seen past its date gets the overdue event alone. Each event is staged only while its mark is unset at the
 * due date that was read, and the mark follows in the same batch: D1 runs batches one at a time, so of passes that
 * overlap (two cron runs, a retried one) only the first stages it. Answers how many events it staged.
 */
export async function sendObligationNotices(env: Env, db: Db, { max = 500, now = new Date() } = {}): Promise<number> {
  const c = documentObligations;
  const today = utcDay(0, now);
  const soon = utcDay(DUE_SOON_DAYS, now);
  const found = await db.batch([
    db
      .select()
      .from(c)
      .where(and(isNull(c.dueSoonEventAt), gte(c.dueDate, today), lte(c.dueDate, soon)))
      .orderBy(asc(c.dueDate), asc(c.id))
      .limit(max),
    db
      .select()
      .from(c)
      .where(and(isNull(c.overdueEventAt), lt(c.dueDate, today)))
      .orderBy(asc(c.dueDate), asc(c.id))
      .limit(max),
  ]);
  const at = nowIso(now);
  const statements: Statement[] = [];
  const marks: { index: number; events: Map<string, DomainEvent> }[] = [];
  NOTICES.forEach(({ type, key, column }, i) => {
    const rows: ObligationRow[] = found[i]!;
    if (rows.length === 0) return;
    const events = new Map(
      rows.map((r) => [
        r.id,
        resourceEvent({ organizationId: r.organizationId, actor: { type: "system", userId: null } }, type, toObligation(r, today, soon)),
      ]),
    );
    const listed = JSON.stringify(rows.map((r) => [r.id, r.dueDate]));
    statements.push(
      ...stageEvents(db, [...events.values()], {
        onlyIf: (event) =>
          sql`EXISTS (SELECT 1 FROM ${c} o WHERE o.id = json_extract(${event}, '$.data.object.id') AND ${dueAndUnmarked(column, sql`substr(json_extract(${event}, '$.data.object.dueDate'), 1, 10)`)})`,
      }),
    );
    marks.push({ index: statements.length, events });
    statements.push(
      db
        .update(c)
        .set({ [key]: at })
        .where(
          sql`${c.id} IN (SELECT o.id FROM json_each(${listed}) j JOIN ${c} o ON o.id = json_extract(j.value, '$[0]') WHERE ${dueAndUnmarked(column, sql`json_extract(j.value, '$[1]')`)})`,
        )
        .returning({ id: c.id }),
    );
  });
  if (statements.length === 0) return 0;
  const results = await db.batch(statements as [Statement, ...Statement[]]);
  // The rows each update marked name the events staged just before it, in the same batch.
  const staged = marks.flatMap(({ index, events }) => (results[index] as { id: string }[]).map((r) => events.get(r.id)!));
  await publishEvents(
    env.EVENTS,
    db,
    staged.map(({ id, organizationId }) => ({ id, organizationId })),
  );
  return staged.length;
}
