-- Issue 29 (the fault table): uploads whose row is not committed yet (src/db/uploads.ts), fenced during a shard move
-- like every organization-scoped table (0003); and when a sealed envelope's signed copies were mailed.
CREATE TABLE `pending_uploads` (
	`key` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `pending_uploads_created_idx` ON `pending_uploads` (`created_at`);--> statement-breakpoint
CREATE TRIGGER `pending_uploads_fence_insert` BEFORE INSERT ON `pending_uploads` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `pending_uploads_fence_update` BEFORE UPDATE ON `pending_uploads` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `pending_uploads_fence_delete` BEFORE DELETE ON `pending_uploads` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;
--> statement-breakpoint
-- When a sealed envelope's signed copies were mailed (src/signatures/sealing.ts): the envelopes sealed before this
-- column was there had theirs mailed with the seal.
ALTER TABLE `envelopes` ADD `copies_mailed_at` text;--> statement-breakpoint
UPDATE `envelopes` SET `copies_mailed_at` = `completed_at` WHERE `sealed_key` IS NOT NULL;
