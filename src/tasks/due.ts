import { and, asc, isNotNull, isNull, lte, type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { tasks } from "../db/schema";
import type { Statement } from "../db/write";
import type { Env } from "../env";
import { publishEvents, stageEvents } from "../events/outbox";
import { resourceEvent } from "../events/resource-event";
import { toTask } from "./mapping";

/** Tasks one pass announces at most (the next pass takes the rest, oldest due first). */
export const DUE_PASS_MAX = 500;

/** The pass's read (the plan test reads it): tasks_due_pass_idx, whose WHERE it names literally, over due_at <= now. */
export const dueTaskScan = (db: Db, nowIso: string, max: number) =>
  db
    .select()
    .from(tasks)
    .where(and(isNotNull(tasks.dueAt), lte(tasks.dueAt, nowIso), sql`${tasks.completed} = 0`, isNull(tasks.dueAnnouncedAt)))
    .orderBy(asc(tasks.dueAt))
    .limit(max);

/**
 * Cron pass (issue 46): `task.due` once per open task whose due time has come (`dueAt <= now`; a task due on a day,
 * `YYYY-MM-DD`, at the start of that day in UTC). Each event is staged only while its task is still unannounced, open
 * and due at the time that was read, and `due_announced_at` is set in the same batch: D1 runs batches one at a time,
 * so of passes that overlap (two cron runs, a retried one) only the first stages it. A task whose due time is moved is
 * announced again at its new time (tasks/service.ts clears the mark). Walks tasks_due_pass_idx. Answers how many it
 * announced.
 */
export async function announceDueTasks(env: Pick<Env, "EVENTS">, db: Db, now: Date, max = DUE_PASS_MAX): Promise<number> {
  const nowIso = now.toISOString();
  const due = await dueTaskScan(db, nowIso, max);
  if (due.length === 0) return 0;
  const events = new Map(
    due.map((t) => [
      t.id,
      resourceEvent({ organizationId: t.organizationId, actor: { type: "system", userId: null } }, "task.due", toTask(t)),
    ]),
  );
  const listed = JSON.stringify(due.map((t) => [t.id, t.dueAt]));
  const unannounced = (id: SQL, dueAt: SQL) => sql`t.id = ${id} AND t.due_at = ${dueAt} AND t.completed = 0 AND t.due_announced_at IS NULL`;
  const statements: Statement[] = [
    ...stageEvents(db, [...events.values()], {
      onlyIf: (event) =>
        sql`EXISTS (SELECT 1 FROM ${tasks} t WHERE ${unannounced(sql`json_extract(${event}, '$.data.object.id')`, sql`json_extract(${event}, '$.data.object.dueAt')`)})`,
    }),
    db
      .update(tasks)
      .set({ dueAnnouncedAt: nowIso })
      .where(
        sql`${tasks.id} IN (SELECT t.id FROM json_each(${listed}) j JOIN ${tasks} t ON t.id = json_extract(j.value, '$[0]') WHERE ${unannounced(sql`t.id`, sql`json_extract(j.value, '$[1]')`)})`,
      )
      .returning({ id: tasks.id }),
  ];
  const results = await db.batch(statements as [Statement, ...Statement[]]);
  const marked = results.at(-1) as { id: string }[];
  const staged = marked.map((r) => events.get(r.id)!);
  await publishEvents(
    env.EVENTS,
    db,
    staged.map(({ id, organizationId }) => ({ id, organizationId })),
  );
  return staged.length;
}
