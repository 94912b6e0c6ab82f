DROP INDEX `deals_org_created_idx`;--> statement-breakpoint
ALTER TABLE `deals` ADD `decided_at` text;--> statement-breakpoint
CREATE INDEX `deals_org_decided_idx` ON `deals` (`organization_id`,`decided_at`,`stage`,`amount`,`assigned_to`,`created_at`,`type`) WHERE "deals"."decided_at" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `deals_org_created_idx` ON `deals` (`organization_id`,`created_at`,`id`,`amount`,`type`,`assigned_to`);--> statement-breakpoint
UPDATE `deals` SET `decided_at` = (SELECT MAX(c.`at`) FROM `deal_stage_changes` c WHERE c.`deal_id` = `deals`.`id` AND c.`to_stage` = `deals`.`stage`) WHERE `stage` IN ('CLOSED', 'LOST');
