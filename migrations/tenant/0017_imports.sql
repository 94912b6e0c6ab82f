-- Issue 33: imports of a book (src/imports/). Each chunk moves its import row in the batch that writes its records,
-- so a crash resumes at the chunk the row names. import_errors lists rows by number, column and reason (no row
-- data). Organization-scoped, so fenced during a shard move like every such table (0003).
CREATE TABLE `imports` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`kind` text NOT NULL,
	`status` text NOT NULL,
	`source_key` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`on_duplicate` text NOT NULL,
	`mapping` text,
	`columns` text,
	`resolved_mapping` text,
	`detected_format` text,
	`next_chunk` integer DEFAULT 0 NOT NULL,
	`byte_offset` integer DEFAULT 0 NOT NULL,
	`next_row` integer DEFAULT 2 NOT NULL,
	`processed` integer DEFAULT 0 NOT NULL,
	`created` integer DEFAULT 0 NOT NULL,
	`updated` integer DEFAULT 0 NOT NULL,
	`skipped` integer DEFAULT 0 NOT NULL,
	`failed` integer DEFAULT 0 NOT NULL,
	`failure_reason` text,
	`created_by` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`progress_at` text NOT NULL,
	`finished_at` text
);
--> statement-breakpoint
CREATE INDEX `imports_org_status_idx` ON `imports` (`organization_id`,`status`,`updated_at`);--> statement-breakpoint
CREATE INDEX `imports_status_progress_idx` ON `imports` (`status`,`progress_at`);--> statement-breakpoint
CREATE TABLE `import_errors` (
	`import_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`row_number` integer NOT NULL,
	`seq` integer NOT NULL,
	`column` text NOT NULL,
	`reason` text NOT NULL,
	PRIMARY KEY(`import_id`, `row_number`, `seq`)
);
--> statement-breakpoint
CREATE INDEX `import_errors_org_idx` ON `import_errors` (`organization_id`,`import_id`);--> statement-breakpoint
CREATE TRIGGER `imports_fence_insert` BEFORE INSERT ON `imports` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `imports_fence_update` BEFORE UPDATE ON `imports` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `imports_fence_delete` BEFORE DELETE ON `imports` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `import_errors_fence_insert` BEFORE INSERT ON `import_errors` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `import_errors_fence_update` BEFORE UPDATE ON `import_errors` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `import_errors_fence_delete` BEFORE DELETE ON `import_errors` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;
