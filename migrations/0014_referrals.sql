CREATE TABLE `referrals` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`agent_user_id` text NOT NULL,
	`referrer_person_id` text,
	`channel` text NOT NULL,
	`status` text NOT NULL,
	`referred_name` text NOT NULL,
	`referred_contact` text,
	`referred_email_key` text,
	`notes` text,
	`reward_type` text,
	`reward_status` text,
	`reward_value` real,
	`lead_contact_id` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `referrals_org_created_idx` ON `referrals` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `referrals_org_status_idx` ON `referrals` (`organization_id`,`status`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `referrals_org_agent_idx` ON `referrals` (`organization_id`,`agent_user_id`,`created_at`,`id`);