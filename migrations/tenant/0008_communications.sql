-- Communications logged on a contact (issue 32, src/contacts/communications.ts): e-mails, SMS, calls and voicemails,
-- listed newest first per contact (and per type). Organization-scoped, so fenced during a shard move like every
-- such table (0003); the rows travel with their contact to the trash and back (crm/trash.ts).
CREATE TABLE `contact_communications` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`contact_id` text NOT NULL,
	`type` text NOT NULL,
	`direction` text NOT NULL,
	`subject` text,
	`body` text,
	`duration_seconds` integer,
	`occurred_at` text NOT NULL,
	`metadata` text,
	`created_by` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `contact_communications_contact_idx` ON `contact_communications` (`organization_id`,`contact_id`,`occurred_at`,`id`);--> statement-breakpoint
CREATE INDEX `contact_communications_type_idx` ON `contact_communications` (`organization_id`,`contact_id`,`type`,`occurred_at`,`id`);--> statement-breakpoint
CREATE TRIGGER `contact_communications_fence_insert` BEFORE INSERT ON `contact_communications` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `contact_communications_fence_update` BEFORE UPDATE ON `contact_communications` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `contact_communications_fence_delete` BEFORE DELETE ON `contact_communications` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;
