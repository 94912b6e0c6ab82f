CREATE TABLE `contact_facet_counts` (
	`organization_id` text NOT NULL,
	`type` text NOT NULL,
	`status` text NOT NULL,
	`source` text NOT NULL,
	`assigned_to` text NOT NULL,
	`total` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`organization_id`, `type`, `status`, `source`, `assigned_to`)
);
--> statement-breakpoint
-- The contacts already stored, counted once (contacts/facets.ts moves the counts in every write from now on).
INSERT INTO `contact_facet_counts` (`organization_id`, `type`, `status`, `source`, `assigned_to`, `total`)
SELECT `organization_id`, `type`, `status`, IFNULL(`source`, ''), IFNULL(`assigned_to`, ''), COUNT(*) FROM `contacts`
GROUP BY `organization_id`, `type`, `status`, IFNULL(`source`, ''), IFNULL(`assigned_to`, '');
