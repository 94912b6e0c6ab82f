CREATE TABLE `organizations` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `organizations_name_unique` ON `organizations` (`name`);--> statement-breakpoint
CREATE TABLE `users` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`email` text NOT NULL,
	`name` text,
	`created_at` text NOT NULL,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `users_organization_email_unique` ON `users` (`organization_id`,`email`);--> statement-breakpoint
CREATE INDEX `users_email_lower_idx` ON `users` (lower("email"));--> statement-breakpoint
CREATE TABLE `write_guards` (
	`failed` text NOT NULL,
	CONSTRAINT "write_guard_failed" CHECK(failed IS NULL)
);
--> statement-breakpoint
CREATE TABLE `organization_shards` (
	`organization_id` text PRIMARY KEY NOT NULL,
	`shard` integer NOT NULL,
	`fenced_at` text,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `public_keys` (
	`kind` text NOT NULL,
	`key` text NOT NULL,
	`organization_id` text NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`kind`, `key`)
);
--> statement-breakpoint
CREATE INDEX `public_keys_organization_idx` ON `public_keys` (`organization_id`);--> statement-breakpoint
CREATE TABLE `sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`token_hash` text NOT NULL,
	`user_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL,
	`revoked_at` text,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sessions_token_hash_unique` ON `sessions` (`token_hash`);--> statement-breakpoint
CREATE INDEX `sessions_user_idx` ON `sessions` (`user_id`);--> statement-breakpoint
CREATE TABLE `shard_moves` (
	`organization_id` text PRIMARY KEY NOT NULL,
	`from_shard` integer NOT NULL,
	`to_shard` integer NOT NULL,
	`phase` text NOT NULL,
	`table_index` integer DEFAULT 0 NOT NULL,
	`cursor` text,
	`started_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`finished_at` text,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `shard_moves_phase_idx` ON `shard_moves` (`phase`);--> statement-breakpoint
CREATE TABLE `shard_placements` (
	`shard` integer PRIMARY KEY NOT NULL,
	`organizations` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `oauth_clients` (
	`id` text PRIMARY KEY NOT NULL,
	`client_name` text,
	`redirect_uris` text NOT NULL,
	`created_at` text NOT NULL,
	`last_used_at` text
);
--> statement-breakpoint
CREATE INDEX `oauth_clients_last_used_idx` ON `oauth_clients` (`last_used_at`);--> statement-breakpoint
CREATE TABLE `oauth_codes` (
	`code_hash` text PRIMARY KEY NOT NULL,
	`client_id` text NOT NULL,
	`redirect_uri` text NOT NULL,
	`code_challenge` text NOT NULL,
	`user_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`permissions` text NOT NULL,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL,
	`used_at` text,
	`grant_id` text
);
--> statement-breakpoint
CREATE INDEX `oauth_codes_expires_idx` ON `oauth_codes` (`expires_at`);--> statement-breakpoint
CREATE TABLE `oauth_grants` (
	`id` text PRIMARY KEY NOT NULL,
	`client_id` text NOT NULL,
	`user_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`permissions` text NOT NULL,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL,
	`revoked_at` text,
	`family_id` text
);
--> statement-breakpoint
CREATE INDEX `oauth_grants_user_idx` ON `oauth_grants` (`user_id`);--> statement-breakpoint
CREATE INDEX `oauth_grants_family_idx` ON `oauth_grants` (`family_id`);--> statement-breakpoint
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
CREATE TABLE `oauth_sign_ins` (
	`id` text PRIMARY KEY NOT NULL,
	`cookie_hash` text NOT NULL,
	`email` text NOT NULL,
	`code_hash` text,
	`code_expires_at` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`verified_at` text,
	`created_at` text NOT NULL,
	`expires_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `oauth_sign_ins_cookie_unique` ON `oauth_sign_ins` (`cookie_hash`);--> statement-breakpoint
CREATE INDEX `oauth_sign_ins_expires_idx` ON `oauth_sign_ins` (`expires_at`);