-- Issue 33: an organization export's zip is deleted from R2 once its link has expired (src/exports/retention.ts, a
-- cron pass on every shard). The pass finds completed jobs past `expires_at`, and jobs left queued or running, through
-- this index, a bounded number a pass (src/db/exports.ts, organization_exports_due_idx).
CREATE INDEX `organization_exports_due_idx` ON `organization_exports` (`status`,`expires_at`);
