-- Leads kept for review (issue 40, src/leads/reviews.ts): a lead with only phone numbers that match no contact is
-- kept for the team to accept into a contact (given an e-mail) or dismiss, instead of a 422 that told a web form's
-- key which numbers belong to clients. Listed newest first by (organization, created_at, id); the retention pass
-- walks created_at across organizations. Organization-scoped: moved with its organization and fenced during a move
-- like every such table (0003).
CREATE TABLE `lead_reviews` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`source` text NOT NULL,
	`source_event_id` text,
	`type` text NOT NULL,
	`first_name` text,
	`last_name` text,
	`phones` text NOT NULL,
	`phone_keys` text NOT NULL,
	`address` text,
	`message` text,
	`property_id` text,
	`zip_code` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `lead_reviews_org_created_idx` ON `lead_reviews` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `lead_reviews_created_idx` ON `lead_reviews` (`created_at`);--> statement-breakpoint
CREATE TRIGGER `lead_reviews_fence_insert` BEFORE INSERT ON `lead_reviews` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `lead_reviews_fence_update` BEFORE UPDATE ON `lead_reviews` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `lead_reviews_fence_delete` BEFORE DELETE ON `lead_reviews` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;
