-- Issue 32: API keys (only their SHA-256 is kept), the OAuth clients connected to each organization, and the events
-- of directory changes on their way to their organization's shard outbox (events/directory-outbox.ts).
CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`created_by` text NOT NULL,
	`name` text NOT NULL,
	`prefix` text NOT NULL,
	`key_hash` text NOT NULL,
	`permissions` text NOT NULL,
	`created_at` text NOT NULL,
	`expires_at` text,
	`last_used_at` text,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_key_hash_unique` ON `api_keys` (`key_hash`);--> statement-breakpoint
CREATE INDEX `api_keys_organization_created_idx` ON `api_keys` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `directory_outbox` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`type` text NOT NULL,
	`actor` text NOT NULL,
	`occurred_at` text NOT NULL,
	`data` text NOT NULL,
	`due_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `directory_outbox_due_idx` ON `directory_outbox` (`due_at`);--> statement-breakpoint
CREATE TABLE `oauth_connections` (
	`organization_id` text NOT NULL,
	`client_id` text NOT NULL,
	`connected_by` text NOT NULL,
	`connected_at` text NOT NULL,
	PRIMARY KEY(`organization_id`, `client_id`)
);
--> statement-breakpoint
CREATE INDEX `oauth_connections_organization_connected_idx` ON `oauth_connections` (`organization_id`,`connected_at`,`client_id`);--> statement-breakpoint
CREATE INDEX `oauth_refresh_tokens_organization_client_idx` ON `oauth_refresh_tokens` (`organization_id`,`client_id`);--> statement-breakpoint
-- The clients connected before this migration: every (organization, client) with a live refresh token, connected by
-- the user and at the time of its oldest one. No event: they connected before integrations had events.
INSERT INTO `oauth_connections` (`organization_id`, `client_id`, `connected_by`, `connected_at`)
SELECT `organization_id`, `client_id`, `user_id`, MIN(`created_at`) FROM `oauth_refresh_tokens`
WHERE `revoked_at` IS NULL AND `used_at` IS NULL AND `expires_at` > strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
GROUP BY `organization_id`, `client_id`;
