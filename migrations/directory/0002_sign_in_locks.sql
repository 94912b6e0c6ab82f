-- Issue 29: a cumulative cap on sign-in code guesses. One row per failed try (parallel tries cannot lose a count), and
-- the lock 20 failures in 24 hours start, per address (SHA-256 of the lower-cased e-mail; no address is kept).
CREATE TABLE `oauth_sign_in_failures` (
	`id` text PRIMARY KEY NOT NULL,
	`email_hash` text NOT NULL,
	`at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `oauth_sign_in_failures_email_idx` ON `oauth_sign_in_failures` (`email_hash`,`at`);--> statement-breakpoint
CREATE INDEX `oauth_sign_in_failures_at_idx` ON `oauth_sign_in_failures` (`at`);--> statement-breakpoint
CREATE TABLE `oauth_sign_in_locks` (
	`email_hash` text PRIMARY KEY NOT NULL,
	`locked_at` text NOT NULL,
	`locked_until` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `oauth_sign_in_locks_until_idx` ON `oauth_sign_in_locks` (`locked_until`);