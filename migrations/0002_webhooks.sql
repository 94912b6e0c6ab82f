CREATE TABLE `webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`subscription_id` text NOT NULL,
	`event_id` text NOT NULL,
	`event` text NOT NULL,
	`body` text NOT NULL,
	`status` text NOT NULL,
	`attempt_count` integer DEFAULT 0 NOT NULL,
	`last_status_code` integer,
	`last_error` text,
	`next_attempt_at` text,
	`delivered_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_deliveries_subscription_event_unique` ON `webhook_deliveries` (`subscription_id`,`event_id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_subscription_created_idx` ON `webhook_deliveries` (`subscription_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_event_idx` ON `webhook_deliveries` (`event_id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_status_updated_idx` ON `webhook_deliveries` (`status`,`updated_at`);--> statement-breakpoint
CREATE TABLE `webhook_delivery_attempts` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`delivery_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`status_code` integer,
	`duration_ms` integer NOT NULL,
	`error` text,
	`next_attempt_at` text,
	`attempted_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_delivery_attempts_delivery_idx` ON `webhook_delivery_attempts` (`delivery_id`,`attempted_at`);--> statement-breakpoint
CREATE TABLE `webhook_subscriptions` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`url` text NOT NULL,
	`events` text NOT NULL,
	`filters` text NOT NULL,
	`enabled` integer NOT NULL,
	`description` text NOT NULL,
	`secret_ciphertext` text NOT NULL,
	`disabled_reason` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_subscriptions_org_created_idx` ON `webhook_subscriptions` (`organization_id`,`created_at`,`id`);