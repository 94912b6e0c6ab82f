CREATE TABLE `clickwrap_acceptances` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`agreement_id` text NOT NULL,
	`version_hash` text NOT NULL,
	`subject_ref` text,
	`accepted_at` text NOT NULL,
	`ip` text,
	`user_agent` text
);
--> statement-breakpoint
CREATE INDEX `clickwrap_acceptances_agreement_idx` ON `clickwrap_acceptances` (`organization_id`,`agreement_id`,`accepted_at`,`id`);--> statement-breakpoint
CREATE INDEX `clickwrap_acceptances_subject_idx` ON `clickwrap_acceptances` (`organization_id`,`agreement_id`,`subject_ref`,`accepted_at`);--> statement-breakpoint
CREATE TABLE `clickwrap_agreements` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`key` text NOT NULL,
	`title` text NOT NULL,
	`version_hash` text NOT NULL,
	`active` integer DEFAULT true NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `clickwrap_agreements_org_key_unique` ON `clickwrap_agreements` (`organization_id`,`key`);--> statement-breakpoint
CREATE INDEX `clickwrap_agreements_org_created_idx` ON `clickwrap_agreements` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `clickwrap_versions` (
	`agreement_id` text NOT NULL,
	`version_hash` text NOT NULL,
	`organization_id` text NOT NULL,
	`title` text NOT NULL,
	`body` text NOT NULL,
	`published_at` text NOT NULL,
	`current_since` text NOT NULL,
	PRIMARY KEY(`agreement_id`, `version_hash`)
);
--> statement-breakpoint
CREATE INDEX `clickwrap_versions_agreement_idx` ON `clickwrap_versions` (`agreement_id`,`published_at`);--> statement-breakpoint
CREATE TRIGGER `clickwrap_acceptances_no_update` BEFORE UPDATE ON `clickwrap_acceptances` BEGIN SELECT RAISE(ABORT, 'clickwrap acceptances are immutable'); END;
--> statement-breakpoint
CREATE TRIGGER `clickwrap_acceptances_no_delete` BEFORE DELETE ON `clickwrap_acceptances` BEGIN SELECT RAISE(ABORT, 'clickwrap acceptances are immutable'); END;
