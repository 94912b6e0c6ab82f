-- Issue 32: users have a role (owner | admin | agent) and say whether they take new leads. Every user before roles
-- existed is an owner: each was minted by `npm run token`, which makes owners.
ALTER TABLE `users` ADD `role` text DEFAULT 'agent' NOT NULL CHECK (`role` IN ('owner', 'admin', 'agent'));--> statement-breakpoint
ALTER TABLE `users` ADD `accepts_leads` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
UPDATE `users` SET `role` = 'owner';
