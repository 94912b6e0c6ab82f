-- Issue 32, endpoints that heal (src/webhooks/healing.ts, rotation.ts, recover.ts, event-log.ts). Columns only: no new
-- table, so the fence triggers of 0003 already cover every write here, and a shard move carries the new columns with
-- their rows. Written by hand (the lead regenerates drizzle's meta at the merge).
ALTER TABLE `webhook_subscriptions` ADD `disabled_at` text;--> statement-breakpoint
ALTER TABLE `webhook_subscriptions` ADD `failing_since` text;--> statement-breakpoint
ALTER TABLE `webhook_subscriptions` ADD `owners_notice_due_at` text;--> statement-breakpoint
ALTER TABLE `webhook_subscriptions` ADD `previous_secret_ciphertext` text;--> statement-breakpoint
ALTER TABLE `webhook_subscriptions` ADD `previous_secret_expires_at` text;--> statement-breakpoint
CREATE INDEX `webhook_subscriptions_failing_idx` ON `webhook_subscriptions` (`failing_since`);--> statement-breakpoint
CREATE INDEX `webhook_subscriptions_notice_idx` ON `webhook_subscriptions` (`owners_notice_due_at`);--> statement-breakpoint
ALTER TABLE `webhook_deliveries` ADD `chain` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `outbox_events_org_occurred_idx` ON `outbox_events` (`organization_id`,`occurred_at`,`id`);--> statement-breakpoint
CREATE INDEX `outbox_events_org_type_occurred_idx` ON `outbox_events` (`organization_id`,`type`,`occurred_at`,`id`);
