-- Merge (issue 33, src/contacts/merge.ts): a contact merged into another waits in the trash like a deleted one, with
-- the id of the contact it went into. A restore of it answers 409 merged_contact naming that contact, and an erasure
-- of that contact finds it by this index and erases it too (it is the same person).
ALTER TABLE `trash_entries` ADD `merged_into` text;--> statement-breakpoint
CREATE INDEX `trash_entries_merged_idx` ON `trash_entries` (`organization_id`,`merged_into`) WHERE "trash_entries"."merged_into" IS NOT NULL;
