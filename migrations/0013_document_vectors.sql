CREATE TABLE `document_vectors` (
	`organization_id` text NOT NULL,
	`id` text NOT NULL,
	`document_id` text NOT NULL,
	`chunk` integer NOT NULL,
	`vector` blob NOT NULL,
	`indexed_at` text NOT NULL,
	PRIMARY KEY(`organization_id`, `id`)
);
--> statement-breakpoint
CREATE INDEX `document_vectors_document_idx` ON `document_vectors` (`organization_id`,`document_id`,`chunk`);