import type { Env } from "../env";
import { withDeferred } from "../lib/deferred";
import { MOVING_RETRY_SECONDS, routeToShards, systemContext } from "../shards/tenants";
import { type ExportMessage, runOrganizationExport } from "./service";

/** Backoff of a failed export run: a minute, doubling, at most an hour. */
const retryDelay = (attempts: number) => Math.min(3600, 60 * 2 ** Math.max(0, attempts - 1));

/**
 * The `organization-exports` queue (one message a batch, wrangler.toml): each message runs its job on the
 * organization's shard. A run that fails is retried by the queue (its upload aborted, the next run starts again); an
 * organization that is moving waits for the move; one the directory no longer knows is dropped.
 */
export async function runExportJobs(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const messages = batch.messages.filter(
    (m): m is Message<ExportMessage> => typeof (m.body as ExportMessage | null)?.exportId === "string",
  );
  for (const m of batch.messages) if (!messages.includes(m as Message<ExportMessage>)) m.ack();
  const routing = await routeToShards(env, messages, (m) => m.body.organizationId);
  for (const m of routing.unknown) m.ack();
  for (const m of routing.fenced) m.retry({ delaySeconds: MOVING_RETRY_SECONDS });
  for (const { shard, items } of routing.byShard) {
    for (const m of items) {
      const outcome = await withDeferred((defer) =>
        runOrganizationExport(
          systemContext(env, shard.db, m.body.organizationId, `queue:export:${m.body.exportId}`, defer),
          m.body.exportId,
        ),
      ).catch(() => "retry" as const);
      if (outcome === "retry") m.retry({ delaySeconds: retryDelay(m.attempts) });
      else m.ack();
    }
  }
}
