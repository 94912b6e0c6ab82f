CREATE TABLE `contact_activities` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`contact_id` text NOT NULL,
	`type` text NOT NULL,
	`description` text,
	`scheduled_at` text,
	`metadata` text,
	`created_by` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `contact_activities_contact_idx` ON `contact_activities` (`organization_id`,`contact_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `contact_counters` (
	`organization_id` text PRIMARY KEY NOT NULL,
	`contacts_total` integer DEFAULT 0 NOT NULL,
	`contacts_version` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `contact_list_totals` (
	`organization_id` text NOT NULL,
	`filter_key` text NOT NULL,
	`version` integer NOT NULL,
	`total` integer NOT NULL,
	PRIMARY KEY(`organization_id`, `filter_key`)
);
--> statement-breakpoint
CREATE TABLE `contact_tags` (
	`contact_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`tag` text NOT NULL,
	PRIMARY KEY(`contact_id`, `tag`)
);
--> statement-breakpoint
CREATE INDEX `contact_tags_org_tag_idx` ON `contact_tags` (`organization_id`,`tag`,`contact_id`);--> statement-breakpoint
CREATE TABLE `contacts` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`first_name` text NOT NULL,
	`last_name` text NOT NULL,
	`email` text NOT NULL,
	`email_key` text NOT NULL,
	`phone` text,
	`secondary_phone` text,
	`address` text,
	`type` text NOT NULL,
	`status` text NOT NULL,
	`source` text,
	`lead_score` integer,
	`lead_score_rank` integer GENERATED ALWAYS AS (ifnull(lead_score, -1)) VIRTUAL,
	`lead_score_auto` integer DEFAULT false NOT NULL,
	`tags` text NOT NULL,
	`notes` text,
	`preferences` text,
	`assigned_to` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`last_contacted_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `contacts_org_email_unique` ON `contacts` (`organization_id`,`email_key`);--> statement-breakpoint
CREATE INDEX `contacts_org_created_idx` ON `contacts` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `contacts_org_updated_idx` ON `contacts` (`organization_id`,`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `contacts_org_last_name_idx` ON `contacts` (`organization_id`,"last_name" COLLATE NOCASE,`id`);--> statement-breakpoint
CREATE INDEX `contacts_org_lead_score_idx` ON `contacts` (`organization_id`,`lead_score_rank`,`id`);--> statement-breakpoint
CREATE INDEX `contacts_org_type_idx` ON `contacts` (`organization_id`,`type`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `contacts_org_status_idx` ON `contacts` (`organization_id`,`status`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `contacts_org_source_idx` ON `contacts` (`organization_id`,`source`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `contacts_org_assigned_idx` ON `contacts` (`organization_id`,`assigned_to`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `tags` (
	`organization_id` text NOT NULL,
	`name` text NOT NULL,
	`color` text NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`organization_id`, `name`)
);
