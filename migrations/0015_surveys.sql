CREATE TABLE `survey_responses` (
	`survey_id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`answers` text NOT NULL,
	`submitted_at` text NOT NULL,
	`ip` text,
	`user_agent` text,
	`sentiment` text,
	`sentiment_score` real,
	`sentiment_source` text,
	`analyzed_at` text,
	`testimonial_id` text
);
--> statement-breakpoint
CREATE INDEX `survey_responses_org_idx` ON `survey_responses` (`organization_id`,`submitted_at`);--> statement-breakpoint
CREATE TABLE `survey_templates` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`questions` text NOT NULL,
	`send_delay_hours` integer NOT NULL,
	`is_default` integer NOT NULL,
	`built_in` integer NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `survey_templates_org_created_idx` ON `survey_templates` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `survey_templates_one_default` ON `survey_templates` (`organization_id`) WHERE is_default = 1;--> statement-breakpoint
CREATE TABLE `surveys` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`template_id` text NOT NULL,
	`recipient_person_id` text NOT NULL,
	`agent_user_id` text NOT NULL,
	`deal_id` text,
	`channel` text NOT NULL,
	`trigger` text NOT NULL,
	`status` text NOT NULL,
	`access_token_hash` text NOT NULL,
	`pending_token` text,
	`send_at` text NOT NULL,
	`sent_at` text,
	`opened_at` text,
	`completed_at` text,
	`skipped_at` text,
	`expired_at` text,
	`expires_at` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `surveys_token_unique` ON `surveys` (`access_token_hash`);--> statement-breakpoint
CREATE UNIQUE INDEX `surveys_deal_won_unique` ON `surveys` (`organization_id`,`deal_id`) WHERE "trigger" = 'DEAL_WON';--> statement-breakpoint
CREATE INDEX `surveys_org_created_idx` ON `surveys` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `surveys_org_status_idx` ON `surveys` (`organization_id`,`status`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `surveys_org_agent_idx` ON `surveys` (`organization_id`,`agent_user_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `surveys_due_idx` ON `surveys` (`status`,`send_at`);--> statement-breakpoint
CREATE INDEX `surveys_expiry_idx` ON `surveys` (`status`,`expires_at`);