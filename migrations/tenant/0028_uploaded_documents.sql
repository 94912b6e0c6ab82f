ALTER TABLE `documents` ADD `source` text DEFAULT 'form' NOT NULL;--> statement-breakpoint
ALTER TABLE `documents` ADD `title` text;--> statement-breakpoint
ALTER TABLE `documents` ADD `file_key` text;--> statement-breakpoint
ALTER TABLE `documents` ADD `page_count` integer;--> statement-breakpoint
ALTER TABLE `documents` ADD `pages` text;--> statement-breakpoint
ALTER TABLE `documents` ADD `form_fields` text;--> statement-breakpoint
ALTER TABLE `documents` ADD `restrictions_removed` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `documents` ADD `text_status` text;--> statement-breakpoint
ALTER TABLE `envelope_signers` ADD `key` text;--> statement-breakpoint
ALTER TABLE `envelope_signers` ADD `kind` text DEFAULT 'signer' NOT NULL;--> statement-breakpoint
ALTER TABLE `envelope_signers` ADD `signing_order` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `envelope_signers` ADD `fields` text;--> statement-breakpoint
ALTER TABLE `envelope_signers` ADD `field_values` text;--> statement-breakpoint
-- A sequential envelope's signers act one order each, in signing order (issue 44): what `mode` said before orders existed.
UPDATE `envelope_signers` SET `signing_order` = `position` + 1 WHERE `envelope_id` IN (SELECT `id` FROM `envelopes` WHERE `mode` = 'sequential');
