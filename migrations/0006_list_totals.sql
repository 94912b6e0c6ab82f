CREATE TABLE `list_totals` (
	`organization_id` text NOT NULL,
	`resource` text NOT NULL,
	`filter_key` text NOT NULL,
	`version` integer NOT NULL,
	`total` integer NOT NULL,
	PRIMARY KEY(`organization_id`, `resource`, `filter_key`)
);
--> statement-breakpoint
CREATE TABLE `resource_counters` (
	`organization_id` text NOT NULL,
	`resource` text NOT NULL,
	`total` integer DEFAULT 0 NOT NULL,
	`version` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`organization_id`, `resource`)
);
--> statement-breakpoint
-- The contacts' own counters become the first resource of the shared ones (crm/list-totals.ts).
INSERT INTO `resource_counters` (`organization_id`, `resource`, `total`, `version`) SELECT `organization_id`, 'contacts', `contacts_total`, `contacts_version` FROM `contact_counters`;--> statement-breakpoint
INSERT INTO `list_totals` (`organization_id`, `resource`, `filter_key`, `version`, `total`) SELECT `organization_id`, 'contacts', `filter_key`, `version`, `total` FROM `contact_list_totals`;--> statement-breakpoint
DROP TABLE `contact_counters`;--> statement-breakpoint
DROP TABLE `contact_list_totals`;