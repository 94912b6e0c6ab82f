-- Merge (issue 33, src/contacts/merge.ts): a contact merged into another waits in the trash like a deleted one, with
-- the id of the contact it went into. A restore of it answers 409 merged_contact naming that contact, and an erasure
-- of that contact finds it by this index and erases it too (it is the same person).
ALTER TABLE `trash_entries` ADD `merged_into` text;--> statement-breakpoint
CREATE INDEX `trash_entries_merged_idx` ON `trash_entries` (`organization_id`,`merged_into`) WHERE "trash_entries"."merged_into" IS NOT NULL;
--> statement-breakpoint
-- Duplicates by name and zip code (src/contacts/duplicates.ts): an index on the key expression of src/db/contacts.ts
-- `NAME_ZIP_KEY_SQL` (the same text, so SQLite uses it), NULL for contacts without a zip code. The phones' keys have
-- their indexes already (0013).
CREATE INDEX `contacts_org_name_zip_idx` ON `contacts` (`organization_id`,CASE WHEN json_valid(address) AND trim(ifnull(json_extract(address, '$.zipCode'), '')) <> '' THEN lower(trim(first_name)) || '|' || lower(trim(last_name)) || '|' || upper(replace(json_extract(address, '$.zipCode'), ' ', '')) END);
