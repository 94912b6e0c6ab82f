CREATE TABLE `document_overages` (
	`document_id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`period` text NOT NULL,
	`position` integer NOT NULL,
	`included` integer NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `document_overages_org_period_idx` ON `document_overages` (`organization_id`,`period`);--> statement-breakpoint
CREATE TABLE `document_usage` (
	`organization_id` text NOT NULL,
	`period` text NOT NULL,
	`used` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`organization_id`, `period`)
);
--> statement-breakpoint
CREATE TABLE `documents` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`form_key` text NOT NULL,
	`status` text NOT NULL,
	`canonical` text NOT NULL,
	`sha256` text NOT NULL,
	`created_by` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `documents_org_created_idx` ON `documents` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `mail_outbox` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text,
	`to` text NOT NULL,
	`subject` text NOT NULL,
	`body` text NOT NULL,
	`sealed` integer NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `mail_outbox_to_idx` ON `mail_outbox` (`to`,`created_at`);--> statement-breakpoint
CREATE TABLE `envelope_audit` (
	`envelope_id` text NOT NULL,
	`seq` integer NOT NULL,
	`organization_id` text NOT NULL,
	`event` text NOT NULL,
	`signer_id` text,
	`at` text NOT NULL,
	`ip` text,
	`user_agent` text,
	`data` text,
	`prev_hash` text NOT NULL,
	`hash` text NOT NULL,
	PRIMARY KEY(`envelope_id`, `seq`)
);
--> statement-breakpoint
CREATE TABLE `envelope_signers` (
	`id` text PRIMARY KEY NOT NULL,
	`envelope_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`position` integer NOT NULL,
	`name` text NOT NULL,
	`email` text NOT NULL,
	`role` text NOT NULL,
	`status` text NOT NULL,
	`token_hash` text,
	`sent_at` text,
	`signed_at` text,
	`declined_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `envelope_signers_token_unique` ON `envelope_signers` (`token_hash`);--> statement-breakpoint
CREATE INDEX `envelope_signers_envelope_idx` ON `envelope_signers` (`envelope_id`,`position`);--> statement-breakpoint
CREATE TABLE `envelopes` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`document_id` text NOT NULL,
	`status` text NOT NULL,
	`mode` text NOT NULL,
	`expires_at` text,
	`completed_at` text,
	`ended_reason` text,
	`certificate_key` text,
	`created_by` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `envelopes_org_document_idx` ON `envelopes` (`organization_id`,`document_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `envelopes_status_expires_idx` ON `envelopes` (`status`,`expires_at`);--> statement-breakpoint
-- The audit trail is append-only: no route updates or deletes it, and neither may anything else.
CREATE TRIGGER `envelope_audit_no_update` BEFORE UPDATE ON `envelope_audit` BEGIN SELECT RAISE(ABORT, 'envelope_audit is append-only'); END;--> statement-breakpoint
CREATE TRIGGER `envelope_audit_no_delete` BEFORE DELETE ON `envelope_audit` BEGIN SELECT RAISE(ABORT, 'envelope_audit is append-only'); END;
