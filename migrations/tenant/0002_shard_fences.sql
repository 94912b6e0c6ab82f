CREATE TABLE `shard_fences` (
	`organization_id` text PRIMARY KEY NOT NULL,
	`fenced_at` text NOT NULL,
	`clearing` integer DEFAULT 0 NOT NULL
);
