CREATE TABLE `document_obligations` (
	`id` text PRIMARY KEY NOT NULL,
	`organization_id` text NOT NULL,
	`document_id` text NOT NULL,
	`deal_id` text,
	`type` text NOT NULL,
	`description` text,
	`due_date` text NOT NULL,
	`amount_cents` integer,
	`created_at` text NOT NULL,
	`synced_at` text NOT NULL,
	`sync_count` integer DEFAULT 0 NOT NULL,
	`sync_event_id` text,
	`overdue_noted_at` text
);
--> statement-breakpoint
CREATE INDEX `document_obligations_org_due_idx` ON `document_obligations` (`organization_id`,`due_date`,`id`);--> statement-breakpoint
CREATE INDEX `document_obligations_document_idx` ON `document_obligations` (`document_id`);--> statement-breakpoint
CREATE INDEX `document_obligations_overdue_idx` ON `document_obligations` (`due_date`,`id`) WHERE "document_obligations"."deal_id" IS NOT NULL AND "document_obligations"."overdue_noted_at" IS NULL;--> statement-breakpoint
ALTER TABLE `documents` ADD `deal_id` text;