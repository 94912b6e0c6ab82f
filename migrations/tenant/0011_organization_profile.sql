-- Issue 32: the shard's copies of the organization and its users carry the profile, settings and versions the API
-- shows (the same columns as migrations/directory/0004): PATCH /v1/organization and PATCH /v1/users/{id} commit
-- here, with their events, and then bring the directory's row up to the same version.
ALTER TABLE `organizations` ADD `display_name` text;--> statement-breakpoint
ALTER TABLE `organizations` ADD `time_zone` text DEFAULT 'UTC' NOT NULL;--> statement-breakpoint
ALTER TABLE `organizations` ADD `settings` text DEFAULT '{}' NOT NULL;--> statement-breakpoint
ALTER TABLE `organizations` ADD `updated_at` text;--> statement-breakpoint
ALTER TABLE `organizations` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `users` ADD `updated_at` text;--> statement-breakpoint
ALTER TABLE `users` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
CREATE INDEX `users_organization_created_idx` ON `users` (`organization_id`,`created_at`,`id`);
