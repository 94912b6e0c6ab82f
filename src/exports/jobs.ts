import { withDeferred } from "../lib/deferred";
import { ExportMessageSchema } from "../lib/queue-messages";
import { EXPORT_RUN, ORGANIZATION_MOVING } from "../lib/retry";
import { queueConsumer } from "../events/queue-consumer";
import { routeToShards, systemContext } from "../shards/tenants";
import { runOrganizationExport } from "./service";

/**
 * The `organization-exports` queue (one message a batch, wrangler.toml): each message runs its job on the
 * organization's shard. A run that fails is retried on `EXPORT_RUN` (its upload aborted, the next run starts again);
 * an organization that is moving waits for the move; one the directory no longer knows is dropped.
 */
export const runExportJobs = queueConsumer({ schema: ExportMessageSchema, retry: EXPORT_RUN }, async (messages, env) => {
  const routing = await routeToShards(env, messages, (m) => m.body.organizationId);
  for (const m of routing.unknown) m.ack();
  for (const m of routing.fenced) m.retry(ORGANIZATION_MOVING.delaySeconds(m.attempts));
  for (const { shard, items } of routing.byShard) {
    for (const m of items) {
      const outcome = await withDeferred((defer) =>
        runOrganizationExport(
          systemContext(env, shard.db, m.body.organizationId, `queue:export:${m.body.exportId}`, defer),
          m.body.exportId,
        ),
      ).catch(() => "retry" as const);
      if (outcome === "retry") m.retry();
      else m.ack();
    }
  }
});
