-- trash_rows was keyed by an AUTOINCREMENT seq, counted per database: a row of one shard had the key of another
-- shard's row, and a shard move (INSERT OR REPLACE on the key) replaced the other organization's kept row (issue 29).
-- Now keyed by the record's id (unique across shards) and the row's place among the record's rows, in the old order,
-- and carrying its organization, so a move finds every kept row by it, not through a trash entry that a restore or
-- purge may have removed meanwhile (a row found only through its parent was left behind on the shard it was copied to).
-- A row whose entry is gone was already unreachable (restore and purge go through the entry): it is not carried over.
-- A rebuild drops the table's triggers: the fence triggers of 0003 are made again, on the row's own organization.
CREATE TABLE `__new_trash_rows` (
	`organization_id` text NOT NULL,
	`record_id` text NOT NULL,
	`seq` integer NOT NULL,
	`table_name` text NOT NULL,
	`row` text NOT NULL,
	PRIMARY KEY(`record_id`, `seq`)
);
--> statement-breakpoint
INSERT INTO `__new_trash_rows`(`organization_id`, `record_id`, `seq`, `table_name`, `row`) SELECT e.`organization_id`, r.`record_id`, row_number() OVER (PARTITION BY r.`record_id` ORDER BY r.`seq`), r.`table_name`, r.`row` FROM `trash_rows` r JOIN `trash_entries` e ON e.`record_id` = r.`record_id`;--> statement-breakpoint
DROP TABLE `trash_rows`;--> statement-breakpoint
ALTER TABLE `__new_trash_rows` RENAME TO `trash_rows`;--> statement-breakpoint
CREATE INDEX `trash_rows_record_idx` ON `trash_rows` (`record_id`,`table_name`,`seq`);--> statement-breakpoint
CREATE INDEX `trash_rows_org_idx` ON `trash_rows` (`organization_id`,`record_id`,`seq`);--> statement-breakpoint
CREATE TRIGGER `trash_rows_fence_insert` BEFORE INSERT ON `trash_rows` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = NEW.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `trash_rows_fence_update` BEFORE UPDATE ON `trash_rows` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `trash_rows_fence_delete` BEFORE DELETE ON `trash_rows` WHEN EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 0) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;
