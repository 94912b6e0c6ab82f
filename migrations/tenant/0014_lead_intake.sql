-- Lead intake (issue 33, src/leads/): the first answer per (organization, source, sourceEventId), so a lead sent
-- again answers the same without a second contact (written in the batch of the change it reports); and round-robin
-- routing's turn, moved in the batch of each contact it assigns, guarded on the turn read. Both organization-scoped:
-- moved with their organization and fenced during a move like every such table (0003).
CREATE TABLE `lead_intakes` (
	`organization_id` text NOT NULL,
	`source` text NOT NULL,
	`source_event_id` text NOT NULL,
	`contact_id` text NOT NULL,
	`status` integer NOT NULL,
	`answer` text NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`organization_id`, `source`, `source_event_id`)
);
--> statement-breakpoint
CREATE INDEX `lead_intakes_contact_idx` ON `lead_intakes` (`organization_id`,`contact_id`);--> statement-breakpoint
CREATE TABLE `lead_routing_cursors` (
	`organization_id` text PRIMARY KEY NOT NULL,
	`last_user_id` text,
	`turn` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TRIGGER `lead_intakes_fence_insert` BEFORE INSERT ON `lead_intakes` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `lead_intakes_fence_update` BEFORE UPDATE ON `lead_intakes` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `lead_intakes_fence_delete` BEFORE DELETE ON `lead_intakes` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `lead_routing_cursors_fence_insert` BEFORE INSERT ON `lead_routing_cursors` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `lead_routing_cursors_fence_update` BEFORE UPDATE ON `lead_routing_cursors` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `lead_routing_cursors_fence_delete` BEFORE DELETE ON `lead_routing_cursors` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;
