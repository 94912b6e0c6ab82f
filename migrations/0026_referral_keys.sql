CREATE TABLE `referral_keys` (
	`organization_id` text NOT NULL,
	`agent_user_id` text NOT NULL,
	`contact_hash` text NOT NULL,
	`referral_id` text NOT NULL,
	`expires_at` text NOT NULL,
	PRIMARY KEY(`organization_id`, `agent_user_id`, `contact_hash`)
);
