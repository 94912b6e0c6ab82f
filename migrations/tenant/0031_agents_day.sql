CREATE TABLE `appointment_attendees` (
	`appointment_id` text NOT NULL,
	`id` text NOT NULL,
	`organization_id` text NOT NULL,
	`user_id` text,
	`contact_id` text,
	`email` text,
	`name` text,
	`response` text DEFAULT 'needs_action' NOT NULL,
	`invited_sequence` integer,
	PRIMARY KEY(`appointment_id`, `id`)
);
--> statement-breakpoint
CREATE INDEX `appointment_attendees_org_user_idx` ON `appointment_attendees` (`organization_id`,`user_id`,`appointment_id`);--> statement-breakpoint
CREATE INDEX `appointment_attendees_org_contact_idx` ON `appointment_attendees` (`organization_id`,`contact_id`,`appointment_id`);--> statement-breakpoint
CREATE TABLE `appointments` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`type` text NOT NULL,
	`title` text,
	`starts_at` text NOT NULL,
	`ends_at` text NOT NULL,
	`time_zone` text NOT NULL,
	`location` text,
	`property_id` text,
	`notes` text,
	`outcome` text,
	`status` text DEFAULT 'scheduled' NOT NULL,
	`sequence` integer DEFAULT 0 NOT NULL,
	`created_by` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`cancelled_at` text,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `appointments_org_starts_idx` ON `appointments` (`organization_id`,`starts_at`,`id`);--> statement-breakpoint
