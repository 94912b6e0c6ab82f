-- Issue 32: the organization's profile and settings (PATCH /v1/organization), with a version for its ETag and
-- If-Match; users get a version too (PATCH /v1/users/{id}) and an index for their newest-first list. The directory
-- copies follow the shard's rows (src/organization/, src/users/). Invitations (POST /v1/users) live only here, beside
-- the sessions that redeeming one mints.
ALTER TABLE `organizations` ADD `display_name` text;--> statement-breakpoint
ALTER TABLE `organizations` ADD `time_zone` text DEFAULT 'UTC' NOT NULL;--> statement-breakpoint
ALTER TABLE `organizations` ADD `settings` text DEFAULT '{}' NOT NULL;--> statement-breakpoint
ALTER TABLE `organizations` ADD `updated_at` text;--> statement-breakpoint
ALTER TABLE `organizations` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `users` ADD `updated_at` text;--> statement-breakpoint
ALTER TABLE `users` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
CREATE INDEX `users_organization_created_idx` ON `users` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `user_invitations` (
	`user_id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`token_hash` text NOT NULL,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `user_invitations_token_hash_unique` ON `user_invitations` (`token_hash`);--> statement-breakpoint
CREATE INDEX `user_invitations_organization_idx` ON `user_invitations` (`organization_id`);
