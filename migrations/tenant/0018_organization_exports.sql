-- Organization exports (issue 33 part 5, src/exports/, src/db/exports.ts): the queue job's progress, the zip's R2 key
-- and its download link's token as SHA-256 only. Organization data: moved by a shard move and fenced like every table.
CREATE TABLE `organization_exports` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`requested_by` text,
	`status` text NOT NULL,
	`tables_done` integer DEFAULT 0 NOT NULL,
	`tables_total` integer DEFAULT 0 NOT NULL,
	`rows` integer DEFAULT 0 NOT NULL,
	`files` integer DEFAULT 0 NOT NULL,
	`bytes` integer DEFAULT 0 NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`object_key` text,
	`token_hash` text,
	`expires_at` text,
	`lease_until` text,
	`error` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`completed_at` text
);
--> statement-breakpoint
CREATE INDEX `organization_exports_org_idx` ON `organization_exports` (`organization_id`,`created_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `organization_exports_token_unique` ON `organization_exports` (`token_hash`);--> statement-breakpoint
CREATE TRIGGER `organization_exports_fence_insert` BEFORE INSERT ON `organization_exports` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `organization_exports_fence_update` BEFORE UPDATE ON `organization_exports` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `organization_exports_fence_delete` BEFORE DELETE ON `organization_exports` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;