CREATE INDEX `appointments_org_property_idx` ON `appointments` (`organization_id`,`property_id`,`starts_at`,`id`);--> statement-breakpoint
CREATE TABLE `calendar_feeds` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`user_id` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `calendar_feeds_org_user_unique` ON `calendar_feeds` (`organization_id`,`user_id`);--> statement-breakpoint
CREATE TABLE `tasks` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`title` text NOT NULL,
	`type` text DEFAULT 'other' NOT NULL,
	`notes` text,
	`due_at` text,
	`priority` text NOT NULL,
	`assigned_to` text,
	`contact_id` text,
	`deal_id` text,
	`property_id` text,
	`completed` integer DEFAULT false NOT NULL,
	`completed_at` text,
	`completed_by` text,
	`created_by` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL,
	`due_announced_at` text
);
--> statement-breakpoint
CREATE INDEX `tasks_org_deal_idx` ON `tasks` (`organization_id`,`deal_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_org_contact_idx` ON `tasks` (`organization_id`,`contact_id`,`completed`,`due_at`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_assignee_due_idx` ON `tasks` (`organization_id`,`assigned_to`,`completed`,`due_at`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_org_due_idx` ON `tasks` (`organization_id`,`completed`,`due_at`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_org_created_idx` ON `tasks` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_due_pass_idx` ON `tasks` (`due_at`) WHERE "tasks"."completed" = 0 AND "tasks"."due_announced_at" IS NULL AND "tasks"."due_at" IS NOT NULL;--> statement-breakpoint
CREATE TABLE `action_plans` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`name` text NOT NULL,
	`steps` text NOT NULL,
	`triggers` text NOT NULL,
	`created_by` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `action_plans_org_created_idx` ON `action_plans` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `plan_enrollments` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`plan_id` text NOT NULL,
	`contact_id` text NOT NULL,
	`status` text NOT NULL,
	`steps` text NOT NULL,
	`next_step` integer DEFAULT 0 NOT NULL,
	`next_run_at` text,
	`enrolled_via` text NOT NULL,
	`enrolled_by` text,
	`enrolled_at` text NOT NULL,
	`paused_at` text,
	`pause_reason` text,
	`ended_at` text,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `plan_enrollments_live_unique` ON `plan_enrollments` (`organization_id`,`plan_id`,`contact_id`) WHERE "plan_enrollments"."status" IN ('active', 'paused');--> statement-breakpoint
CREATE INDEX `plan_enrollments_org_plan_idx` ON `plan_enrollments` (`organization_id`,`plan_id`,`enrolled_at`,`id`);--> statement-breakpoint
CREATE INDEX `plan_enrollments_org_contact_idx` ON `plan_enrollments` (`organization_id`,`contact_id`,`status`);--> statement-breakpoint
CREATE INDEX `plan_enrollments_due_idx` ON `plan_enrollments` (`next_run_at`) WHERE "plan_enrollments"."status" = 'active' AND "plan_enrollments"."next_run_at" IS NOT NULL;--> statement-breakpoint
CREATE TABLE `plan_step_runs` (
	`enrollment_id` text NOT NULL,
	`step` integer NOT NULL,
	`organization_id` text NOT NULL,
	`type` text NOT NULL,
	`state` text NOT NULL,
	`due_at` text NOT NULL,
	`started_at` text NOT NULL,
	`finished_at` text,
	`attempts` integer DEFAULT 1 NOT NULL,
	`outcome` text,
	PRIMARY KEY(`enrollment_id`, `step`)
);
--> statement-breakpoint
CREATE INDEX `plan_step_runs_org_idx` ON `plan_step_runs` (`organization_id`,`enrollment_id`);--> statement-breakpoint
CREATE TABLE `smart_list_members` (
	`list_id` text NOT NULL,
	`contact_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`entered_at` text NOT NULL,
	PRIMARY KEY(`list_id`, `contact_id`)
);
--> statement-breakpoint
CREATE INDEX `smart_list_members_org_contact_idx` ON `smart_list_members` (`organization_id`,`contact_id`);--> statement-breakpoint
CREATE TABLE `smart_lists` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`name` text NOT NULL,
	`query` text NOT NULL,
	`created_by` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `smart_lists_org_created_idx` ON `smart_lists` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `contact_routing` (
	`contact_id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`state` text NOT NULL,
	`offered_to` text,
	`offer_expires_at` text,
	`fallback` text,
	`speed_due_at` text,
	`speed_reassign_to` text,
	`trail` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `contact_routing_org_idx` ON `contact_routing` (`organization_id`,`state`);--> statement-breakpoint
CREATE INDEX `contact_routing_offer_due_idx` ON `contact_routing` (`offer_expires_at`) WHERE "contact_routing"."state" = 'offered';--> statement-breakpoint
CREATE INDEX `contact_routing_speed_due_idx` ON `contact_routing` (`speed_due_at`) WHERE "contact_routing"."speed_due_at" IS NOT NULL;--> statement-breakpoint
CREATE TABLE `pond_members` (
	`pond_id` text NOT NULL,
	`user_id` text NOT NULL,
	`organization_id` text NOT NULL,
	PRIMARY KEY(`pond_id`, `user_id`)
);
--> statement-breakpoint
CREATE INDEX `pond_members_org_user_idx` ON `pond_members` (`organization_id`,`user_id`);--> statement-breakpoint
CREATE TABLE `ponds` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`name` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `ponds_org_created_idx` ON `ponds` (`organization_id`,`created_at`,`id`);--> statement-breakpoint
ALTER TABLE `contacts` ADD `pond_id` text;--> statement-breakpoint
CREATE INDEX `contacts_org_pond_idx` ON `contacts` (`organization_id`,`pond_id`,`created_at`,`id`) WHERE "contacts"."pond_id" IS NOT NULL;
-- Organization-scoped, so fenced during a shard move like every tenant table (0003).
CREATE TRIGGER `tasks_fence_insert` BEFORE INSERT ON `tasks` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `tasks_fence_update` BEFORE UPDATE ON `tasks` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `tasks_fence_delete` BEFORE DELETE ON `tasks` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
-- Organization-scoped, so fenced during a shard move like every tenant table (0003).
CREATE TRIGGER `appointments_fence_insert` BEFORE INSERT ON `appointments` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `appointments_fence_update` BEFORE UPDATE ON `appointments` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `appointments_fence_delete` BEFORE DELETE ON `appointments` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
-- Organization-scoped, so fenced during a shard move like every tenant table (0003).
CREATE TRIGGER `appointment_attendees_fence_insert` BEFORE INSERT ON `appointment_attendees` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `appointment_attendees_fence_update` BEFORE UPDATE ON `appointment_attendees` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `appointment_attendees_fence_delete` BEFORE DELETE ON `appointment_attendees` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
-- Organization-scoped, so fenced during a shard move like every tenant table (0003).
CREATE TRIGGER `calendar_feeds_fence_insert` BEFORE INSERT ON `calendar_feeds` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `calendar_feeds_fence_update` BEFORE UPDATE ON `calendar_feeds` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `calendar_feeds_fence_delete` BEFORE DELETE ON `calendar_feeds` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
-- Organization-scoped, so fenced during a shard move like every tenant table (0003).
CREATE TRIGGER `action_plans_fence_insert` BEFORE INSERT ON `action_plans` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `action_plans_fence_update` BEFORE UPDATE ON `action_plans` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `action_plans_fence_delete` BEFORE DELETE ON `action_plans` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
-- Organization-scoped, so fenced during a shard move like every tenant table (0003).
CREATE TRIGGER `plan_enrollments_fence_insert` BEFORE INSERT ON `plan_enrollments` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `plan_enrollments_fence_update` BEFORE UPDATE ON `plan_enrollments` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `plan_enrollments_fence_delete` BEFORE DELETE ON `plan_enrollments` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
-- Organization-scoped, so fenced during a shard move like every tenant table (0003).
CREATE TRIGGER `plan_step_runs_fence_insert` BEFORE INSERT ON `plan_step_runs` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `plan_step_runs_fence_update` BEFORE UPDATE ON `plan_step_runs` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `plan_step_runs_fence_delete` BEFORE DELETE ON `plan_step_runs` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
-- Organization-scoped, so fenced during a shard move like every tenant table (0003).
CREATE TRIGGER `smart_lists_fence_insert` BEFORE INSERT ON `smart_lists` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `smart_lists_fence_update` BEFORE UPDATE ON `smart_lists` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `smart_lists_fence_delete` BEFORE DELETE ON `smart_lists` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
-- Organization-scoped, so fenced during a shard move like every tenant table (0003).
CREATE TRIGGER `smart_list_members_fence_insert` BEFORE INSERT ON `smart_list_members` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `smart_list_members_fence_update` BEFORE UPDATE ON `smart_list_members` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `smart_list_members_fence_delete` BEFORE DELETE ON `smart_list_members` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
-- Organization-scoped, so fenced during a shard move like every tenant table (0003).
CREATE TRIGGER `ponds_fence_insert` BEFORE INSERT ON `ponds` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `ponds_fence_update` BEFORE UPDATE ON `ponds` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `ponds_fence_delete` BEFORE DELETE ON `ponds` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
-- Organization-scoped, so fenced during a shard move like every tenant table (0003).
CREATE TRIGGER `pond_members_fence_insert` BEFORE INSERT ON `pond_members` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `pond_members_fence_update` BEFORE UPDATE ON `pond_members` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `pond_members_fence_delete` BEFORE DELETE ON `pond_members` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
-- Organization-scoped, so fenced during a shard move like every tenant table (0003).
CREATE TRIGGER `contact_routing_fence_insert` BEFORE INSERT ON `contact_routing` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `contact_routing_fence_update` BEFORE UPDATE ON `contact_routing` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `contact_routing_fence_delete` BEFORE DELETE ON `contact_routing` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
-- The deal tasks become tasks with a deal (issue 46): the same rows, `description` as `notes`, `due_date` as `due_at`.
-- A task already past due when this runs is not announced (task.due) as if it had just fallen due.
INSERT INTO `tasks` (`id`, `organization_id`, `title`, `type`, `notes`, `due_at`, `priority`, `assigned_to`, `deal_id`, `completed`, `completed_at`, `created_at`, `updated_at`, `version`, `due_announced_at`)
SELECT `id`, `organization_id`, `title`, 'other', `description`, `due_date`, `priority`, `assigned_to`, `deal_id`, `completed`, `completed_at`, `created_at`, coalesce(`completed_at`, `created_at`), 1,
  CASE WHEN `due_date` IS NOT NULL AND `due_date` < strftime('%Y-%m-%dT%H:%M:%fZ', 'now') THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END
FROM `deal_tasks`;--> statement-breakpoint
-- And the deal tasks kept in the trash with their deals, so a restore writes them back as tasks.
UPDATE `trash_rows` SET `table_name` = 'tasks', `row` = json_set(json_remove(`row`, '$.description', '$.dueDate'),
  '$.notes', json_extract(`row`, '$.description'), '$.dueAt', json_extract(`row`, '$.dueDate'), '$.type', 'other',
  '$.contactId', NULL, '$.propertyId', NULL, '$.completedBy', NULL, '$.createdBy', NULL,
  '$.updatedAt', coalesce(json_extract(`row`, '$.completedAt'), json_extract(`row`, '$.createdAt')), '$.version', 1,
  '$.dueAnnouncedAt', json_extract(`row`, '$.createdAt'))
WHERE `table_name` = 'deal_tasks';
