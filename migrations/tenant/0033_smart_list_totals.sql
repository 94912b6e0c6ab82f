ALTER TABLE `list_totals` ADD `as_of` text;--> statement-breakpoint
CREATE INDEX `contacts_org_last_contacted_idx` ON `contacts` (`organization_id`,`last_contacted_at`,`id`);