ALTER TABLE `oauth_clients` ADD `last_used_at` text;--> statement-breakpoint
CREATE INDEX `oauth_clients_last_used_idx` ON `oauth_clients` (`last_used_at`);--> statement-breakpoint
UPDATE `oauth_clients` SET `last_used_at` = `created_at` WHERE `last_used_at` IS NULL;
