DROP INDEX `clickwrap_versions_agreement_idx`;--> statement-breakpoint
CREATE INDEX `clickwrap_versions_history_idx` ON `clickwrap_versions` (`agreement_id`,`current_since`,`version_hash`);