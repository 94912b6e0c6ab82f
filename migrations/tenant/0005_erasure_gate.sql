ALTER TABLE `envelopes` ADD `erasing_at` text;--> statement-breakpoint
ALTER TABLE `erasures` ADD `state` text DEFAULT 'done' NOT NULL;--> statement-breakpoint
ALTER TABLE `erasures` ADD `subject` text;--> statement-breakpoint
ALTER TABLE `erasures` ADD `retained_counts` text;--> statement-breakpoint
ALTER TABLE `erasures` ADD `touched_at` text;--> statement-breakpoint
CREATE INDEX `erasures_pending_idx` ON `erasures` (`touched_at`) WHERE "erasures"."state" = 'pending';--> statement-breakpoint
-- A person's erasure (issue 29) deletes an envelope that never completed, audit trail included: the one gate besides
-- the cleanup of an organization that has left (0003). Only rows of an envelope already ended without completing
-- (declined, voided, expired) and marked `erasing_at` in the erasure's own batch may go; UPDATE stays refused always.
DROP TRIGGER `envelope_audit_no_delete`;--> statement-breakpoint
CREATE TRIGGER `envelope_audit_no_delete` BEFORE DELETE ON `envelope_audit` WHEN NOT EXISTS (SELECT 1 FROM `shard_fences` f WHERE f.`organization_id` = OLD.`organization_id` AND f.`clearing` = 1) AND NOT EXISTS (SELECT 1 FROM `envelopes` e WHERE e.`id` = OLD.`envelope_id` AND e.`organization_id` = OLD.`organization_id` AND e.`erasing_at` IS NOT NULL AND e.`status` IN ('declined', 'voided', 'expired')) BEGIN SELECT RAISE(ABORT, 'envelope_audit is append-only'); END;--> statement-breakpoint
-- A completed envelope is a signed record: it never leaves `completed` and is never marked for erasure, so its audit
-- trail can never pass the gate above.
CREATE TRIGGER `envelopes_completed_stays` BEFORE UPDATE OF `status` ON `envelopes` WHEN OLD.`status` = 'completed' AND NEW.`status` <> 'completed' BEGIN SELECT RAISE(ABORT, 'a completed envelope stays completed'); END;--> statement-breakpoint
CREATE TRIGGER `envelopes_completed_not_erased` BEFORE UPDATE OF `erasing_at` ON `envelopes` WHEN NEW.`erasing_at` IS NOT NULL AND NEW.`status` = 'completed' BEGIN SELECT RAISE(ABORT, 'a completed envelope is kept'); END;
