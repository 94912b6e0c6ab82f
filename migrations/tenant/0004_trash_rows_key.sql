-- trash_rows was keyed by an AUTOINCREMENT seq, counted per database: a row of one shard had the key of another
-- shard's row, and a shard move (INSERT OR REPLACE on the key) replaced the other organization's kept row (issue 29).
-- Now keyed by the record's id (unique across shards) and the row's place among the record's rows, in the old order.
-- A rebuild drops the table's triggers: the fence triggers of 0003 are made again, as they were, with the index.
CREATE TABLE `__new_trash_rows` (
	`record_id` text NOT NULL,
	`seq` integer NOT NULL,
	`table_name` text NOT NULL,
	`row` text NOT NULL,
	PRIMARY KEY(`record_id`, `seq`)
);
--> statement-breakpoint
INSERT INTO `__new_trash_rows`(`record_id`, `seq`, `table_name`, `row`) SELECT `record_id`, row_number() OVER (PARTITION BY `record_id` ORDER BY `seq`), `table_name`, `row` FROM `trash_rows`;--> statement-breakpoint
DROP TABLE `trash_rows`;--> statement-breakpoint
ALTER TABLE `__new_trash_rows` RENAME TO `trash_rows`;--> statement-breakpoint
CREATE INDEX `trash_rows_record_idx` ON `trash_rows` (`record_id`,`table_name`,`seq`);--> statement-breakpoint
CREATE TRIGGER `trash_rows_fence_insert` BEFORE INSERT ON `trash_rows` WHEN EXISTS (SELECT 1 FROM `trash_entries` p JOIN `shard_fences` f ON f.`organization_id` = p.`organization_id` WHERE p.`record_id` = NEW.`record_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `trash_rows_fence_update` BEFORE UPDATE ON `trash_rows` WHEN EXISTS (SELECT 1 FROM `trash_entries` p JOIN `shard_fences` f ON f.`organization_id` = p.`organization_id` WHERE p.`record_id` = OLD.`record_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;--> statement-breakpoint
CREATE TRIGGER `trash_rows_fence_delete` BEFORE DELETE ON `trash_rows` WHEN EXISTS (SELECT 1 FROM `trash_entries` p JOIN `shard_fences` f ON f.`organization_id` = p.`organization_id` AND f.`clearing` = 0 WHERE p.`record_id` = OLD.`record_id`) BEGIN SELECT RAISE(ABORT, 'organization_moving'); END;
