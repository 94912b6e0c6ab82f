CREATE TABLE `signature_settings` (
	`organization_id` text PRIMARY KEY NOT NULL,
	`signer_verification` text DEFAULT 'attested' NOT NULL,
	`reminders` text,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `signing_links` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`envelope_id` text NOT NULL,
	`signer_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `signing_links_envelope_idx` ON `signing_links` (`envelope_id`);--> statement-breakpoint
-- Live links move to signing_links (a signer may now hold several: the first mail's and each reminder's).
INSERT INTO `signing_links` (`token_hash`, `envelope_id`, `signer_id`, `organization_id`, `created_at`)
  SELECT `token_hash`, `envelope_id`, `id`, `organization_id`, COALESCE(`sent_at`, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) FROM `envelope_signers` WHERE `token_hash` IS NOT NULL;--> statement-breakpoint
DROP INDEX `envelope_signers_token_unique`;--> statement-breakpoint
ALTER TABLE `envelope_signers` ADD `verification` text;--> statement-breakpoint
ALTER TABLE `envelope_signers` ADD `remind_at` text;--> statement-breakpoint
CREATE INDEX `envelope_signers_remind_idx` ON `envelope_signers` (`remind_at`);--> statement-breakpoint
ALTER TABLE `envelope_signers` DROP COLUMN `token_hash`;--> statement-breakpoint
ALTER TABLE `envelopes` ADD `signer_verification` text DEFAULT 'attested' NOT NULL;--> statement-breakpoint
ALTER TABLE `envelopes` ADD `document_key` text;--> statement-breakpoint
ALTER TABLE `envelopes` ADD `document_title` text;--> statement-breakpoint
ALTER TABLE `envelopes` ADD `document_sha256` text;--> statement-breakpoint
ALTER TABLE `envelopes` ADD `reminders` text;--> statement-breakpoint
ALTER TABLE `envelopes` ADD `expiry_notice_at` text;--> statement-breakpoint
ALTER TABLE `envelopes` ADD `sealed_key` text;--> statement-breakpoint
ALTER TABLE `envelopes` ADD `sealed_sha256` text;--> statement-breakpoint
ALTER TABLE `envelopes` ADD `chain_seal` text;--> statement-breakpoint
CREATE INDEX `envelopes_expiry_notice_idx` ON `envelopes` (`expiry_notice_at`);--> statement-breakpoint
CREATE INDEX `envelopes_sealed_sha256_idx` ON `envelopes` (`sealed_sha256`);