-- Leads a web form's key sent, waiting to be taken in (issue 40, src/leads/inbox.ts): the answer to a credential
-- that may not read contacts no longer waits for the intake, so neither it nor its time tells who is a client. The
-- intake deletes its row in its own batch; the cron drains what was left by due_at. Organization-scoped: moved with
-- its organization and fenced during a move like every such table (0003).
CREATE TABLE `lead_inbox` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`user_id` text NOT NULL,
	`lead` text NOT NULL,
	`received_at` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_error` text,
	`due_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `lead_inbox_due_idx` ON `lead_inbox` (`due_at`);--> statement-breakpoint
CREATE INDEX `lead_inbox_org_idx` ON `lead_inbox` (`organization_id`,`received_at`);--> statement-breakpoint
CREATE TRIGGER `lead_inbox_fence_insert` BEFORE INSERT ON `lead_inbox` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `lead_inbox_fence_update` BEFORE UPDATE ON `lead_inbox` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `lead_inbox_fence_delete` BEFORE DELETE ON `lead_inbox` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;
