CREATE TABLE `agent_profiles` (
	`organization_id` text NOT NULL,
	`user_id` text NOT NULL,
	`slug` text NOT NULL,
	`status` text NOT NULL,
	`draft_config` text NOT NULL,
	`published_config` text,
	`published_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL,
	PRIMARY KEY(`organization_id`, `user_id`)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `agent_profiles_slug_unique` ON `agent_profiles` (`slug`);--> statement-breakpoint
CREATE TABLE `reputation_aggregates` (
	`organization_id` text NOT NULL,
	`agent_user_id` text NOT NULL,
	`total_reviews` integer DEFAULT 0 NOT NULL,
	`rating_sum` integer DEFAULT 0 NOT NULL,
	`average_rating` real,
	`rating1` integer DEFAULT 0 NOT NULL,
	`rating2` integer DEFAULT 0 NOT NULL,
	`rating3` integer DEFAULT 0 NOT NULL,
	`rating4` integer DEFAULT 0 NOT NULL,
	`rating5` integer DEFAULT 0 NOT NULL,
	`first_published_at` text,
	`nps_promoters` integer DEFAULT 0 NOT NULL,
	`nps_passives` integer DEFAULT 0 NOT NULL,
	`nps_detractors` integer DEFAULT 0 NOT NULL,
	`surveys_sent` integer DEFAULT 0 NOT NULL,
	`surveys_completed` integer DEFAULT 0 NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`organization_id`, `agent_user_id`)
);
--> statement-breakpoint
CREATE TABLE `testimonials` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`agent_user_id` text NOT NULL,
	`author_person_id` text,
	`deal_id` text,
	`source` text NOT NULL,
	`category` text NOT NULL,
	`rating` integer NOT NULL,
	`headline` text,
	`body` text NOT NULL,
	`display_name` text,
	`display_location` text,
	`display_photo_url` text,
	`permission_to_publish_name` integer NOT NULL,
	`permission_to_publish_location` integer NOT NULL,
	`permission_to_publish_photo` integer NOT NULL,
	`status` text NOT NULL,
	`visibility` text NOT NULL,
	`is_featured` integer NOT NULL,
	`sort_order` integer NOT NULL,
	`approved_by_user_id` text,
	`approved_at` text,
	`published_at` text,
	`rejected_at` text,
	`rejection_reason` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `testimonials_org_order_idx` ON `testimonials` (`organization_id`,`sort_order`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `testimonials_org_agent_status_idx` ON `testimonials` (`organization_id`,`agent_user_id`,`status`,`published_at`);