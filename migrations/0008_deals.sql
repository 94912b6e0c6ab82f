CREATE TABLE `deal_activities` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`deal_id` text NOT NULL,
	`type` text NOT NULL,
	`description` text,
	`user_id` text,
	`metadata` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `deal_activities_deal_idx` ON `deal_activities` (`organization_id`,`deal_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `deal_documents` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`deal_id` text NOT NULL,
	`name` text NOT NULL,
	`type` text NOT NULL,
	`stage` text,
	`key` text NOT NULL,
	`size` integer NOT NULL,
	`mime_type` text NOT NULL,
	`sha256` text NOT NULL,
	`signed_at` text,
	`uploaded_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `deal_documents_deal_idx` ON `deal_documents` (`organization_id`,`deal_id`,`uploaded_at`,`id`);--> statement-breakpoint
CREATE TABLE `deal_stage_changes` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`deal_id` text NOT NULL,
	`from_stage` text,
	`to_stage` text NOT NULL,
	`at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `deal_stage_changes_org_to_idx` ON `deal_stage_changes` (`organization_id`,`to_stage`,`at`);--> statement-breakpoint
CREATE INDEX `deal_stage_changes_deal_idx` ON `deal_stage_changes` (`deal_id`,`at`);--> statement-breakpoint
CREATE TABLE `deal_stage_stats` (
	`organization_id` text NOT NULL,
	`stage` text NOT NULL,
	`count` integer DEFAULT 0 NOT NULL,
	`value` real DEFAULT 0 NOT NULL,
	`probability_sum` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`organization_id`, `stage`)
);
--> statement-breakpoint
CREATE TABLE `deal_tasks` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`deal_id` text NOT NULL,
	`title` text NOT NULL,
	`description` text,
	`due_date` text,
	`priority` text NOT NULL,
	`assigned_to` text,
	`completed` integer DEFAULT false NOT NULL,
	`completed_at` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `deal_tasks_deal_idx` ON `deal_tasks` (`organization_id`,`deal_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `deals` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`title` text NOT NULL,
	`description` text,
	`type` text NOT NULL,
	`stage` text NOT NULL,
	`status` text NOT NULL,
	`amount` real NOT NULL,
	`commission` text,
	`contact_id` text NOT NULL,
	`property_id` text,
	`assigned_to` text,
	`team_members` text NOT NULL,
	`timeline` text,
	`closing_date` text DEFAULT '' NOT NULL,
	`probability` integer NOT NULL,
	`source` text,
	`notes` text,
	`tags` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`last_activity_at` text NOT NULL,
	`closed_at` text,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `deals_org_created_idx` ON `deals` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `deals_org_updated_idx` ON `deals` (`organization_id`,`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `deals_org_amount_idx` ON `deals` (`organization_id`,`amount`,`id`);--> statement-breakpoint
CREATE INDEX `deals_org_closing_idx` ON `deals` (`organization_id`,`closing_date`,`id`);--> statement-breakpoint
CREATE INDEX `deals_org_probability_idx` ON `deals` (`organization_id`,`probability`,`id`);--> statement-breakpoint
CREATE INDEX `deals_org_stage_idx` ON `deals` (`organization_id`,`stage`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `deals_org_status_idx` ON `deals` (`organization_id`,`status`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `deals_org_type_idx` ON `deals` (`organization_id`,`type`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `deals_org_assigned_idx` ON `deals` (`organization_id`,`assigned_to`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `deals_org_contact_idx` ON `deals` (`organization_id`,`contact_id`,`created_at`,`id`);