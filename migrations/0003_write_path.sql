CREATE TABLE `idempotency_keys` (
	`organization_id` text NOT NULL,
	`key` text NOT NULL,
	`fingerprint` text NOT NULL,
	`state` text NOT NULL,
	`response_status` integer,
	`response_headers` text,
	`response_body` text,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL,
	PRIMARY KEY(`organization_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_keys_expires_idx` ON `idempotency_keys` (`expires_at`);--> statement-breakpoint
CREATE TABLE `write_guards` (
	`failed` text NOT NULL,
	CONSTRAINT "write_guard_failed" CHECK(failed IS NULL)
);
--> statement-breakpoint
DROP INDEX `outbox_events_unsent_idx`;--> statement-breakpoint
ALTER TABLE `outbox_events` ADD `next_attempt_at` text;--> statement-breakpoint
ALTER TABLE `outbox_events` ADD `last_error` text;--> statement-breakpoint
ALTER TABLE `outbox_events` ADD `dead_at` text;--> statement-breakpoint
CREATE INDEX `outbox_events_due_idx` ON `outbox_events` (`next_attempt_at`);--> statement-breakpoint
ALTER TABLE `plants` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `contacts` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `tags` ADD `contact_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `tags_org_count_idx` ON `tags` (`organization_id`,"contact_count" DESC,`name`);--> statement-breakpoint
ALTER TABLE `webhook_subscriptions` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
-- Data written before the write path was hardened (issue 15) may carry the effects of lost updates: contact_tags
-- rows that no contact lists, orphaned activities, a drifted contacts counter. Rebuild them from the contact rows.
DELETE FROM `contact_activities` WHERE NOT EXISTS (SELECT 1 FROM `contacts` c WHERE c.`id` = `contact_activities`.`contact_id`);--> statement-breakpoint
DELETE FROM `contact_tags`;--> statement-breakpoint
INSERT OR IGNORE INTO `contact_tags` (`contact_id`, `organization_id`, `tag`) SELECT c.`id`, c.`organization_id`, j.`value` FROM `contacts` c, json_each(c.`tags`) j;--> statement-breakpoint
UPDATE `tags` SET `contact_count` = (SELECT COUNT(*) FROM `contact_tags` t WHERE t.`organization_id` = `tags`.`organization_id` AND t.`tag` = `tags`.`name`);--> statement-breakpoint
DELETE FROM `tags` WHERE `contact_count` = 0;--> statement-breakpoint
UPDATE `contact_counters` SET `contacts_total` = (SELECT COUNT(*) FROM `contacts` c WHERE c.`organization_id` = `contact_counters`.`organization_id`), `contacts_version` = `contacts_version` + 1;--> statement-breakpoint
UPDATE `outbox_events` SET `next_attempt_at` = `occurred_at` WHERE `sent_at` IS NULL;
