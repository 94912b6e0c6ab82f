-- Issue 33: an import's chunk writes its contacts' search terms itself (src/contacts/import-batch.ts), computed in JS
-- by src/lib/search-terms.ts, which the tokenizer of 0012 mirrors: folding 500 contacts' text through SQL cost two
-- thirds of a chunk's time. The chunk's batch (one transaction) inserts its organization here first and deletes it
-- last, so no other write ever sees the row; while it is there the contacts' insert and update triggers stand aside.
-- Deletes, and the replace of a row by its e-mail, still go through their triggers.
CREATE TABLE `search_suspended` (
	`organization_id` text PRIMARY KEY NOT NULL
) WITHOUT ROWID;
--> statement-breakpoint
DROP TRIGGER `contacts_search_insert`;--> statement-breakpoint
DROP TRIGGER `contacts_search_update`;--> statement-breakpoint
CREATE TRIGGER `contacts_search_insert` AFTER INSERT ON `contacts`
WHEN NOT EXISTS (SELECT 1 FROM `search_suspended` WHERE `organization_id` = NEW.`organization_id`) BEGIN
	INSERT INTO `search_input` VALUES (NEW.`organization_id`, 'contact', NEW.`id`, NEW.`first_name` || ' ' || NEW.`last_name` || ' ' || NEW.`email` || ' ' || NEW.`tags` || ' ' || ifnull(NEW.`notes`, ''), NEW.`phone`, NEW.`secondary_phone`);
END;--> statement-breakpoint
CREATE TRIGGER `contacts_search_update` AFTER UPDATE OF `first_name`, `last_name`, `email`, `notes`, `tags`, `phone`, `secondary_phone` ON `contacts`
WHEN NOT EXISTS (SELECT 1 FROM `search_suspended` WHERE `organization_id` = NEW.`organization_id`) AND (NEW.`first_name` IS NOT OLD.`first_name` OR NEW.`last_name` IS NOT OLD.`last_name` OR NEW.`email` IS NOT OLD.`email` OR NEW.`notes` IS NOT OLD.`notes` OR NEW.`tags` IS NOT OLD.`tags` OR NEW.`phone` IS NOT OLD.`phone` OR NEW.`secondary_phone` IS NOT OLD.`secondary_phone`) BEGIN
	INSERT INTO `search_input` VALUES (NEW.`organization_id`, 'contact', NEW.`id`, NEW.`first_name` || ' ' || NEW.`last_name` || ' ' || NEW.`email` || ' ' || NEW.`tags` || ' ' || ifnull(NEW.`notes`, ''), NEW.`phone`, NEW.`secondary_phone`);
END;
