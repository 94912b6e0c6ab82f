CREATE TABLE `deal_created_rollups` (
	`organization_id` text NOT NULL,
	`type` text NOT NULL,
	`assigned_to` text NOT NULL,
	`level` integer NOT NULL,
	`bucket` integer NOT NULL,
	`n` integer DEFAULT 0 NOT NULL,
	`value` real DEFAULT 0 NOT NULL,
	PRIMARY KEY(`organization_id`, `type`, `assigned_to`, `level`, `bucket`)
);
--> statement-breakpoint
CREATE TABLE `deal_decided_rollups` (
	`organization_id` text NOT NULL,
	`type` text NOT NULL,
	`level` integer NOT NULL,
	`bucket` integer NOT NULL,
	`stage` text NOT NULL,
	`assigned_to` text NOT NULL,
	`n` integer DEFAULT 0 NOT NULL,
	`value` real DEFAULT 0 NOT NULL,
	`days` real DEFAULT 0 NOT NULL,
	PRIMARY KEY(`organization_id`, `type`, `level`, `bucket`, `stage`, `assigned_to`)
);
--> statement-breakpoint
-- The deals already stored, rolled up once (src/deals/rollups.ts backfillRollupsSql; every deal write moves them from now on).
INSERT INTO deal_created_rollups (organization_id, type, assigned_to, level, bucket, n, value)
WITH RECURSIVE levels(l) AS (SELECT 0 UNION ALL SELECT l + 1 FROM levels WHERE l < 8),
d AS (SELECT organization_id, type, IFNULL(assigned_to, '') AS agent, amount, CAST(julianday(substr(created_at, 1, 10)) - 2440587.5 AS INTEGER) AS day FROM deals WHERE 1),
cube AS (SELECT organization_id, type, agent, amount, day FROM d UNION ALL SELECT organization_id, '*', agent, amount, day FROM d
         UNION ALL SELECT organization_id, type, '*', amount, day FROM d UNION ALL SELECT organization_id, '*', '*', amount, day FROM d)
SELECT organization_id, type, agent, l, day >> l, COUNT(*), SUM(amount) FROM cube, levels WHERE true GROUP BY organization_id, type, agent, l, day >> l;--> statement-breakpoint
INSERT INTO deal_decided_rollups (organization_id, type, level, bucket, stage, assigned_to, n, value, days)
WITH RECURSIVE levels(l) AS (SELECT 0 UNION ALL SELECT l + 1 FROM levels WHERE l < 8),
d AS (SELECT organization_id, type, stage, IFNULL(assigned_to, '') AS agent, amount, julianday(decided_at) - julianday(created_at) AS days,
             CAST(julianday(substr(decided_at, 1, 10)) - 2440587.5 AS INTEGER) AS day FROM deals WHERE decided_at IS NOT NULL AND 1),
cube AS (SELECT organization_id, type, stage, agent, amount, days, day FROM d UNION ALL SELECT organization_id, '*', stage, agent, amount, days, day FROM d)
SELECT organization_id, type, l, day >> l, stage, agent, COUNT(*), SUM(amount), SUM(days) FROM cube, levels WHERE true
GROUP BY organization_id, type, l, day >> l, stage, agent;
