import type { Env } from "./env";
import { createEventRouter, type EventConsumer } from "./events/consumers";
import { auditLogConsumer } from "./events/audit-log";
import { certificateConsumer } from "./signatures/certificate";
import { sealingConsumer } from "./signatures/sealing";
import { documentIndexingConsumer } from "./documents/indexing";
import { uploadTagsConsumer } from "./documents/upload-tags";
import { uploadTextConsumer } from "./documents/upload-text";
import { obligationSyncConsumer } from "./documents/obligations";
import { referralLeadConsumer } from "./referrals/service";
import { surveyResponseConsumer } from "./surveys/responses";
import { dealWonSurveyConsumer } from "./surveys/scheduling";
import { smartListConsumer } from "./smart-lists/membership";
import { webhookFanout } from "./webhooks/fanout";
import { appointmentInvitationConsumer } from "./appointments/invitations";
import { actionPlanReplyConsumer, actionPlanTriggerConsumer } from "./action-plans/consumers";
import { createDeliveryConsumer, markDeadDeliveries } from "./webhooks/delivery";
import { defaultWebhookDeps } from "./webhooks/transport";
import { runExportJobs } from "./exports/jobs";
import { createLogger } from "./lib/log";
import { NO_CONSUMER } from "./lib/retry";

/**
 * Every consumer of the `events` queue, here at the top beside the queue handler: the domains' consumers are handed
 * to the event router (events/consumers.ts), which names no domain.
 */
export const EVENT_CONSUMERS: EventConsumer[] = [
  auditLogConsumer,
  webhookFanout,
  certificateConsumer,
  sealingConsumer,
  obligationSyncConsumer,
  documentIndexingConsumer,
  // Before the text's: in one delivery, the text indexed is the PDF's without its tags.
  uploadTagsConsumer,
  uploadTextConsumer,
  referralLeadConsumer,
  dealWonSurveyConsumer,
  surveyResponseConsumer,
  smartListConsumer,
  appointmentInvitationConsumer,
  // Action plans: a reply pauses the contact's enrollments; a tag, stage or new contact enrolls by the plans' triggers.
  actionPlanReplyConsumer,
  actionPlanTriggerConsumer,
];

const routeEvents = createEventRouter(EVENT_CONSUMERS);
const deliverWebhooks = createDeliveryConsumer(defaultWebhookDeps());

/** The queue consumers (loaded by the Worker's queue handler at its first batch, not at startup). */
export async function handleQueue(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  switch (batch.queue) {
    case "events":
      return routeEvents(batch, env);
    case "webhook-deliveries":
      return deliverWebhooks(batch, env);
    case "organization-exports":
      return runExportJobs(batch, env);
    case "webhook-deliveries-dlq":
      return markDeadDeliveries(batch, env);
    case "imports":
      return (await import("./imports/chunks")).consumeImports(batch, env);
    default:
      // A queue bound in wrangler.toml without a consumer here: keep its messages rather than lose them.
      createLogger().warn("no consumer for queue", { queue: batch.queue, count: batch.messages.length });
      batch.retryAll({ delaySeconds: NO_CONSUMER.delaySeconds(1) });
  }
}
