-- Issue 32: obligation.due_soon and obligation.overdue are emitted once per obligation and due date
-- (src/documents/obligation-notices.ts); these marks are set in the batch that stages each event. The table is
-- fenced already (0003), and its rows move and are erased with their document as before.
ALTER TABLE `document_obligations` ADD `due_soon_event_at` text;--> statement-breakpoint
ALTER TABLE `document_obligations` ADD `overdue_event_at` text;--> statement-breakpoint
CREATE INDEX `document_obligations_due_soon_event_idx` ON `document_obligations` (`due_date`,`id`) WHERE "document_obligations"."due_soon_event_at" IS NULL;--> statement-breakpoint
CREATE INDEX `document_obligations_overdue_event_idx` ON `document_obligations` (`due_date`,`id`) WHERE "document_obligations"."overdue_event_at" IS NULL;--> statement-breakpoint
-- Obligations already overdue when this lands were overdue before any subscriber could ask for the event: marked, so
-- the first pass does not send a flood of stale notices. Those due within the week still get theirs.
UPDATE `document_obligations` SET `overdue_event_at` = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), `due_soon_event_at` = coalesce(`due_soon_event_at`, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) WHERE `due_date` < date('now');
