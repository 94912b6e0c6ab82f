import { isGuardFailure, StaleWrite, type Statement } from "../db/write";
import type { ServiceContext } from "../service-context";
import type { DomainEvent } from "./event";
import { deferPublish, stageEvents } from "./outbox";

/**
 * The unit of work: a change's statements, the outbox rows of its events and, with an Idempotency-Key, the record of
 * its answer, in one atomic batch; then the events are published. Above db/, whose write.ts keeps the guards, retries
 * and version checks this batch is built from. Why: docs/decisions/0001-outbox-in-the-change-batch.md.
 */
export interface CommitOptions {
  /**
   * The verb's answer: with an Idempotency-Key, its record joins the batch (platform/idempotency.ts
   * `keepAnswerInBatch`), so the request needs no write after this one, and a retry replays it even when D1's reply to
   * the batch was lost. Only on the batch that completes the verb: a retry never runs what would come after it.
   */
  answer?: object;
  /** false: publish the events without marking them sent in D1; the consumer marks them (events/outbox.ts). */
  markSent?: boolean;
}

/**
 * Writes `statements` and the outbox rows of `events` in one atomic batch, then publishes the events. Throws
 * `StaleWrite` when a guard failed (nothing was written).
 */
export async function commit(
  ctx: ServiceContext,
  statements: Statement[],
  events: DomainEvent[] = [],
  options: CommitOptions = {},
): Promise<unknown[]> {
  const kept = options.answer === undefined ? undefined : ctx.keepAnswer?.(options.answer);
  const all = [...statements, ...stageEvents(ctx.db, events), ...(kept ? [kept.statement] : [])];
  if (all.length === 0) return [];
  let results: unknown[];
  try {
    results = await ctx.db.batch(all as [Statement, ...Statement[]]);
  } catch (err) {
    if (isGuardFailure(err)) throw new StaleWrite();
    throw err;
  }
  kept?.committed();
  deferPublish(ctx, events, { markSent: options.markSent });
  return results;
}
