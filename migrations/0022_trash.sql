CREATE TABLE `erasures` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`contact_id` text NOT NULL,
	`actor_user_id` text,
	`erased` text NOT NULL,
	`retained` text NOT NULL,
	`at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `erasures_org_at_idx` ON `erasures` (`organization_id`,`at`,`id`);--> statement-breakpoint
CREATE TABLE `trash_entries` (
	`record_id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`kind` text NOT NULL,
	`state` text NOT NULL,
	`label` text,
	`deleted_at` text NOT NULL,
	`deleted_by` text,
	`restorable_until` text NOT NULL,
	`ended_at` text
);
--> statement-breakpoint
CREATE INDEX `trash_entries_org_listed_idx` ON `trash_entries` (`organization_id`,`state`,`deleted_at`,`record_id`);--> statement-breakpoint
CREATE INDEX `trash_entries_org_kind_idx` ON `trash_entries` (`organization_id`,`state`,`kind`,`deleted_at`,`record_id`);--> statement-breakpoint
CREATE INDEX `trash_entries_due_idx` ON `trash_entries` (`restorable_until`) WHERE "trash_entries"."state" IN ('trashed', 'purging');--> statement-breakpoint
CREATE TABLE `trash_rows` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`record_id` text NOT NULL,
	`table_name` text NOT NULL,
	`row` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `trash_rows_record_idx` ON `trash_rows` (`record_id`,`table_name`,`seq`);