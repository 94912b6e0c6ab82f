-- The e-mails and phones of merged contacts (issue 33, src/contacts/merge.ts): each names the live contact that
-- absorbed it, so lead intake and imports match a merged person by the keys they had, instead of creating them anew.
-- Organization-scoped: moved with its organization and fenced during a move like every such table (0003).
CREATE TABLE `contact_merged_keys` (
	`organization_id` text NOT NULL,
	`key` text NOT NULL,
	`contact_id` text NOT NULL,
	`source_id` text NOT NULL,
	PRIMARY KEY(`organization_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `contact_merged_keys_contact_idx` ON `contact_merged_keys` (`organization_id`,`contact_id`);--> statement-breakpoint
CREATE INDEX `contact_merged_keys_source_idx` ON `contact_merged_keys` (`organization_id`,`source_id`);--> statement-breakpoint
CREATE TRIGGER `contact_merged_keys_fence_insert` BEFORE INSERT ON `contact_merged_keys` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `contact_merged_keys_fence_update` BEFORE UPDATE ON `contact_merged_keys` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `contact_merged_keys_fence_delete` BEFORE DELETE ON `contact_merged_keys` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;
