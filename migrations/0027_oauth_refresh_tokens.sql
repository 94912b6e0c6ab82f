CREATE TABLE `oauth_refresh_tokens` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`family_id` text NOT NULL,
	`client_id` text NOT NULL,
	`user_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`permissions` text NOT NULL,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL,
	`used_at` text,
	`revoked_at` text
);
--> statement-breakpoint
CREATE INDEX `oauth_refresh_tokens_family_idx` ON `oauth_refresh_tokens` (`family_id`);--> statement-breakpoint
CREATE INDEX `oauth_refresh_tokens_expires_idx` ON `oauth_refresh_tokens` (`expires_at`);--> statement-breakpoint
ALTER TABLE `oauth_grants` ADD `family_id` text;--> statement-breakpoint
CREATE INDEX `oauth_grants_family_idx` ON `oauth_grants` (`family_id`);