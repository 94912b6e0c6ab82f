-- Templates and the ways people sign (issue 45): templates with their public links and the codes a link's visitor
-- proves an e-mail with; a document's text-tag fields and its template; an envelope's source; a recipient signing
-- embedded or hosted in person; how each signing link reached its holder.
CREATE TABLE `template_link_codes` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`slug_hash` text NOT NULL,
	`email_hash` text NOT NULL,
	`code_hash` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`expires_at` text NOT NULL,
	`used_at` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `template_link_codes_lookup_idx` ON `template_link_codes` (`slug_hash`,`email_hash`,`created_at`);--> statement-breakpoint
CREATE INDEX `template_link_codes_expires_idx` ON `template_link_codes` (`expires_at`);--> statement-breakpoint
CREATE TABLE `template_links` (
	`slug_hash` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`template_id` text NOT NULL,
	`role` text NOT NULL,
	`recipients` text NOT NULL,
	`enabled` integer NOT NULL,
	`created_by` text,
	`created_at` text NOT NULL,
	`disabled_at` text
);
--> statement-breakpoint
CREATE INDEX `template_links_template_idx` ON `template_links` (`organization_id`,`template_id`);--> statement-breakpoint
CREATE TABLE `templates` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`name` text NOT NULL,
	`document_id` text NOT NULL,
	`title` text NOT NULL,
	`file_key` text NOT NULL,
	`sha256` text NOT NULL,
	`page_count` integer NOT NULL,
	`pages` text NOT NULL,
	`form_fields` text NOT NULL,
	`restrictions_removed` integer DEFAULT false NOT NULL,
	`roles` text NOT NULL,
	`fields` text NOT NULL,
	`created_by` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `templates_org_created_idx` ON `templates` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
ALTER TABLE `documents` ADD `fields` text;--> statement-breakpoint
ALTER TABLE `documents` ADD `tags_status` text;--> statement-breakpoint
ALTER TABLE `documents` ADD `template_id` text;--> statement-breakpoint
ALTER TABLE `documents` ADD `template_version` integer;--> statement-breakpoint
ALTER TABLE `envelope_signers` ADD `embedded` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `envelope_signers` ADD `host_user_id` text;--> statement-breakpoint
ALTER TABLE `envelopes` ADD `source` text DEFAULT 'api' NOT NULL;--> statement-breakpoint
ALTER TABLE `envelopes` ADD `template_id` text;--> statement-breakpoint
ALTER TABLE `signing_links` ADD `via` text DEFAULT 'email' NOT NULL;--> statement-breakpoint
-- Organization-scoped, so fenced during a shard move like every tenant table (0003).
CREATE TRIGGER `templates_fence_insert` BEFORE INSERT ON `templates` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `templates_fence_update` BEFORE UPDATE ON `templates` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `templates_fence_delete` BEFORE DELETE ON `templates` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
-- Organization-scoped, so fenced during a shard move like every tenant table (0003).
CREATE TRIGGER `template_links_fence_insert` BEFORE INSERT ON `template_links` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `template_links_fence_update` BEFORE UPDATE ON `template_links` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `template_links_fence_delete` BEFORE DELETE ON `template_links` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
-- Organization-scoped, so fenced during a shard move like every tenant table (0003).
CREATE TRIGGER `template_link_codes_fence_insert` BEFORE INSERT ON `template_link_codes` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `template_link_codes_fence_update` BEFORE UPDATE ON `template_link_codes` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `template_link_codes_fence_delete` BEFORE DELETE ON `template_link_codes` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;
