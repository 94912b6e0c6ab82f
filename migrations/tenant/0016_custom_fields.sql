-- Custom fields (issue 33, src/custom-fields, src/crm/custom-fields.ts): an organization's definitions, and the
-- values on the records themselves, a JSON object by key on contacts, deals and properties. The columns are added,
-- not the tables rebuilt: the search triggers of 0012 and the fences of 0003 hang on these tables. Lists filter and
-- sort on the values with json_extract over the organization's rows (README "Custom fields" says why and what it costs).
ALTER TABLE `contacts` ADD `custom_fields` text;--> statement-breakpoint
ALTER TABLE `deals` ADD `custom_fields` text;--> statement-breakpoint
ALTER TABLE `properties` ADD `custom_fields` text;--> statement-breakpoint
CREATE TABLE `custom_field_definitions` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`object` text NOT NULL,
	`key` text NOT NULL,
	`label` text NOT NULL,
	`type` text NOT NULL,
	`options` text,
	`created_at` text NOT NULL,
	`deleted_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `custom_field_definitions_org_object_key_unique` ON `custom_field_definitions` (`organization_id`,`object`,`key`);--> statement-breakpoint
CREATE INDEX `custom_field_definitions_org_created_idx` ON `custom_field_definitions` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
-- Organization-scoped, so fenced during a shard move like every tenant table (0003).
CREATE TRIGGER `custom_field_definitions_fence_insert` BEFORE INSERT ON `custom_field_definitions` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `custom_field_definitions_fence_update` BEFORE UPDATE ON `custom_field_definitions` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `custom_field_definitions_fence_delete` BEFORE DELETE ON `custom_field_definitions` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;
