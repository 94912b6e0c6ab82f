import { asc, lte, type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { directoryOutbox } from "../db/schema";
import type { Statement } from "../db/write";
import type { Env } from "../env";
import type { Defer } from "../lib/deferred";
import { createLogger, loggableError } from "../lib/log";
import { inJsonList } from "../lib/sql";
import { addSeconds, nowIso } from "../lib/time";
import { placementOf } from "../shards/directory";
import { openShardOf } from "../shards/tenants";
import type { DomainEvent } from "./event";
import { publishEvents, stageEvents } from "./outbox";

/**
 * Events of changes made in the directory (docs/decisions/0019-directory-outbox.md: an API key created or deleted, an
 * OAuth client connected or disconnected), which live, like every event, in their organization's shard outbox. D1 has
 * no transaction over two databases, so the event is written twice under one id:
 *
 * 1. staged in the directory batch of the change (`directory_outbox`), where it commits or not with the change; a
 *    transition's event carries the condition that makes it one (`when`), evaluated inside that batch, so of
 *    concurrent changes only the one that makes the transition writes it;
 * 2. right after, inserted into the shard outbox with that id (a second copy is ignored), published, and deleted from
 *    the directory.
 *
 * Whatever fails between the two (the shard write, the isolate), the row stays in the directory and the cron writes
 * it again once it is due (`relayDueDirectoryEvents`): the event is in the shard outbox exactly once, and the shard's
 * own outbox machinery sends it from there.
 */

/** An event of a directory change; written only when `when` holds as the batch runs (absent: always). */
export interface DirectoryEvent {
  event: DomainEvent;
  when?: SQL;
}

export type DirectoryItem = Statement | DirectoryEvent;

/** What a directory change needs beyond its statements: the bindings (to reach the shard) and a deferral. */
export interface DirectoryWork {
  env: Env;
  directory: Db;
  defer: Defer;
  /** The organization's shard when the caller has it open (an authenticated request): no placement read. */
  shard?: { organizationId: string; db: Db };
}

/** How long after it was staged the cron takes over an event the change's own relay did not finish. */
const RELAY_GRACE_SECONDS = 60;

const isEvent = (item: DirectoryItem): item is DirectoryEvent => typeof item === "object" && item !== null && "event" in item;

function stage(directory: Db, { event, when }: DirectoryEvent): Statement {
  const due = nowIso(addSeconds(new Date(event.occurredAt), RELAY_GRACE_SECONDS));
  const actor = JSON.stringify({ type: event.actor.type, userId: event.actor.userId ?? null });
  return directory
    .insert(directoryOutbox)
    .select(
      sql`SELECT ${event.id}, ${event.organizationId}, ${event.type}, ${actor}, ${event.occurredAt}, ${JSON.stringify(event.data)}, ${due} WHERE ${when ?? sql`1`}`,
    )
    .returning({ id: directoryOutbox.id });
}

/**
 * Runs `items` (statements, and events in their place among them) as one atomic directory batch, then writes the
 * events that committed to their organization's shard. Answers every statement's result (an event's is the list of
 * ids it wrote) and the events written. A failure after the batch is logged, never thrown: the change is made, and
 * the cron finishes its events.
 */
export async function commitInDirectory(
  work: DirectoryWork,
  items: DirectoryItem[],
): Promise<{ results: unknown[]; events: DomainEvent[] }> {
  const statements = items.map((item) => (isEvent(item) ? stage(work.directory, item) : item));
  const results = await work.directory.batch(statements as [Statement, ...Statement[]]);
  const events = items.flatMap((item, i) => (isEvent(item) && (results[i] as unknown[]).length > 0 ? [item.event] : []));
  await relay(work, events);
  return { results, events };
}

/**
 * Writes `events` to their organizations' shard outboxes (an id already there is left alone), publishes the ones
 * that were new there, and deletes them from the directory once the shard has them. Failures are logged: what is
 * still in the directory is written by the cron.
 */
async function relay(work: DirectoryWork, events: DomainEvent[]): Promise<number> {
  const byOrganization = Map.groupBy(events, (e) => e.organizationId);
  const done = await Promise.all(
    [...byOrganization].map(async ([organizationId, mine]) => {
      try {
        const db = work.shard?.organizationId === organizationId ? work.shard.db : await shardOf(work, organizationId);
        if (!db) return 0;
        const written = (await db.batch(stageEvents(db, mine, { ifAbsent: true }) as [Statement, ...Statement[]])).flat() as {
          id: string;
        }[];
        const ids = mine.map((e) => e.id);
        // After the answer, one after the other: a failed publish is the shard outbox's to retry, a failed delete
        // the cron's (its second write into the shard is ignored).
        const cleanup = async () => {
          await publishEvents(
            work.env.EVENTS,
            db,
            written.map(({ id }) => ({ id, organizationId })),
          ).catch(warn("its publish failed; the shard's outbox sends it"));
          await work.directory
            .delete(directoryOutbox)
            .where(inJsonList(directoryOutbox.id, ids))
            .catch(warn("its cleanup in the directory failed; the cron finishes it"));
        };
        work.defer(cleanup());
        return mine.length;
      } catch (err) {
        createLogger().warn("directory event not yet written to its shard; the cron writes it", {
          organizationId,
          error: loggableError(err),
        });
        return 0;
      }
    }),
  );
  return done.reduce((a, b) => a + b, 0);
}

const warn = (what: string) => (err: unknown) => createLogger().warn(`directory event relayed; ${what}`, { error: loggableError(err) });

/** The shard of an organization, or null (unknown: its events are dropped; moving: the cron writes them afterwards). */
async function shardOf(work: DirectoryWork, organizationId: string): Promise<Db | null> {
  const placement = await placementOf(work.directory, organizationId);
  if (!placement) {
    await work.directory.delete(directoryOutbox).where(sql`${directoryOutbox.organizationId} = ${organizationId}`);
    return null;
  }
  if (placement.fenced) return null;
  return openShardOf(work.env, placement.shard, work.directory).db;
}

/** Cron: the directory events whose relay did not finish (a failed shard write, a dead isolate), due at `now`, written again. */
export async function relayDueDirectoryEvents(work: Omit<DirectoryWork, "shard">, { now = new Date(), max = 200 } = {}): Promise<number> {
  const due = await work.directory
    .select()
    .from(directoryOutbox)
    .where(lte(directoryOutbox.dueAt, nowIso(now)))
    .orderBy(asc(directoryOutbox.dueAt))
    .limit(max);
  const events: DomainEvent[] = due.map(({ dueAt: _, ...event }) => event);
  return relay(work, events);
}
